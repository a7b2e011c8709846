//go:build !linux

// Command uringprobe measures FUSE over io_uring against classic /dev/fuse; it runs on Linux
// only.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "uringprobe: FUSE over io_uring is Linux only")
	os.Exit(1)
}

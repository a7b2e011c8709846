//go:build !linux || !(amd64 || arm64)

// Command uringprobe measures FUSE over io_uring against classic /dev/fuse; it runs on Linux
// only, on amd64 and arm64 (it lays out the kernel's structures in little-endian 64-bit form).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "uringprobe: runs on Linux on amd64 and arm64 only")
	os.Exit(1)
}

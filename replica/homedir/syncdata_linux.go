//go:build linux

package homedir

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes the data of the files at paths durable. On Linux one syncfs(2) of the file
// system that holds them does it for all at once (they are under one home, on one file
// system), where an fsync each would wait for the disk once a file.
func syncData(paths []string) error {
	f, err := os.Open(paths[0])
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

// syncPlaced makes files already in place durable with their names. One syncfs(2) covers the
// renames that put them there too.
func syncPlaced(paths []string) error { return syncData(paths) }

package main

import (
	"errors"
	"os"
	"syscall"
)

// deadMount tells whether dir holds a dead mount, and why ("" when it does not): on macOS,
// by stat, which macFUSE answers with ENOTCONN once the mount's process is gone.
func deadMount(dir string) (why string, conn string) {
	if _, err := os.Stat(dir); errors.Is(err, syscall.ENOTCONN) {
		return "transport endpoint is not connected", ""
	}
	return "", ""
}

// clearDeadMount detaches the dead mount.
func clearDeadMount(dir, conn string) error {
	out, err := fuseUnmountLazy(dir)
	if err != nil {
		return errors.New(string(out))
	}
	return nil
}

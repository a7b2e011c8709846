package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// macOS: macFUSE mounts are unmounted with umount, listed by getfsstat; there is no /proc to
// name the holders, so the message names lsof.

const mountsTable = "mount"

func fuseUnmount(dir string) (busy bool, err error) {
	out, err := exec.Command("umount", dir).CombinedOutput()
	if err == nil {
		return false, nil
	}
	msg := oneLine(string(out))
	return strings.Contains(strings.ToLower(msg), "busy"), fmt.Errorf("umount %s: %s", dir, msg)
}

func fuseUnmountLazy(dir string) ([]byte, error) {
	return exec.Command("umount", "-f", dir).CombinedOutput()
}

func lazyUnmountHint(dir string) string { return "umount -f " + dir }

// isKintfsMount reports whether dir is the mount point of a macFUSE mount.
func isKintfsMount(dir string) bool {
	n, err := unix.Getfsstat(nil, unix.MNT_NOWAIT)
	if err != nil {
		return true // cannot tell: let umount say
	}
	stats := make([]unix.Statfs_t, n)
	if n, err = unix.Getfsstat(stats, unix.MNT_NOWAIT); err != nil {
		return true
	}
	for _, st := range stats[:n] {
		on := string(bytes.TrimRight(st.Mntonname[:], "\x00"))
		kind := string(bytes.TrimRight(st.Fstypename[:], "\x00"))
		if on == dir && (strings.Contains(kind, "fuse") || strings.HasPrefix(kind, "kintfs")) {
			return true
		}
	}
	return false
}

// holders cannot list the processes on macOS without lsof; it says how to find them.
func holders(dir string) string {
	return "; run  lsof +f -- " + dir + "  to see what holds it"
}

// What doctor checks FUSE by: macFUSE's installed file system bundle (its devices appear only
// while the extension is loaded), and the tool that unmounts.
const (
	fuseDevice  = "/Library/Filesystems/macfuse.fs"
	fuserBinary = "umount"
)

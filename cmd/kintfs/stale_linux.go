package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A crashed mount leaves its mount point in the mount table. stat of the directory can still
// succeed for a while (the kernel answers it from its attribute cache), so the mount table
// and the connection decide: a FUSE mount on the directory whose statfs fails with ENOTCONN is
// dead, and so is a kintfs mount that does not answer statfs at all (its process was killed in
// the middle of a request and never finished exiting, which leaves the connection open with
// no one to serve it).

// statfsPatience is how long a mount gets to answer statfs before it is taken for hung. A live
// mount answers it without a lock or the chain, at once even on a loaded machine.
const statfsPatience = 10 * time.Second

// fuseMountAt is the topmost mount on the directory dir as /proc/self/mountinfo lists it.
type fuseMountAt struct {
	fstype string // fuse.kintfs, fuse.sshfs, ...
	minor  string // the connection's number under /sys/fs/fuse/connections
}

// mountAt finds the topmost mount on dir (an absolute, clean path); ok is false when there is
// none or the table cannot be read.
func mountAt(dir string) (m fuseMountAt, ok bool) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return m, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		f := strings.Fields(line)
		if len(f) < 5 || unescapeMounts(f[4]) != dir {
			continue
		}
		sep := -1
		for i := 5; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) {
			continue
		}
		major, minor, _ := strings.Cut(f[2], ":")
		m = fuseMountAt{fstype: f[sep+1]}
		if major == "0" {
			m.minor = minor
		}
		ok = true // a later line is mounted over an earlier one: keep the last
	}
	return m, ok
}

// mountPointPath is dir as the mount table spells it: absolute, with the symbolic links of
// its parent resolved (dir itself is not touched: it may be the dead mount).
func mountPointPath(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if parent, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(parent, filepath.Base(abs))
	}
	return abs
}

// deadMount tells whether dir holds a dead FUSE mount, and why ("" when it does not).
func deadMount(dir string) (why string, conn string) {
	path := mountPointPath(dir)
	m, ok := mountAt(path)
	if !ok {
		// not in this mount namespace's table: what stat says
		if _, err := os.Stat(dir); errors.Is(err, syscall.ENOTCONN) {
			return "transport endpoint is not connected", ""
		}
		return "", ""
	}
	if m.fstype != "fuse" && !strings.HasPrefix(m.fstype, "fuse.") {
		return "", ""
	}
	done := make(chan error, 1)
	go func() {
		var st unix.Statfs_t
		done <- unix.Statfs(path, &st)
	}()
	select {
	case err := <-done:
		if errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED) {
			return "transport endpoint is not connected", m.minor
		}
		return "", ""
	case <-time.After(statfsPatience):
		if m.fstype != "fuse.kintfs" {
			return "", "" // another file system's mount: not ours to clear; the checks after say what is wrong
		}
		return fmt.Sprintf("it has not answered for %s: its process died in the middle of a request", statfsPatience), m.minor
	}
}

// clearDeadMount aborts the dead mount's connection, which ends the requests waiting on it
// (and lets a killed process that waits on one finish exiting), then detaches it.
func clearDeadMount(dir, conn string) error {
	if conn != "" {
		abortConnection(conn)
	}
	out, err := fuseUnmountLazy(dir)
	if err != nil && os.Geteuid() == 0 {
		out, err = exec.Command("umount", "-l", dir).CombinedOutput()
	}
	if err != nil {
		return fmt.Errorf("%s", strings.TrimSpace(string(out)))
	}
	return nil
}

// abortConnection writes to /sys/fs/fuse/connections/N/abort, mounting the fusectl file
// system there first when it is not (which only root may). Failing that, the lazy unmount
// alone still frees the mount point.
func abortConnection(conn string) {
	const ctl = "/sys/fs/fuse/connections"
	abort := filepath.Join(ctl, conn, "abort")
	if _, err := os.Stat(abort); err != nil && os.Geteuid() == 0 {
		_ = unix.Mount("fusectl", ctl, "fusectl", 0, "")
	}
	_ = os.WriteFile(abort, []byte("1"), 0)
}

//go:build linux && (amd64 || arm64)

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain lets the test binary act as the probe's client process, as the command does.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == treeClientArg {
		if err := checkTree(os.Args[2]); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == clientArg {
		if err := runClient(os.Args[2:], os.Stdout); err != nil {
			os.Stderr.WriteString("uringprobe client: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// needURing skips, saying why, only where FUSE over io_uring cannot run at all: not root (the
// probe mounts with mount(2) and sets the module parameter), no /dev/fuse, or a kernel without
// the transport. It returns the parameter's setting, which each test checks is back at the end.
func needURing(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("FUSE over io_uring needs root here: the probe mounts with mount(2) and sets " + uringParam)
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: ", err)
	}
	was, err := uringSetting()
	if err != nil {
		t.Skip(err)
	}
	// writing the value it has changes nothing, and says whether it can be changed here
	if err := setURing(was); errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EROFS) {
		t.Skip("FUSE over io_uring cannot be turned on here: ", err)
	}
	t.Cleanup(func() {
		now, err := uringSetting()
		if err != nil || now != was {
			t.Errorf("%s is %q (%v) after the test, was %q", uringParam, now, err, was)
			_ = setURing(was)
		}
	})
	return was
}

// TestProbeRunsAllThree runs a short probe: every call the client makes checks what it got
// (the xattr's value, the 1 KB read's bytes), every figure is there, and the io_uring mount's
// requests went through the ring, not /dev/fuse.
func TestProbeRunsAllThree(t *testing.T) {
	needURing(t)
	const rounds, batch = 2, 20
	res, err := probe(t.TempDir(), os.Args[0], config{rounds: rounds, batch: batch, runs: 1, clientCPU: -1, uring: uringOpts{pin: true}, timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stats) != 9 {
		t.Fatalf("%d figures, want 3 transports x 3 operations: %+v", len(res.Stats), res.Stats)
	}
	for _, s := range res.Stats {
		if s.N != (rounds-1)*batch || s.MedianUS <= 0 || s.P90US < s.MedianUS {
			t.Errorf("figure %+v: want %d samples, a median above 0 and a p90 not below it", s, (rounds-1)*batch)
		}
	}
	// per round and transport: batch getxattrs, batch OPEN+FLUSH+RELEASE, batch READs
	minimum := int64(rounds * batch * 5)
	var ring int64
	for _, n := range res.Served.URingQueues {
		ring += n
	}
	if ring < minimum || res.Served.Classic < minimum || res.Served.URing < ring {
		t.Errorf("requests answered %+v: want at least %d through the ring and on the minimal loop", res.Served, minimum)
	}
}

// TestURingMountServesTree checks the io_uring server's answers through the file system.
func TestURingMountServesTree(t *testing.T) {
	needURing(t)
	dir := t.TempDir()
	fs := &trivialFS{}
	var m *rawMount
	if err := withURingEnabled(func() (err error) {
		m, err = mountRaw(dir, fs, &uringOpts{pin: true})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer watchdog(t, dir, 2*time.Minute)()
	unmounted := false
	t.Cleanup(func() {
		if !unmounted {
			_ = m.unmount()
		}
	})
	// the calls come from another process, as the probe's do: a call this process made to its
	// own mount could leave it waiting on the server while the runtime stops every goroutine
	out, err := exec.Command(os.Args[0], treeClientArg, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("the tree through the ring: %v\n%s", err, out)
	}
	var ring int64
	for i := range m.uring.served {
		ring += m.uring.served[i].Load()
	}
	// LOOKUP, OPEN, READ (twice: the second at the end), FLUSH, RELEASE, four GETXATTRs, LOOKUP
	if ring < 9 {
		t.Errorf("%d requests through the ring, want at least 9", ring)
	}
	unmounted = true
	if err := m.unmount(); err != nil {
		t.Errorf("unmount: %v", err)
	}
}

// treeClientArg makes the test binary checkTree's client process.
const treeClientArg = "uringprobe-tree-client"

// checkTree reads the trivial tree mounted at dir: the file's bytes, its xattr (whole, its
// size, too small a buffer, a missing name) and a missing name; it returns every difference.
func checkTree(dir string) error {
	var errs []error
	file := filepath.Join(dir, fileName)
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, fileData) {
		return fmt.Errorf("read %s: %d bytes, %v; want the file's %d", file, len(got), err, fileBytes)
	}
	buf := make([]byte, 64)
	n, err := unix.Getxattr(file, xattrName, buf)
	if err != nil || string(buf[:max(n, 0)]) != xattrVal {
		errs = append(errs, fmt.Errorf("getxattr %s: %q, %v; want %q", xattrName, buf[:max(n, 0)], err, xattrVal))
	}
	if n, err := unix.Getxattr(file, xattrName, nil); err != nil || n != len(xattrVal) {
		errs = append(errs, fmt.Errorf("getxattr size query: %d, %v; want %d", n, err, len(xattrVal)))
	}
	if _, err := unix.Getxattr(file, xattrName, buf[:3]); !errors.Is(err, unix.ERANGE) {
		errs = append(errs, fmt.Errorf("getxattr into 3 bytes: %v, want ERANGE", err))
	}
	if _, err := unix.Getxattr(file, "user.other", buf); !errors.Is(err, unix.ENODATA) {
		errs = append(errs, fmt.Errorf("getxattr of a missing name: %v, want ENODATA", err))
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("stat of a missing name: %v, want ENOENT", err))
	}
	return errors.Join(errs...)
}

// TestURingRefusedWhileDisabled: with enable_uring off the kernel does not offer the transport,
// and the io_uring mount is refused with the reason and undone.
func TestURingRefusedWhileDisabled(t *testing.T) {
	was := needURing(t)
	if was != "N" {
		if err := setURing("N"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = setURing(was) })
	}
	dir := t.TempDir()
	m, err := mountRaw(dir, &trivialFS{}, &uringOpts{})
	if err == nil {
		_ = m.unmount()
		t.Fatal("io_uring mount with enable_uring off: no error")
	}
	if !errors.Is(err, errURingOff) || !strings.Contains(err.Error(), "enable_uring is N") {
		t.Errorf("error %q, want errURingOff naming enable_uring", err)
	}
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), " "+dir+" ") {
		t.Errorf("%s is still mounted after the refusal", dir)
	}
}

// watchdog aborts the FUSE connection of the mount at dir unless the function it returns is
// called within d, and then fails the test: the test is the server's own client, so a request
// the server never answers would otherwise hold it (and the whole test run) forever. Once, an
// unpinned io_uring server left a LOOKUP unanswered on a loaded machine.
func watchdog(t *testing.T, dir string, d time.Duration) (stop func()) {
	t.Helper()
	conn, err := fuseConnection(dir)
	if err != nil {
		t.Fatal(err)
	}
	var fired atomic.Bool
	timer := time.AfterFunc(d, func() {
		fired.Store(true)
		_ = os.WriteFile(filepath.Join("/sys/fs/fuse/connections", conn, "abort"), []byte("1"), 0o200)
	})
	return func() {
		timer.Stop()
		if fired.Load() {
			t.Errorf("the mount at %s answered nothing for %v: its FUSE connection %s was aborted", dir, d, conn)
		}
	}
}

// fuseConnection is the number under /sys/fs/fuse/connections of the mount at dir, read from
// /proc/self/mountinfo (a stat of dir would itself be a request to the server).
func fuseConnection(dir string) (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == dir {
			major, minor, ok := strings.Cut(f[2], ":")
			if !ok || major != "0" {
				return "", fmt.Errorf("mount %s: device %q is not a FUSE connection's", dir, f[2])
			}
			return minor, nil
		}
	}
	return "", fmt.Errorf("%s is not in /proc/self/mountinfo", dir)
}

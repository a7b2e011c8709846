package integration

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stagedRows reads the staged row count of a machine that is not mounted.
func (m *machine) stagedRows() float64 {
	m.t.Helper()
	return m.statusJSON()["staged_rows"].(float64)
}

// TestDaemonReadiness: --daemon returns only once the mount answers, or with the child's error.
func TestDaemonReadiness(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "daemon")
	a.connect("pw")
	dir := filepath.Join(t.TempDir(), "mnt")
	os.MkdirAll(dir, 0o755)
	out := a.mustRun("", "mount", "--daemon", "--log-file", filepath.Join(t.TempDir(), "log"), dir)
	t.Cleanup(func() { exec.Command("fusermount3", "-u", dir).Run() })
	if !strings.Contains(out, "mounted in the background") {
		t.Fatalf("daemon: %q", out)
	}
	// no waiting: the mount must already answer
	if _, err := os.Stat(filepath.Join(dir, ".kint", "status")); err != nil {
		t.Fatalf("--daemon returned before the mount answered: %v", err)
	}
	writeFile(t, filepath.Join(dir, "state/x"), "staged")
	a.mustRun("", "unmount", dir)
	if n := a.stagedRows(); n != 0 {
		t.Fatalf("unmount did not flush: %v staged", n)
	}
	// the child's error reaches the parent: a non-empty mountpoint
	busy := t.TempDir()
	writeFile(t, filepath.Join(busy, "file"), "x")
	_, errs, code := a.run("", "mount", "--daemon", busy)
	if code == 0 || !strings.Contains(errs, "not empty") || !strings.Contains(errs, "--allow-non-empty") {
		t.Fatalf("daemon on a non-empty dir: exit %d, %q", code, errs)
	}
}

// TestSystemdNotify: under Type=notify, READY=1 arrives only when the mount is live.
func TestSystemdNotify(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "notify")
	a.connect("pw")
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	a.extra = append(a.extra, "NOTIFY_SOCKET="+sock)
	dir := filepath.Join(t.TempDir(), "mnt")
	os.MkdirAll(dir, 0o755)
	mt := &mounted{t: t, dir: dir, log: &syncBuffer{}}
	mt.cmd = exec.Command(kintfsBin, "mount", dir)
	mt.cmd.Env = a.env()
	mt.cmd.Stdout, mt.cmd.Stderr = mt.log, mt.log
	if err := mt.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mt.unmount)
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	buf := make([]byte, 256)
	n, _, err := conn.ReadFromUnix(buf)
	if err != nil || string(buf[:n]) != "READY=1" {
		t.Fatalf("notify: %q %v\n%s", buf[:n], err, mt.log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, ".kint", "status")); err != nil {
		t.Fatalf("READY=1 before the mount answered: %v", err)
	}
}

// TestFstabHelper: invoked as mount.kintfs, kintfs takes fstab options and daemonizes.
func TestFstabHelper(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "fstab")
	a.connect("pw")
	bin := filepath.Join(t.TempDir(), "mount.kintfs")
	if err := os.Symlink(kintfsBin, bin); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	os.MkdirAll(dir, 0o755)
	cmd := exec.Command(bin, "fstab", dir, "-o", "rw,_netdev,nofail,x-systemd.automount,home="+a.home+",rpc="+dc.info.RPC+",poll=1s,quiet=1")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "KINT_CONFIRMATIONS=1"} // no HOME: the helper must not need it
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() { exec.Command("fusermount3", "-u", dir).Run() })
	if err != nil {
		t.Fatalf("mount.kintfs: %v\n%s", err, out)
	}
	writeFile(t, filepath.Join(dir, "state/from-fstab"), "hello")
	// quiet=1: the write is anchored within a few seconds without any command
	eventually(t, 30*time.Second, "quiet-period flush", func() error {
		b, err := os.ReadFile(filepath.Join(dir, ".kint", "status"))
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), `"staged_rows": 0`) || !strings.Contains(string(b), `"seq": 1`) {
			return errors.New(string(b))
		}
		return nil
	})
}

// TestUnmountBusyAndSignals: unmount on a busy mount names the holder; SIGINT and
// fusermount3 -u both flush what is staged first.
func TestUnmountBusyAndSignals(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "signals")
	a.connect("pw")
	mt := a.mount()
	writeFile(t, mt.path("state/one"), "1")
	holder := exec.Command("sleep", "60")
	holder.Dir = mt.path("state")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	_, errs, code := a.run("", "unmount", "--no-flush", "--timeout", "3s", mt.dir)
	holder.Process.Kill()
	holder.Wait()
	if code != 7 || !strings.Contains(errs, "sleep (pid") {
		t.Fatalf("busy unmount: exit %d, %q", code, errs)
	}
	// SIGINT: flush, then unmount
	mt.cmd.Process.Signal(os.Interrupt)
	if err := mt.cmd.Wait(); err != nil {
		t.Fatalf("SIGINT exit: %v\n%s", err, mt.log.String())
	}
	mt.cmd = nil
	if !strings.Contains(mt.log.String(), "pending: nothing") {
		t.Fatalf("SIGINT did not flush:\n%s", mt.log.String())
	}
	// fusermount3 -u from outside: the process notices, flushes and exits
	m2 := a.mountAt(mt.dir)
	writeFile(t, m2.path("state/two"), "2")
	if out, err := exec.Command("fusermount3", "-u", m2.dir).CombinedOutput(); err != nil {
		t.Fatalf("fusermount3 -u: %v %s", err, out)
	}
	done := make(chan error, 1)
	go func() { done <- m2.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the mount process did not exit after fusermount3 -u")
	}
	m2.cmd = nil
	if n := a.stagedRows(); n != 0 {
		t.Fatalf("fusermount3 -u left %v rows staged:\n%s", n, m2.log.String())
	}
}

// TestStaleMountAndReadOnly: a mount killed with SIGKILL leaves a dead mountpoint that the
// next mount clears; --read-only refuses every change.
func TestStaleMountAndReadOnly(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "stale")
	a.connect("pw")
	mt := a.mount()
	writeFile(t, mt.path("state/kept"), "durable on close")
	mt.cmd.Process.Kill()
	mt.cmd.Wait()
	mt.cmd = nil
	// the kernel may answer from its attribute cache for up to the attr timeout (1 s)
	eventually(t, 5*time.Second, "the mount point is dead", func() error {
		if _, err := os.Stat(mt.dir); !errors.Is(err, syscall.ENOTCONN) {
			return fmt.Errorf("expected a dead mount, stat says %v", err)
		}
		return nil
	})
	m2 := a.mountAt(mt.dir, "--read-only")
	if !strings.Contains(m2.log.String(), "dead mount") {
		t.Errorf("the log does not mention the dead mount:\n%s", m2.log.String())
	}
	if got := readFile(t, m2.path("state/kept")); got != "durable on close" {
		t.Fatalf("after SIGKILL: %q", got)
	}
	if err := os.WriteFile(m2.path("state/new"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("write on a read-only mount: %v", err)
	}
	if err := os.Remove(m2.path("state/kept")); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("rm on a read-only mount: %v", err)
	}
}

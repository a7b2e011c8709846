package integration

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitExit waits for a mount process that was told to stop, and returns its log.
func (mt *mounted) waitExit() string {
	mt.t.Helper()
	done := make(chan error, 1)
	go func() { done <- mt.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			mt.t.Fatalf("mount exited with %v:\n%s", err, mt.log.String())
		}
	case <-time.After(120 * time.Second):
		mt.kill()
		mt.t.Fatalf("the mount process did not exit:\n%s", mt.log.String())
	}
	mt.cmd = nil
	return mt.log.String()
}

// TestUnmountNoFlush: unmount --no-flush and ctl no-flush anchor nothing; the staged rows are
// reported on exit and are still staged at the next mount. flush-on-exit undoes no-flush.
func TestUnmountNoFlush(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "noflush")
	a.connect("pw")
	a.extra = append(a.extra, "KINT_QUIET_SECONDS=3600")
	mt := a.mount()
	writeFile(t, mt.path("state/anchored"), "anchored first")
	mt.mustCtl("flush")
	before := chainHead(t, dc.client(t), a)
	if before.Seq == 0 {
		t.Fatal("the first flush anchored nothing")
	}
	writeFile(t, mt.path("state/one"), "staged, never published")
	writeFile(t, mt.path("state/two"), "staged too")
	if out, errs, code := a.run("", "unmount", "--no-flush", mt.dir); code != 0 {
		t.Fatalf("unmount --no-flush: exit %d\n%s%s", code, out, errs)
	}
	log := mt.waitExit()
	if !strings.Contains(log, "pending: no-flush: 2 staged rows") {
		t.Fatalf("the exit does not report the staged rows:\n%s", log)
	}
	if h := chainHead(t, dc.client(t), a); h.Seq != before.Seq {
		t.Fatalf("unmount --no-flush moved the head from %d to %d:\n%s", before.Seq, h.Seq, log)
	}
	// the next mount holds them staged (the quiet period is an hour), readable
	m2 := a.mountAt(mt.dir)
	if n := m2.status()["staged_rows"].(float64); n != 2 {
		t.Fatalf("after the next mount: %v rows staged, want 2", n)
	}
	if got := readFile(t, m2.path("state/one")); got != "staged, never published" {
		t.Fatalf("state/one after the next mount: %q", got)
	}

	// ctl no-flush, then SIGTERM (what systemctl stop sends): nothing anchored either
	m2.mustCtl("no-flush")
	m2.cmd.Process.Signal(syscall.SIGTERM)
	log = m2.waitExit()
	if !strings.Contains(log, "unmounting without anchoring (no-flush)") || !strings.Contains(log, "pending: no-flush: 2 staged rows") {
		t.Fatalf("SIGTERM after ctl no-flush:\n%s", log)
	}
	if h := chainHead(t, dc.client(t), a); h.Seq != before.Seq {
		t.Fatalf("SIGTERM after no-flush moved the head from %d to %d", before.Seq, h.Seq)
	}

	// flush-on-exit takes no-flush back: SIGTERM anchors as usual
	m3 := a.mountAt(mt.dir)
	m3.mustCtl("no-flush")
	m3.mustCtl("flush-on-exit")
	m3.cmd.Process.Signal(syscall.SIGTERM)
	log = m3.waitExit()
	if !strings.Contains(log, "pending: nothing") {
		t.Fatalf("SIGTERM after flush-on-exit did not flush:\n%s", log)
	}
	if h := chainHead(t, dc.client(t), a); h.Seq <= before.Seq {
		t.Fatalf("SIGTERM after flush-on-exit left the head at %d", h.Seq)
	}
}

// TestInitNewVault: init of a tenant with no epochs is refused without --new-vault (exit 2,
// naming the tenant, the owner and the flag) and saves nothing; --new-vault creates it; a
// second machine joins the vault with neither.
func TestInitNewVault(t *testing.T) {
	dc := startDevchain(t)
	a := newMachine(t, dc, "newvault")
	_, errs, code := a.run("pw\n", "init", "--owner", a.owner(), "--passphrase-stdin")
	if code != 2 || !strings.Contains(errs, `tenant "newvault"`) || !strings.Contains(errs, a.owner()) || !strings.Contains(errs, "--new-vault") {
		t.Fatalf("init of a new tenant without --new-vault: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(a.home, "vault.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused init left a vault config: %v", err)
	}
	out := a.mustRun("pw\n", "init", "--owner", a.owner(), "--new-vault", "--passphrase-stdin")
	if !strings.Contains(out, "created a new vault") {
		t.Fatalf("init --new-vault: %q", out)
	}
	a.connect("pw") // session key, funded and authorized
	mt := a.mount()
	writeFile(t, mt.path("state/x"), "in the vault")
	mt.mustCtl("flush")
	mt.unmount()

	// a typo of a tenant that exists is refused the same way
	typo := newMachine(t, dc, "newvaul")
	if _, errs, code := typo.run("pw\n", "init", "--owner", typo.owner(), "--passphrase-stdin"); code != 2 || !strings.Contains(errs, `tenant "newvaul"`) {
		t.Fatalf("init of a mistyped tenant: exit %d, %q", code, errs)
	}
	b := newMachine(t, dc, "newvault")
	out = b.mustRun("pw\n", "init", "--owner", b.owner(), "--passphrase-stdin")
	if !strings.Contains(out, "connected to the vault") {
		t.Fatalf("joining an existing vault: %q", out)
	}
	b.pull()
	if got := b.mustRun("", "history", "state", "x", "--block", "100000000"); got != "in the vault" {
		t.Fatalf("state/x on the machine that joined: %q", got)
	}
	// --new-vault on a tenant that has epochs joins it: the flag allows a vault, never replaces one
	c := newMachine(t, dc, "newvault")
	if out := c.mustRun("pw\n", "init", "--owner", c.owner(), "--new-vault", "--passphrase-stdin"); !strings.Contains(out, "connected to the vault") {
		t.Fatalf("init --new-vault of an existing vault: %q", out)
	}
}

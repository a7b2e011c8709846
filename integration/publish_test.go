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

// TestLocalOnlyRules: every default rule and a rule of the vault's ignore file (written while
// mounted: no remount) keep files on this machine: never anchored, kept across a remount,
// shown as local with their rule, counted in status. A row anchored before a rule matched its
// name stays a row and is anchored again when changed.
func TestLocalOnlyRules(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "localrules")
	a.connect("pw")
	mt := a.mount()
	writeFile(t, mt.path("state/keep.log"), "anchored before the rule")
	mt.mustCtl("flush")
	space := a.statusJSON()["space"].(string)
	rules := filepath.Join(a.home, "kintfs-ignore-"+strings.TrimPrefix(space, "0x")[:16])
	if err := os.WriteFile(rules, []byte("# this vault's own\n*.log\nbad[\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(mt.path("entity/person"), 0o755); err != nil {
		t.Fatal(err)
	}
	local := map[string]string{
		"state/cfg~":                 "*~ (default rule)",
		"state/#notes#":              "#*# (default rule)",
		"state/4913":                 "4913 (default rule)",
		"state/a.swp":                "*.swp (default rule)",
		"reference/a.swo":            "*.swo (default rule)",
		"reference/a.swx":            "*.swx (default rule)",
		"entity/person/ada.tmp":      "*.tmp (default rule)", // not JSON: would be held as a row
		"entity/x.bak":               "*.bak (default rule)",
		"state/patch.orig":           "*.orig (default rule)",
		"state/patch.rej":            "*.rej (default rule)",
		"state/doc.kate-swp":         "*.kate-swp (default rule)",
		"reference/~$50%report.docx": "~$* (default rule)", // no key escapes to it: still a local file
		"state/new.log":              "*.log (" + filepath.Base(rules) + ":2)",
	}
	for p := range local {
		writeFile(t, mt.path(p), "local content of "+p)
	}
	writeFile(t, mt.path("state/normal"), "published")
	writeFile(t, mt.path("state/keep.log"), "anchored again after the rule")
	check := func(m *mounted, when string) {
		t.Helper()
		for p, rule := range local {
			if got := readFile(t, m.path(p)); got != "local content of "+p {
				t.Errorf("%s %s: %q", when, p, got)
			}
			if got, err := getxattr(m.path(p), "user.kint.anchored"); err != nil || got != "local: "+rule {
				t.Errorf("%s %s: user.kint.anchored %q, %v; want local: %s", when, p, got, err, rule)
			}
		}
		if got, err := getxattr(m.path("state/keep.log"), "user.kint.anchored"); err != nil || !strings.HasPrefix(got, "seq ") {
			t.Errorf("%s: the anchored row matching a new rule: user.kint.anchored %q, %v", when, got, err)
		}
		st := m.status()
		if n := st["local_files"].(float64); n != float64(len(local)) {
			t.Errorf("%s: local_files %v, want %d", when, n, len(local))
		}
		if n := st["staged_rows"].(float64); n != 0 {
			t.Errorf("%s: %v rows staged", when, n)
		}
		names := sh(t, m.dir, "ls state reference entity entity/person")
		for _, want := range []string{"cfg~", "#notes#", "4913", "a.swp", "~$50%report.docx", "ada.tmp", "new.log", "keep.log"} {
			if !strings.Contains(names, want) {
				t.Errorf("%s: %s is not listed:\n%s", when, want, names)
			}
		}
	}
	mt.mustCtl("flush")
	check(mt, "after the flush")
	if !strings.Contains(mt.log.String(), "line 3") {
		t.Errorf("the bad rule was not reported:\n%s", mt.log.String())
	}
	exported := func() string {
		out := a.mustRun("", "export")
		for p := range local {
			if strings.Contains(out, filepath.Base(p)) {
				t.Fatalf("%s was anchored:\n%s", p, out)
			}
		}
		if !strings.Contains(out, "anchored again after the rule") || !strings.Contains(out, `"published"`) {
			t.Fatalf("the rows were not anchored:\n%s", out)
		}
		return out
	}
	exported()
	mt.unmount()
	m2 := a.mountAt(mt.dir)
	check(m2, "after a remount")
	m2.mustCtl("flush")
	exported()
	// dropping the rule publishes nothing already kept local
	os.Remove(rules)
	if got, err := getxattr(m2.path("state/new.log"), "user.kint.anchored"); err != nil || !strings.HasPrefix(got, "local: kept here") {
		t.Errorf("state/new.log once its rule is gone: %q, %v", got, err)
	}
	writeFile(t, m2.path("state/other.log"), "a row now")
	if got, err := getxattr(m2.path("state/other.log"), "user.kint.anchored"); err != nil || got != "unanchored" {
		t.Errorf("state/other.log without the rule: %q, %v", got, err)
	}
}

// TestLocalFileUnderARemoteRow: another machine whose rules publish "*~" anchors state/x~
// while this one keeps a local x~: the row is what the name shows (listed once), and the local
// file comes back when the row is deleted.
func TestLocalFileUnderARemoteRow(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "remoterow")
	a.connect("pw")
	ma := a.mount()
	writeFile(t, ma.path("state/x~"), "kept on a")
	writeFile(t, ma.path("state/seed"), "a vault with an epoch")
	ma.mustCtl("flush")
	b := newMachine(t, dc, "remoterow")
	b.connect("pw")
	space := a.statusJSON()["space"].(string)
	if err := os.WriteFile(filepath.Join(b.home, "kintfs-ignore-"+strings.TrimPrefix(space, "0x")[:16]), []byte("!*~\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mb := b.mount()
	writeFile(t, mb.path("state/x~"), "anchored by b")
	if got, err := getxattr(mb.path("state/x~"), "user.kint.anchored"); err != nil || got != "unanchored" {
		t.Fatalf("on b, with !*~: %q, %v", got, err)
	}
	mb.mustCtl("flush")
	ma.mustCtl("pull")
	if got := readFile(t, ma.path("state/x~")); got != "anchored by b" {
		t.Fatalf("state/x~ on a after the pull: %q", got)
	}
	if got, err := getxattr(ma.path("state/x~"), "user.kint.anchored"); err != nil || !strings.HasPrefix(got, "seq ") {
		t.Fatalf("state/x~ on a is not the anchored row: %q, %v", got, err)
	}
	if names := sh(t, ma.dir, "ls state"); strings.Count(names, "x~") != 1 {
		t.Fatalf("state lists x~ other than once:\n%s", names)
	}
	// a change on a goes to the row
	writeFile(t, ma.path("state/x~"), "changed on a")
	if n := a.stagedRows(); n != 1 {
		t.Fatalf("a change of the row on a staged %v rows", n)
	}
	ma.mustCtl("flush")
	mb.mustCtl("pull")
	if got := readFile(t, mb.path("state/x~")); got != "changed on a" {
		t.Fatalf("state/x~ on b: %q", got)
	}
	// an anchored state row can be removed only in a vault kint never opens
	b.mustRun("", "vault-model", "full")
	if err := os.Remove(mb.path("state/x~")); err != nil {
		t.Fatal(err)
	}
	mb.mustCtl("flush")
	ma.mustCtl("pull")
	if got := readFile(t, ma.path("state/x~")); got != "kept on a" {
		t.Fatalf("a's local x~ after the row is gone: %q", got)
	}
}

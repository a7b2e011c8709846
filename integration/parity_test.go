package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExport: every mirror row as one JSON line of the wire row's fields, the same from the
// mount and without it, a plaintext warning on stderr, and nothing unanchored.
func TestExport(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "export")
	a.connect("pass export")
	ma := a.mount()
	writeFile(t, ma.path("entity/people/ada"), `{"name":"Ada"}`)
	writeFile(t, ma.path("state/mood"), "calm\nline two")
	ma.mustCtl("flush")
	writeFile(t, ma.path("state/unanchored"), "staged only")

	out, errs, code := a.run("", "export")
	if code != 0 || !strings.Contains(errs, "plaintext") {
		t.Fatalf("export while mounted: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("export printed %d lines, want 2 (the anchored rows only):\n%s", len(lines), out)
	}
	want := []string{"tier", "key", "category", "status", "body", "meta", "ts", "evaluated", "acted", "forward", "extra"}
	bodies := map[string]string{}
	for _, l := range lines {
		var row map[string]*string
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatalf("export line %q: %v", l, err)
		}
		for _, k := range want {
			if _, ok := row[k]; !ok {
				t.Fatalf("export line %q has no %q", l, k)
			}
		}
		if len(row) != len(want) {
			t.Fatalf("export line %q: %d fields, want %d", l, len(row), len(want))
		}
		bodies[*row["tier"]+"/"+*row["key"]] = *row["body"]
	}
	if bodies["entity/ada"] != `{"name":"Ada"}` || bodies["state/mood"] != "calm\nline two" {
		t.Fatalf("exported bodies: %v", bodies)
	}
	if !strings.HasPrefix(lines[0], `{"tier":"entity","key":"ada","category":"people",`) {
		t.Fatalf("the entity line: %s", lines[0])
	}
	ma.unmount()
	// without the mount: the same rows (the staged one now anchored by the unmount's flush)
	out2, _, code := a.run("", "export")
	if code != 0 || !strings.Contains(out2, out) || !strings.Contains(out2, `"key":"unanchored"`) {
		t.Fatalf("export after unmount: exit %d:\n%s\nbefore:\n%s", code, out2, out)
	}
	if _, errs, code := a.run("", "export", "extra"); code != 2 || !strings.Contains(errs, "takes no arguments") {
		t.Fatalf("export with an argument: exit %d: %s", code, errs)
	}
}

// TestPullDiscardLocal: a fork (the chain a machine reads holds another epoch at a seq it
// applied) is refused with exit 4 and a message naming --discard-local, which moves the local
// state aside into a dated backup (kept, 0700) and restores the chain's state.
func TestPullDiscardLocal(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "fork")
	a.connect("pass fork")
	ma := a.mount()
	writeFile(t, ma.path("state/shared"), "epoch one")
	ma.mustCtl("flush")
	ma.unmount()

	// a copy of the chain and of this machine, before they part ways
	dc.stop(t)
	dc2 := &devChain{dir: t.TempDir()}
	sh(t, "/", "cp -a "+dc.dir+"/. "+dc2.dir)
	dc.start(t)
	dc2.start(t)
	t.Cleanup(func() { dc2.stop(t) })
	b := &machine{t: t, dc: dc2, home: filepath.Join(t.TempDir(), "home"), tenant: a.tenant}
	sh(t, "/", "cp -a "+a.home+" "+b.home)

	ma = a.mount()
	writeFile(t, ma.path("state/shared"), "epoch two on chain one")
	ma.mustCtl("flush")
	writeFile(t, ma.path("state/local-only"), "never anchored")
	ma.unmount() // its flush anchors local-only too: epoch three
	mb := b.mount()
	writeFile(t, mb.path("state/shared"), "epoch two on chain two")
	mb.mustCtl("flush")
	writeFile(t, mb.path("state/other"), "epoch three on chain two")
	mb.mustCtl("flush")
	writeFile(t, mb.path("state/more"), "epoch four on chain two") // past what a has seen
	mb.mustCtl("flush")
	mb.unmount()

	// a now reads chain two: a fork
	a.extra = []string{"KINT_RPC_URL=" + dc2.info.RPC}
	if _, errs, code := a.run("", "pull"); code != 4 || !strings.Contains(errs, "fork") || !strings.Contains(errs, "kintfs pull --discard-local") {
		t.Fatalf("pull over a fork: exit %d: %s", code, errs)
	}
	// refused while mounted
	ma = a.mount()
	if _, errs, code := a.run("", "pull", "--discard-local"); code != 2 || !strings.Contains(errs, "unmount it first") {
		t.Fatalf("pull --discard-local while mounted: exit %d: %s", code, errs)
	}
	ma.unmount()
	out, errs, code := a.run("", "pull", "--discard-local")
	if code != 0 || !strings.Contains(errs, "moved this machine's local state aside to ") {
		t.Fatalf("pull --discard-local: exit %d\n%s%s", code, out, errs)
	}
	backups, _ := filepath.Glob(filepath.Join(a.home, "backup-*"))
	if len(backups) != 1 || !strings.Contains(errs, backups[0]) {
		t.Fatalf("backups %v; stderr %s", backups, errs)
	}
	if fi, err := os.Stat(backups[0]); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("backup folder: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(backups[0], "db")); err != nil {
		t.Fatalf("the state database was not kept: %v", err)
	}
	if got := a.mustRun("", "history", "state", "shared", "--block", "100000000"); got != "epoch two on chain two" {
		t.Fatalf("after the restore: %q", got)
	}
	if got := a.mustRun("", "export"); strings.Contains(got, "local-only") {
		t.Fatalf("the discarded row is still in the mirror:\n%s", got)
	}
	a.mustRun("", "pull") // in step now
}

// TestRecoveryCodeSessionRotateBurnNonce: recovery-code writes the file again from the cached
// key and refuses without one or with a key the head was not sealed with; session-key rotate
// keeps the old keystore; authorize burn-nonce bumps the nonce and keeps the expiry;
// push --confirmations N.
func TestRecoveryCodeSessionRotateBurnNonce(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "keys")
	a.connect("pass keys")
	ma := a.mount()
	writeFile(t, ma.path("state/x"), "one")
	ma.mustCtl("flush")
	writeFile(t, ma.path("state/y"), "two")
	// push and recovery-code run beside the mount
	if out := a.mustRun("", "push", "--confirmations", "1"); !strings.Contains(out, "seq 2 to 2") {
		t.Fatalf("push --confirmations 1: %s", out)
	}
	if _, errs, code := a.run("", "push", "--confirmations", "x"); code != 2 || !strings.Contains(errs, "confirmations") {
		t.Fatalf("push --confirmations x: exit %d: %s", code, errs)
	}
	rec, _ := filepath.Glob(filepath.Join(a.home, "RECOVERY-*.txt"))
	want, _ := os.ReadFile(rec[0])
	os.Remove(rec[0])
	out := a.mustRun("", "recovery-code")
	if got, _ := os.ReadFile(rec[0]); !strings.Contains(out, rec[0]) || string(got) != string(want) {
		t.Fatalf("recovery-code wrote %q (was %q): %s", got, want, out)
	}
	if fi, _ := os.Stat(rec[0]); fi.Mode().Perm() != 0o600 {
		t.Fatalf("recovery file mode %v", fi.Mode())
	}
	if strings.Contains(out, recoveryCodeIn(string(want))) {
		t.Fatalf("recovery-code printed the code: %s", out)
	}
	a.extra = []string{"KINT_OFFLINE=1", "KINT_RPC_URL=http://127.0.0.1:1"}
	a.mustRun("", "recovery-code")
	a.extra = nil
	ma.unmount()

	// a rekey on another machine: this machine's cached key no longer seals the head
	b := newMachine(t, dc, "keys")
	b.connect("pass keys")
	b.pull()
	b.mustRun("pass keys\n", "rekey", "--passphrase-stdin", "--confirmations", "1")
	if _, errs, code := a.run("", "recovery-code"); code != 2 || !strings.Contains(errs, "a rekey happened elsewhere") {
		t.Fatalf("recovery-code with a retired key: exit %d: %s", code, errs)
	}
	// no cached key
	dek, _ := filepath.Glob(filepath.Join(a.home, "keys", "*.dek"))
	os.Remove(dek[0])
	if _, errs, code := a.run("", "recovery-code"); code != 2 || !strings.Contains(errs, "no data key cached on this machine") {
		t.Fatalf("recovery-code without a key: exit %d: %s", code, errs)
	}

	// burn-nonce: the nonce goes up, the expiry stays
	nonce := func() string {
		out := b.mustRun("", "authorize", "--print-digest")
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "nonce: ") {
				return strings.TrimPrefix(l, "nonce: ")
			}
		}
		t.Fatalf("no nonce in %s", out)
		return ""
	}
	expiry := func() string {
		out := b.mustRun("", "session-key", "show")
		return out[strings.Index(out, "authorized"):]
	}
	n0, e0 := nonce(), expiry()
	if _, errs, code := b.run("", "authorize", "burn-nonce"); code != 2 || !strings.Contains(errs, "KINT_OWNER_KEY") {
		t.Fatalf("burn-nonce without the owner key: exit %d: %s", code, errs)
	}
	b.extra = []string{"KINT_OWNER_KEY=" + dc.info.Accounts[1].PrivateKey}
	if _, errs, code := b.run("", "authorize", "burn-nonce"); code != 2 || !strings.Contains(errs, "not the owner "+b.owner()) {
		t.Fatalf("burn-nonce with another key: exit %d: %s", code, errs)
	}
	b.extra = []string{"KINT_OWNER_KEY=" + dc.ownerKeyHex()}
	if out := b.mustRun("", "authorize", "burn-nonce"); !strings.Contains(out, "burned authorization nonce "+n0) {
		t.Fatalf("burn-nonce: %s", out)
	}
	b.extra = nil
	if n1, e1 := nonce(), expiry(); n1 == n0 || e1 != e0 {
		t.Fatalf("after burn-nonce: nonce %s -> %s, expiry %q -> %q", n0, n1, e0, e1)
	}
	if _, errs, code := b.run("", "authorize", "bogus"); code != 2 || !strings.Contains(errs, "burn-nonce") {
		t.Fatalf("authorize bogus: exit %d: %s", code, errs)
	}

	// rotate: a new unauthorized key, the old one kept; a second rotate refuses
	oldKey := strings.Fields(b.mustRun("", "session-key", "show"))[2]
	out = b.mustRun("", "session-key", "rotate")
	if !strings.Contains(out, "the old key "+oldKey+" is kept in "+filepath.Join(b.home, "session.old")) {
		t.Fatalf("rotate: %s", out)
	}
	if _, err := os.Stat(filepath.Join(b.home, "session.old")); err != nil {
		t.Fatal(err)
	}
	if show := b.mustRun("", "session-key", "show"); strings.Contains(show, oldKey) || !strings.Contains(show, "authorized: no") {
		t.Fatalf("after rotate: %s", show)
	}
	if _, errs, code := b.run("", "session-key", "rotate"); code != 2 || !strings.Contains(errs, "session.old is left from an earlier rotation") {
		t.Fatalf("second rotate: exit %d: %s", code, errs)
	}
	c := newMachine(t, dc, "keys")
	if _, errs, code := c.run("", "session-key", "rotate"); code != 3 || !strings.Contains(errs, "no session key") {
		t.Fatalf("rotate without a key: exit %d: %s", code, errs)
	}
}

// TestMountDevChainID: mount --dev --chain-id 8453 creates the dev chain under Base's id and
// seals under it; a later --dev keeps the id the chain was created with, another id is refused.
func TestMountDevChainID(t *testing.T) {
	requireFUSE(t)
	m := &machine{t: t, dc: &devChain{}, home: filepath.Join(t.TempDir(), "home"), tenant: "devid"}
	mt := m.mount("--dev", "--chain-id", "8453")
	if ch := mt.status()["chain"].(map[string]any); ch["chain_id"] != float64(8453) {
		t.Fatalf("status chain: %v", ch)
	}
	writeFile(t, mt.path("state/x"), "sealed under 8453")
	mt.mustCtl("flush")
	mt.unmount()
	mt = m.mountAt(mt.dir, "--dev")
	if ch := mt.status()["chain"].(map[string]any); ch["chain_id"] != float64(8453) {
		t.Fatalf("a later --dev: status chain: %v", ch)
	}
	if got := readFile(t, mt.path("state/x")); got != "sealed under 8453" {
		t.Fatalf("after a restart: %q", got)
	}
	mt.unmount()
	if _, errs, code := m.run("", "mount", "--dev", "--chain-id", "1337", mt.dir); code != 2 || !strings.Contains(errs, "created under chain id 8453, not 1337") {
		t.Fatalf("mount --dev with another chain id: exit %d: %s", code, errs)
	}
	if _, errs, code := m.run("", "mount", "--chain-id", "8453", mt.dir); code != 2 || !strings.Contains(errs, "use it with --dev") {
		t.Fatalf("mount --chain-id without --dev: exit %d: %s", code, errs)
	}
}

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

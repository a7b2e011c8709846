package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

type pullReport struct {
	Head      struct{ Seq uint64 }
	Mirror    struct{ Seq uint64 }
	Walked    int `json:"walked"`
	Fetched   int `json:"fetched"`
	FromCache int `json:"from_cache"`
	Applied   int `json:"applied"`
	// FromSecondRPC: epochs whose calldata the second RPC served
	FromSecondRPC int `json:"from_second_rpc"`
}

func (m *machine) pull(args ...string) pullReport {
	m.t.Helper()
	out := m.mustRun("", append([]string{"pull", "--json"}, args...)...)
	var rep pullReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		m.t.Fatalf("pull --json printed %q: %v", out, err)
	}
	return rep
}

func (m *machine) statusJSON() map[string]any {
	m.t.Helper()
	out := m.mustRun("", "status", "--json")
	var st map[string]any
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		m.t.Fatalf("status --json printed %q: %v", out, err)
	}
	return st
}

func mirrorOf(st map[string]any) string {
	m := st["mirror"].(map[string]any)
	return fmt.Sprintf("seq %v digest %v", m["seq"], m["digest"])
}

// TestMachinesPullCompactRestore: A pushes; B pulls the same state; B compacts; a fresh C
// restores from the one snapshot epoch; the CLI's history, log and verify read it back.
func TestMachinesPullCompactRestore(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "machines")
	a.connect("pass one")
	ma := a.mount()
	for i := 0; i < 5; i++ {
		writeFile(t, ma.path(fmt.Sprintf("entity/things/t%d", i)), fmt.Sprintf(`{"n":%d}`, i))
	}
	ma.mustCtl("flush")
	writeFile(t, ma.path("entity/things/t0"), `{"n":"zero"}`)
	if err := os.Remove(ma.path("entity/things/t4")); err != nil {
		t.Fatal(err)
	}
	ma.mustCtl("flush")
	stA := ma.status()

	b := newMachine(t, dc, "machines")
	b.connect("pass one")
	rep := b.pull()
	if rep.Applied != 2 || rep.Mirror.Seq != 2 {
		t.Fatalf("B's pull: %+v", rep)
	}
	if mirrorOf(b.statusJSON()) != mirrorOf(stA) {
		t.Fatalf("B's mirror %s, A's %s", mirrorOf(b.statusJSON()), mirrorOf(stA))
	}
	// a warm pull fetches nothing
	if rep := b.pull(); rep.Fetched != 0 || rep.Applied != 0 {
		t.Fatalf("second pull: %+v", rep)
	}
	out := b.mustRun("", "compact")
	if !strings.Contains(out, "seq 3 to 3") {
		t.Fatalf("compact: %q", out)
	}

	c := newMachine(t, dc, "machines")
	c.connect("pass one")
	rep = c.pull()
	if rep.Applied != 1 || rep.Walked != 1 || rep.Mirror.Seq != 3 {
		t.Fatalf("C restores from one snapshot epoch: %+v", rep)
	}
	mc := c.mount()
	got := tree(t, mc.dir)
	if len(got) != 4 || got["entity/things/t0"] != `{"n":"zero"}` || got["entity/things/t3"] != `{"n":3}` {
		t.Fatalf("C's tree: %v", got)
	}
	// C has no history before the snapshot; A holds both versions of t0
	hist := a.mustRun("", "history", "entity", "t0", "--category", "things")
	// two versions: B's snapshot repeats t0 unchanged, which is not a new version
	if strings.Count(hist, "seq ") != 2 || !strings.Contains(hist, "seq 1 ") || !strings.Contains(hist, "seq 2 ") {
		t.Fatalf("A's history of t0: %s", hist)
	}
	verify := c.mustRun("", "verify", mc.path("entity/things/t0"), mc.path("entity/things/t1"))
	if strings.Count(verify, ": ok:") != 2 {
		t.Fatalf("verify: %s", verify)
	}
	log := c.mustRun("", "log")
	if !strings.Contains(log, "snapshot") {
		t.Fatalf("log: %s", log)
	}
}

// TestRebaseAndConflict: both machines stage edits; A pushes first; B's flush pulls A's epoch,
// rebases the row A did not touch and keeps its own version of the row both changed as a
// local conflict copy beside the chain's.
func TestRebaseAndConflict(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "rebase")
	a.connect("pw")
	b := newMachine(t, dc, "rebase")
	b.connect("pw")
	ma := a.mount()
	writeFile(t, ma.path("state/shared"), "v1")
	ma.mustCtl("flush")
	mb := b.mount()
	eventually(t, 20*time.Second, "B sees the first epoch", func() error {
		if got, err := os.ReadFile(mb.path("state/shared")); err != nil || string(got) != "v1" {
			return fmt.Errorf("state/shared = %q, %v\nB's log:\n%s\nB's status: %s", got, err, mb.log.String(), readFile(t, mb.path(".kint/status")))
		}
		return nil
	})
	writeFile(t, ma.path("state/shared"), "from A")
	writeFile(t, ma.path("state/a-only"), "a")
	writeFile(t, mb.path("state/shared"), "from B")
	writeFile(t, mb.path("state/b-only"), "b")
	ma.mustCtl("flush")
	mb.mustCtl("flush")
	if got := readFile(t, mb.path("state/shared")); got != "from A" {
		t.Fatalf("B's state/shared after the rebase = %q, want the chain's version", got)
	}
	entries, _ := os.ReadDir(mb.path("state"))
	var copyName string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".shared.conflict-") {
			copyName = e.Name()
		}
	}
	if copyName == "" || readFile(t, mb.path("state/"+copyName)) != "from B" {
		t.Fatalf("no conflict copy with B's version in %v", entries)
	}
	st := mb.status()
	if cs := st["conflicts"].([]any); len(cs) != 1 || !strings.Contains(fmt.Sprint(cs[0]), copyName) {
		t.Fatalf("status conflicts: %v", st["conflicts"])
	}
	eventually(t, 20*time.Second, "A sees B's rebased row", func() error {
		if got, err := os.ReadFile(ma.path("state/b-only")); err != nil || string(got) != "b" {
			return fmt.Errorf("state/b-only = %q, %v", got, err)
		}
		return nil
	})
	if mirrorOf(ma.status()) != mirrorOf(mb.status()) {
		t.Fatalf("mirrors differ: A %s, B %s", mirrorOf(ma.status()), mirrorOf(mb.status()))
	}
}

// TestPushRefusals: the CLI's refusals carry kint's exit codes and messages.
func TestPushRefusals(t *testing.T) {
	dc := startDevchain(t)
	a := newMachine(t, dc, "refuse")
	// nothing connected yet
	if _, errs, code := a.run("", "push"); code != 2 || !strings.Contains(errs, "kintfs init") {
		t.Fatalf("push before init: exit %d, %q", code, errs)
	}
	a.connect("pw")
	_, errs, code := a.run("", "push")
	if code != 2 || !strings.Contains(errs, "nothing to push: the store matches the last anchored epoch") {
		t.Fatalf("empty push: exit %d, %q", code, errs)
	}
	if _, errs, code := a.run("", "init", "--owner", a.owner(), "--passphrase-stdin"); code != 2 || !strings.Contains(errs, "empty passphrase") && !strings.Contains(errs, "passphrase") {
		t.Fatalf("init with an empty passphrase: exit %d, %q", code, errs)
	}
	if _, errs, code := a.run("", "history", "nosuchtier", "k"); code != 2 || !strings.Contains(errs, "unknown tier") {
		t.Fatalf("history of a bad tier: exit %d, %q", code, errs)
	}
	if _, errs, code := a.run("", "bogus"); code != 2 || !strings.Contains(errs, "unknown command") {
		t.Fatalf("unknown command: exit %d, %q", code, errs)
	}
}

// TestRebuildFromCache: a lost state database is rebuilt from the epoch cache alone, with the
// RPC unreachable.
func TestRebuildFromCache(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "rebuild")
	a.connect("pw")
	ma := a.mount()
	writeFile(t, ma.path("state/one"), "1")
	ma.mustCtl("flush")
	writeFile(t, ma.path("state/two"), "2")
	ma.mustCtl("flush")
	want := mirrorOf(ma.status())
	ma.unmount()
	if err := os.RemoveAll(a.home + "/db"); err != nil {
		t.Fatal(err)
	}
	a.extra = append(a.extra, "KINT_RPC_URL=http://127.0.0.1:1")
	st := a.statusJSON()
	if got := mirrorOf(st); got != want {
		t.Fatalf("rebuilt mirror %s, want %s", got, want)
	}
	if st["offline"] == nil || !strings.Contains(fmt.Sprint(st["offline"]), "offline") {
		t.Fatalf("status should say offline: %v", st["offline"])
	}
	mb := a.mount()
	if got := readFile(t, mb.path("state/two")); got != "2" {
		t.Fatalf("state/two after the rebuild = %q", got)
	}
}

package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// copyOf is the name of the conflict copy of row name in dir ("" when there is none).
func copyOf(t *testing.T, dir, name string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "."+name+".conflict-") {
			return e.Name()
		}
	}
	return ""
}

// TestConflictsInPlainSight: two machines change the same two rows. The machine that pulls the
// other's change logs a warning naming both files for each, lists them in status and in
// kintfs conflicts with both versions' epochs; one is resolved by mv (its version then
// anchored), the other by rm, and both are gone from status at once and after a remount.
func TestConflictsInPlainSight(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "conflicts")
	a.connect("pw")
	b := newMachine(t, dc, "conflicts")
	b.connect("pw")
	ma := a.mount()
	writeFile(t, ma.path("state/keep"), "v1")
	writeFile(t, ma.path("state/drop"), "v1")
	ma.mustCtl("flush")
	mb := b.mount()
	eventually(t, 30*time.Second, "B sees the first epoch", func() error {
		if got, err := os.ReadFile(mb.path("state/drop")); err != nil || string(got) != "v1" {
			return fmt.Errorf("state/drop = %q, %v", got, err)
		}
		return nil
	})
	writeFile(t, ma.path("state/keep"), "from A")
	writeFile(t, ma.path("state/drop"), "from A")
	writeFile(t, mb.path("state/keep"), "from B")
	writeFile(t, mb.path("state/drop"), "from B")
	ma.mustCtl("flush")
	mb.mustCtl("flush")

	keepCopy, dropCopy := copyOf(t, mb.path("state"), "keep"), copyOf(t, mb.path("state"), "drop")
	if keepCopy == "" || dropCopy == "" {
		t.Fatalf("no conflict copies: %q %q", keepCopy, dropCopy)
	}
	// the log reaches the test through a pipe: look until it is there
	eventually(t, 10*time.Second, "the conflict warnings in B's log", func() error {
		log := mb.log.String()
		for _, want := range []string{"warn: conflict: state/keep was changed here and by another machine", "yours is in state/" + keepCopy,
			"yours is in state/" + dropCopy} {
			if !strings.Contains(log, want) {
				return fmt.Errorf("B's log does not say %q:\n%s", want, log)
			}
		}
		return nil
	})
	log := mb.log.String()
	if strings.Contains(log, "its rows stay staged") {
		t.Errorf("B's log still says its rows stay staged:\n%s", log)
	}
	if cs := mb.status()["conflicts"].([]any); len(cs) != 2 {
		t.Fatalf("status conflicts: %v", cs)
	}
	out := b.mustRun("", "conflicts")
	for _, want := range []string{"state/keep: the chain's version (epoch 2) is in place; yours (made on epoch 1) is in state/" + keepCopy,
		"state/drop: the chain's version (epoch 2)"} {
		if !strings.Contains(out, want) {
			t.Errorf("kintfs conflicts does not say %q:\n%s", want, out)
		}
	}
	if human := b.mustRun("", "status"); !strings.Contains(human, "conflict: state/keep") {
		t.Errorf("kintfs status does not list the conflict:\n%s", human)
	}

	// resolved: keep B's version of one, drop B's version of the other
	if err := os.Rename(mb.path("state/"+keepCopy), mb.path("state/keep")); err != nil {
		t.Fatal(err)
	}
	if cs := mb.status()["conflicts"].([]any); len(cs) != 1 || !strings.Contains(fmt.Sprint(cs[0]), dropCopy) {
		t.Fatalf("after mv, status conflicts: %v", cs)
	}
	if err := os.Remove(mb.path("state/" + dropCopy)); err != nil {
		t.Fatal(err)
	}
	if cs := mb.status()["conflicts"].([]any); len(cs) != 0 {
		t.Fatalf("after rm, status conflicts: %v", cs)
	}
	mb.mustCtl("flush")
	eventually(t, 30*time.Second, "A sees B's kept version", func() error {
		if got, err := os.ReadFile(ma.path("state/keep")); err != nil || string(got) != "from B" {
			return fmt.Errorf("state/keep = %q, %v", got, err)
		}
		return nil
	})
	if got := readFile(t, mb.path("state/drop")); got != "from A" {
		t.Errorf("state/drop on B = %q, want the chain's version", got)
	}
	mb.unmount()
	mb = b.mountAt(mb.dir)
	if cs := mb.status()["conflicts"].([]any); len(cs) != 0 {
		t.Fatalf("after a remount, status conflicts: %v", cs)
	}
	if out := b.mustRun("", "conflicts"); !strings.Contains(out, "no conflicts") {
		t.Errorf("kintfs conflicts after resolving: %q", out)
	}
}

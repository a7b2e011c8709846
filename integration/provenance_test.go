package integration

import (
	"fmt"
	"strings"
	"testing"
)

// TestProvenanceAfterRestoreAndFullPull: a machine that restored from a snapshot and then
// fetched the history under it (pull --full) names, in user.kint.anchored, history and
// verify, the epoch where each row last changed, as the writer does and as kint's
// anchored_version does, not the snapshot that only carried it.
func TestProvenanceAfterRestoreAndFullPull(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "provenance")
	a.connect("pass provenance")
	ma := a.mount()
	for i := 0; i < 3; i++ {
		writeFile(t, ma.path(fmt.Sprintf("entity/things/t%d", i)), fmt.Sprintf(`{"n":%d}`, i))
	}
	ma.mustCtl("flush") // epoch 1
	writeFile(t, ma.path("entity/things/t0"), `{"n":"zero"}`)
	ma.mustCtl("flush") // epoch 2
	if out := a.mustRun("", "compact"); !strings.Contains(out, "seq 3 to 3") {
		t.Fatalf("compact: %q", out)
	}
	ma.unmount()

	c := newMachine(t, dc, "provenance")
	c.connect("pass provenance")
	if rep := c.pull(); rep.Applied != 1 || rep.Mirror.Seq != 3 {
		t.Fatalf("C restores from the snapshot: %+v", rep)
	}
	c.mustRun("", "pull", "--full")
	mc := c.mount()
	for path, seq := range map[string]int{"entity/things/t0": 2, "entity/things/t1": 1, "entity/things/t2": 1} {
		got, err := getxattr(mc.path(path), "user.kint.anchored")
		if err != nil || !strings.HasPrefix(got, fmt.Sprintf("seq %d block ", seq)) {
			t.Errorf("user.kint.anchored of %s: %q, %v; want seq %d, where it last changed", path, got, err, seq)
		}
	}
	hist := c.mustRun("", "history", "entity", "t1", "--category", "things")
	if strings.Count(hist, "seq ") != 1 || !strings.Contains(hist, "seq 1 ") {
		t.Errorf("C's history of t1 (the snapshot only carried it): %s", hist)
	}
	verify := c.mustRun("", "verify", mc.path("entity/things/t1"))
	if !strings.Contains(verify, ": ok:") || !strings.Contains(verify, "last changed in epoch 1 ") {
		t.Errorf("verify: %s", verify)
	}
}

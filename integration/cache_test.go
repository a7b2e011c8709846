package integration

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// expectContent fails unless path reads want ("" for a name that must not exist). No retry: a
// read straight after the command that changed it must not see a cached page, size or name.
func expectContent(t *testing.T, when, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	switch {
	case want == "" && !errors.Is(err, os.ErrNotExist):
		t.Errorf("%s: %s reads %q, %v; want it absent", when, path, got, err)
	case want != "" && (err != nil || string(got) != want):
		t.Errorf("%s: %s reads %q, %v; want %q", when, path, got, err, want)
	}
}

// TestCachesFollowChanges: the kernel keeps names (missing ones too), attributes and pages for
// an hour, yet every change shows at once, never a stale page: writes and renames on the same
// mount, the writer's own flush under an @<block> past the head, another machine's epochs as
// soon as its ctl pull returns, and on a --read-only mount (no-open mode) as soon as kintfs
// pull returns. A block under the head keeps its content.
func TestCachesFollowChanges(t *testing.T) {
	dc := startDevchain(t)
	const tenant, pass = "caches", "pass caches"
	a := newMachine(t, dc, tenant)
	a.connect(pass)
	ma := a.mount("--poll", "1h") // no background pull: only the commands below move it
	writeFile(t, ma.path("state/x"), "x1")
	if err := os.Mkdir(ma.path("entity/cat"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, ma.path("entity/cat/e"), `{"e":1}`)
	ma.mustCtl("flush")
	blocks, _ := a.epochBlocks()
	first := blocks[len(blocks)-1]
	far := fmt.Sprintf("@%d/", first+1_000_000) // past the head: shows the newest state
	at := fmt.Sprintf("@%d/", first)            // the first epoch's own block: never changes

	b := newMachine(t, dc, tenant)
	b.connect(pass)
	b.pull()
	mb := b.mount("--poll", "1h")
	c := newMachine(t, dc, tenant)
	c.connect(pass)
	c.pull()
	mc := c.mount("--poll", "1h", "--read-only")

	type want struct{ rel, content string }
	before := []want{
		{"state/x", "x1"}, {"entity/cat/e", `{"e":1}`}, {"state/new", ""}, {"entity/cat/new", ""},
		{far + "state/x", "x1"}, {far + "state/new", ""}, {at + "state/x", "x1"},
	}
	for _, m := range []*mounted{ma, mb, mc} {
		for i := 0; i < 2; i++ { // the second pass is served from the kernel's caches
			for _, w := range before {
				expectContent(t, "warming "+m.dir, m.path(w.rel), w.content)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// The same mount: writes, one longer, one the same size, new names.
	writeFile(t, ma.path("state/x"), "x2, longer than x1")
	writeFile(t, ma.path("state/new"), "n1")
	writeFile(t, ma.path("entity/cat/new"), `{"n":1}`)
	writeFile(t, ma.path("entity/cat/e"), `{"e":2}`)
	for _, w := range []want{{"state/x", "x2, longer than x1"}, {"state/new", "n1"}, {"entity/cat/new", `{"n":1}`}, {"entity/cat/e", `{"e":2}`}} {
		expectContent(t, "a write on the same mount", ma.path(w.rel), w.content)
	}
	expectContent(t, "before the flush", ma.path(far+"state/x"), "x1")

	// The writer's own flush: @<block> past the head moves at once, the first block does not.
	ma.mustCtl("flush")
	after := []want{
		{"state/x", "x2, longer than x1"}, {"state/new", "n1"}, {"entity/cat/new", `{"n":1}`}, {"entity/cat/e", `{"e":2}`},
		{far + "state/x", "x2, longer than x1"}, {far + "state/new", "n1"}, {far + "entity/cat/e", `{"e":2}`},
		{at + "state/x", "x1"}, {at + "state/new", ""},
	}
	for _, w := range after {
		expectContent(t, "after the writer's flush", ma.path(w.rel), w.content)
	}

	// Another machine: as soon as its ctl pull returns.
	mb.mustCtl("pull")
	for _, w := range after {
		expectContent(t, "after a ctl pull on another machine", mb.path(w.rel), w.content)
	}
	// A --read-only mount, where the kernel opens files by itself: as soon as kintfs pull
	// (run by the mount) returns.
	c.pull()
	for _, w := range after {
		expectContent(t, "after kintfs pull beside a --read-only mount", mc.path(w.rel), w.content)
	}

	// A rename, on the same mount and, anchored, on the others (of an entity: an anchored
	// state row cannot be renamed away in kint's model).
	if err := os.Rename(ma.path("entity/cat/new"), ma.path("entity/cat/moved")); err != nil {
		t.Fatal(err)
	}
	renamed := []want{{"entity/cat/new", ""}, {"entity/cat/moved", `{"n":1}`}, {far + "entity/cat/new", ""}, {far + "entity/cat/moved", `{"n":1}`}}
	for _, w := range renamed[:2] {
		expectContent(t, "a rename on the same mount", ma.path(w.rel), w.content)
	}
	ma.mustCtl("flush")
	for _, w := range renamed {
		expectContent(t, "a rename, after the writer's flush", ma.path(w.rel), w.content)
	}
	mb.mustCtl("pull")
	for _, w := range renamed {
		expectContent(t, "a rename, after a ctl pull on another machine", mb.path(w.rel), w.content)
	}
	c.pull()
	for _, w := range renamed {
		expectContent(t, "a rename, after kintfs pull beside a --read-only mount", mc.path(w.rel), w.content)
	}
	st := mc.status()
	if head := st["mirror"].(map[string]any); head["seq"].(float64) != 3 {
		t.Errorf("the --read-only mount's status says mirror %v, want seq 3", head)
	}
}

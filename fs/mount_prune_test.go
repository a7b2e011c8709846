package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFileNodesBounded: past MaxCachedFiles file nodes (every file of a tree read), the mount
// has the kernel drop idle files' names until a quarter of the bound is free; the files read
// the same afterwards, looked up again. An open file with unsaved writes keeps its node and
// its content through it.
func TestFileNodesBounded(t *testing.T) {
	const bound, files = 40, 200
	tm := mountForTest(t, func(o *MountOptions) {
		o.MaxCachedFiles = bound
		o.EntryTimeout, o.AttrTimeout = time.Hour, time.Hour // only the prune makes the kernel forget
	})
	open, err := os.Create(tm.path("state", "open"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.WriteString("written before the walk, "); err != nil {
		t.Fatal(err)
	}
	for i := range files {
		if err := os.WriteFile(tm.path("state", fmt.Sprintf("f%03d", i)), []byte(fmt.Sprint("row ", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(what string) {
		t.Helper()
		for i := range files {
			p := tm.path("state", fmt.Sprintf("f%03d", i))
			if got := readFile(t, p); got != fmt.Sprint("row ", i) {
				t.Fatalf("%s: %s reads %q", what, filepath.Base(p), got)
			}
		}
	}
	read("first read")
	deadline := time.Now().Add(30 * time.Second)
	for {
		live := tm.m.fs.files.live.Load()
		if live <= bound && !tm.m.fs.files.pruning.Load() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d file nodes 30 s after a walk of %d files, bound %d", live, files, bound)
		}
		time.Sleep(50 * time.Millisecond)
	}
	read("after the prune")
	if _, err := open.WriteString("and after"); err != nil {
		t.Fatal(err)
	}
	if err := open.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, tm.path("state", "open")); got != "written before the walk, and after" {
		t.Fatalf("the file open through the prune reads %q", got)
	}
}

// TestToolsWhilePruning: cp -r, diff -r, tar, rsync (temporary file, then rename) and sed -i
// over 150 files, with the mount dropping idle files' names all along (a bound of 30): every
// tool sees the tree it wrote.
func TestToolsWhilePruning(t *testing.T) {
	tm := mountForTest(t, func(o *MountOptions) {
		o.MaxCachedFiles = 30
		o.EntryTimeout, o.AttrTimeout = time.Hour, time.Hour
	})
	src, out := t.TempDir(), t.TempDir()
	for c := range 3 {
		if err := os.MkdirAll(filepath.Join(src, fmt.Sprint("c", c)), 0o755); err != nil {
			t.Fatal(err)
		}
		for k := range 50 {
			body := fmt.Sprintf("{\"n\": %d, \"text\": \"row %d of c%d\"}", k, k, c)
			if err := os.WriteFile(filepath.Join(src, fmt.Sprint("c", c), fmt.Sprintf("k%02d", k)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	ent := tm.path("entity")
	mustRun(t, "cp", "-r", src+"/.", ent)
	mustRun(t, "diff", "-r", src, ent)
	mustRun(t, "tar", "-C", tm.path(), "-cf", filepath.Join(out, "t.tar"), "entity")
	mustRun(t, "tar", "-C", out, "-xf", filepath.Join(out, "t.tar"))
	mustRun(t, "diff", "-r", src, filepath.Join(out, "entity"))
	// rsync writes each changed file to a temporary name and renames it over the row
	mustSh(t, "sed -i 's/row /line /' "+src+"/c1/*")
	mustRun(t, "rsync", "-r", src+"/", ent+"/")
	mustRun(t, "diff", "-r", src, ent)
	mustSh(t, "sed -i 's/\"n\"/\"m\"/' "+src+"/c2/* "+ent+"/c2/*")
	mustRun(t, "diff", "-r", src, ent)
	deadline := time.Now().Add(30 * time.Second)
	for tm.m.fs.files.live.Load() > 30 || tm.m.fs.files.pruning.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("%d file nodes 30 s after the tools ran, bound 30", tm.m.fs.files.live.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	mustRun(t, "diff", "-r", src, ent)
}

// TestPruneDropsIdleCategories: a prune drops a category whose files are all idle as one
// directory, so that go-fuse frees its table of children with it; a category holding a file
// with unsaved writes keeps its node and that file's. Every file reads the same afterwards.
func TestPruneDropsIdleCategories(t *testing.T) {
	const bound, cats, keys = 40, 10, 20
	tm := mountForTest(t, func(o *MountOptions) {
		o.MaxCachedFiles = bound
		o.EntryTimeout, o.AttrTimeout = time.Hour, time.Hour // only the prune makes the kernel forget
	})
	name := func(c, k int) string { return tm.path("entity", fmt.Sprintf("c%02d", c), fmt.Sprintf("k%02d", k)) }
	body := func(c, k int) string { return fmt.Sprintf(`{"c": %d, "k": %d}`, c, k) }
	for c := range cats {
		if err := os.MkdirAll(filepath.Dir(name(c, 0)), 0o755); err != nil {
			t.Fatal(err)
		}
		for k := range keys {
			if err := os.WriteFile(name(c, k), []byte(body(c, k)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	open, err := os.OpenFile(name(0, 0), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { open.Close() }) // before the unmount, should the test stop early
	if _, err := open.WriteString(`{"held": "open`); err != nil {
		t.Fatal(err)
	}
	read := func(what string) {
		t.Helper()
		for c := range cats {
			for k := range keys {
				if c == 0 && k == 0 {
					continue
				}
				if got := readFile(t, name(c, k)); got != body(c, k) {
					t.Fatalf("%s: c%02d/k%02d reads %q", what, c, k, got)
				}
			}
		}
	}
	read("first read")
	deadline := time.Now().Add(30 * time.Second)
	for tm.m.fs.files.live.Load() > bound || tm.m.fs.files.pruning.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("%d file nodes 30 s after a walk of %d files, bound %d", tm.m.fs.files.live.Load(), cats*keys, bound)
		}
		time.Sleep(50 * time.Millisecond)
	}
	entity := tm.m.fs.root.EmbeddedInode().GetChild("entity")
	kept := entity.Children()
	if len(kept) >= cats {
		t.Fatalf("every one of the %d categories kept its node after the prune", cats)
	}
	c00 := entity.GetChild("c00")
	if c00 == nil || c00.GetChild("k00") == nil {
		t.Fatalf("the category of a file with unsaved writes was dropped (categories kept: %d)", len(kept))
	}
	read("after the prune")
	if _, err := open.WriteString(`"}`); err != nil {
		t.Fatal(err)
	}
	if err := open.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, name(0, 0)); got != `{"held": "open"}` {
		t.Fatalf("the file open through the prune reads %q", got)
	}
}

package homedir

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFileBatch: files written through a batch are not in place until it commits, then are
// whole with mode 0600, and the batch takes more after.
func TestFileBatch(t *testing.T) {
	h := Home{Dir: t.TempDir()}
	if err := os.Mkdir(h.Path("epochs"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := h.NewBatch()
	if err := b.WriteFile([]byte("one"), "epochs", "a.json"); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(h.Path("epochs")); fi.Mode().Perm() != 0o700 {
		t.Fatalf("the batch's directory has mode %v, want 0700", fi.Mode().Perm())
	}
	if err := b.WriteFile([]byte("two"), "epochs", "b.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.Path("epochs", "a.json")); !os.IsNotExist(err) {
		t.Fatalf("a file of the batch is in place before the commit: %v", err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a.json": "one", "b.json": "two"} {
		got, err := os.ReadFile(h.Path("epochs", name))
		if err != nil || string(got) != want {
			t.Fatalf("%s after the commit: %q, %v", name, got, err)
		}
		if fi, _ := os.Stat(h.Path("epochs", name)); fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v", name, fi.Mode().Perm())
		}
	}
	if err := b.WriteFile([]byte("three"), "epochs", "a.json"); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(h.Path("epochs", "a.json")); string(got) != "three" {
		t.Fatalf("a.json after the second commit: %q", got)
	}
	left, _ := filepath.Glob(h.Path("epochs", ".tmp-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if err := b.Commit(); err != nil {
		t.Fatalf("an empty commit: %v", err)
	}
}

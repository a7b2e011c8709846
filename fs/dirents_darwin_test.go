package fs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// direntInos returns the inode number of each name in a directory. macOS has no getdents:
// each entry is looked up instead, which asks the mount the same question by another road.
func direntInos(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{".": 0, "..": 0}
	for _, e := range entries {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(dir, e.Name()), &st); err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = st.Ino
	}
	delete(out, ".")
	delete(out, "..")
	return out
}

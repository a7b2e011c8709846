package store

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// TestOpenLogOfLargerMemtables: a mount with larger memtables (a release before this one)
// killed with a nearly full memtable leaves its log behind, and badger replays a log into one
// memtable; into one of this release's size, it panics ("Arena too small"). The store opens it
// whole, and finds every write in it.
func TestOpenLogOfLargerMemtables(t *testing.T) {
	live, dir := t.TempDir(), t.TempDir()
	db, err := badger.Open(badger.DefaultOptions(live).WithLogger(nil).WithSyncWrites(false).
		WithMemTableSize(4 * memTableSize).WithValueThreshold(valueThreshold).WithValueLogFileSize(16 << 20))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 70000 // about three memtables of this release: 120-byte values with their keys
	value := make([]byte, 120)
	wb := db.NewWriteBatch()
	for i := 0; i < n; i++ {
		if err := wb.Set([]byte(fmt.Sprintf("k/%06d", i)), value); err != nil {
			t.Fatal(err)
		}
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
	// a copy of the open database is what a kill leaves: the logs, nothing flushed to a table
	copyDir(t, live, dir)
	if mems, _ := filepath.Glob(filepath.Join(dir, "*.mem")); len(mems) == 0 {
		t.Fatal("no memtable log to replay")
	}
	if got := memTableSizeFor(dir); got <= memTableSize {
		t.Fatalf("memtables for the log left: %d bytes, want more than %d", got, memTableSize)
	}
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.db.View(func(txn *badger.Txn) error {
		for _, i := range []int{0, n / 2, n - 1} {
			if _, err := txn.Get([]byte(fmt.Sprintf("k/%06d", i))); err != nil {
				return fmt.Errorf("write %d: %w", i, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		src, err := os.Open(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// TestValueLogRewriteSyncedBeforeDelete: badger rewrites a value log that is mostly replaced
// values by copying its live values into the newest log, then deletes it, syncing neither.
// collectValueLog makes the copies durable before the delete: when its sync starts, the log
// it rewrote is still on disk, and it is gone once collectValueLog returns. Without the held
// iterator the log is gone before the sync (a power cut there would lose the copies).
func TestValueLogRewriteSyncedBeforeDelete(t *testing.T) {
	r := newTestStore(t)
	r.db.pinEvery = 0 // every sync moves the pin
	value := bytes.Repeat([]byte("v"), 1<<20)
	put := func(round, i int) {
		value[0] = byte('a' + round)
		if _, err := r.db.commit(func(txn *badger.Txn) error {
			return txn.Set([]byte(fmt.Sprintf("zz/%03d", i)), value)
		}); err != nil {
			t.Fatal(err)
		}
	}
	// the first log: 70 values of 1 MB, all but 5 of them replaced from the second log on
	n := valueLogFileSize>>20 + 6
	for i := 0; i < n; i++ {
		put(0, i)
	}
	for i := 5; i < n; i++ {
		put(1, i)
	}
	if err := r.db.Sync(); err != nil { // compaction drops a replaced version once a sync covers its replacement
		t.Fatal(err)
	}
	first := filepath.Join(r.dir, "000001.vlog")
	if _, err := os.Stat(first); err != nil {
		t.Fatalf("the first value log: %v", err)
	}
	compactAll(t, r)
	syncs, beforeDelete := 0, 0
	r.db.syncHook = func() {
		syncs++
		if _, err := os.Stat(first); err == nil {
			beforeDelete++
		}
	}
	if err := collectValueLog(r.db); err != nil {
		t.Fatal(err)
	}
	r.db.syncHook = nil
	if _, err := os.Stat(first); !os.IsNotExist(err) {
		t.Fatalf("after collectValueLog the first value log is still there (%v): nothing was rewritten, the test proves nothing", err)
	}
	if syncs == 0 || beforeDelete != syncs {
		t.Fatalf("%d syncs after rewrites, %d of them with the rewritten log still on disk; want every one", syncs, beforeDelete)
	}
	for i := 0; i < n; i++ { // every value reads back after the rewrite
		err := r.db.View(func(txn *badger.Txn) error {
			item, err := txn.Get([]byte(fmt.Sprintf("zz/%03d", i)))
			if err != nil {
				return err
			}
			v, err := itemValueCopy(item)
			if err == nil && (len(v) != len(value) || (i < 5) != (v[0] == 'a')) {
				err = fmt.Errorf("value %d reads back wrong (%d bytes, first %q)", i, len(v), v[:1])
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// compactAll writes small values into tables of their own until badger compacts its first
// level, then compacts every table into one level: compaction drops the versions it may and
// counts what each value log holds that is dead.
func compactAll(t *testing.T, r *testStore) {
	t.Helper()
	wb := r.db.DB.NewWriteBatch()
	small := bytes.Repeat([]byte("s"), 200)
	for i := 0; i < 150000; i++ {
		if err := wb.Set([]byte(fmt.Sprintf("zy/%06d", i)), small); err != nil {
			t.Fatal(err)
		}
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && r.db.DB.Levels()[0].NumTables >= 5; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if err := r.db.DB.Flatten(1); err != nil {
		t.Fatal(err)
	}
}

// TestCompactionKeepsDurableVersion: a key's version that a sync made durable outlives
// compaction while the newer version on top of it is not durable yet, so that a power cut
// that loses the newer one's value leaves the durable one to go back to (dropLostStaged);
// once a sync covers the newer one, compaction drops the older. Without the read transaction
// each sync holds (pinSynced), compaction drops the durable version at once.
func TestCompactionKeepsDurableVersion(t *testing.T) {
	r := newTestStore(t)
	r.db.pinEvery = 0 // every sync moves the pin
	key := []byte("zz/kept")
	put := func(fill byte) {
		if _, err := r.db.commit(func(txn *badger.Txn) error { return txn.Set(key, bytes.Repeat([]byte{fill}, 8192)) }); err != nil {
			t.Fatal(err)
		}
	}
	versions := func() (fills []byte) {
		err := r.db.View(func(txn *badger.Txn) error {
			opts := badger.DefaultIteratorOptions
			opts.AllVersions = true
			it := txn.NewKeyIterator(key, opts)
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				v, err := itemValueCopy(it.Item())
				if err != nil {
					return err
				}
				fills = append(fills, v[0])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return fills
	}
	put('a')
	if err := r.db.Sync(); err != nil { // acknowledged
		t.Fatal(err)
	}
	put('b') // not yet
	compactAll(t, r)
	if got := versions(); string(got) != "ba" {
		t.Fatalf("after compaction with b not durable: versions %q, want b and the durable a", got)
	}
	if err := r.db.Sync(); err != nil {
		t.Fatal(err)
	}
	compactAll(t, r)
	if got := versions(); string(got) != "b" {
		t.Fatalf("after compaction with b durable: versions %q, want b alone", got)
	}
}

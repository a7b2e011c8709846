package store

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// TestMigrateStagedAndLocalBodies opens a layout-2 database, whose staged records and local
// files keep their bodies inside the JSON, and finds every body raw under its own key after
// the upgrade, reading back as written, on this open and the next.
func TestMigrateStagedAndLocalBodies(t *testing.T) {
	dir := t.TempDir()
	db, err := openBadger(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := []seal.Row{
		{Tier: "state", Key: "goal", Body: seal.BodyString("to write it <all> down")},
		{Tier: "entity", Category: cat("person"), Key: "ann", Body: seal.BodyString(`{"name":"ann"}`)},
		{Tier: "state", Key: "binary", Body: seal.BodyString("\xff\xfe not text")},
		{Tier: "reference", Key: "null body"},
	}
	local := localRec{Key: recKeyOf(vault.Key{Tier: "state", Key: ".notes.swp", Local: true}), Body: []byte("swap \x00 bytes"), Mtime: 1}
	err = db.Update(func(txn *badger.Txn) error {
		for i := range rows {
			rec := stagedRec{Row: rows[i], Mtime: 1, Held: heldReason(&rows[i]), At: 1}
			if err := setJSON(txn, pStaged+rows[i].ID(), &rec); err != nil { // the body inside, as layout 2 kept it
				return err
			}
		}
		if err := setJSON(txn, pLocal+localID(local.Key.key()), &local); err != nil {
			return err
		}
		return setJSON(txn, kFormat, 2)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	for pass := 0; pass < 2; pass++ {
		s, err := OpenStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			k := rowKey(&rows[i])
			want := RenderContent(&rows[i])
			v, err := s.Get(k)
			if err != nil || !v.Staged || v.Size != int64(len(want)) || v.Leaf != seal.Leaf(&rows[i]) {
				t.Fatalf("pass %d: %s: %+v %v", pass, keyString(k), v, err)
			}
			if got, err := s.Content(k); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("pass %d: %s reads %q %v, want %q", pass, keyString(k), got, err, want)
			}
		}
		if got, err := s.Content(local.Key.key()); err != nil || !bytes.Equal(got, local.Body) {
			t.Fatalf("pass %d: local file reads %q %v", pass, got, err)
		}
		err = s.db.View(func(txn *badger.Txn) error {
			return scanPrefix(txn, pStaged, func(k, v []byte) error {
				if bytes.Contains(v, []byte("write it")) || bytes.Contains(v, []byte("ann\"}")) {
					t.Errorf("pass %d: record %q still holds its body: %s", pass, k, v)
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		var format int
		if err := s.db.View(func(txn *badger.Txn) error { _, err := getJSON(txn, kFormat, &format); return err }); err != nil || format != storeFormat {
			t.Fatalf("pass %d: layout %d %v", pass, format, err)
		}
		s.Close()
	}
}

// TestStoreErrorsNameNoBody: a value badger refuses becomes an error that names what was
// stored and its size, never badger's message with its hex dump of the value.
func TestStoreErrorsNameNoBody(t *testing.T) {
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	body := bytes.Repeat([]byte("SECRET-BODY "), (vault.MaxFileBytes+1)/12+1)
	err = s.db.Update(func(txn *badger.Txn) error {
		return setValue(txn, []byte(pStagedBody+"x"), body, "staged row state x")
	})
	if !errors.Is(err, vault.ErrValueTooLarge) {
		t.Fatalf("err %v, want ErrValueTooLarge", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "SECRET") || strings.Contains(msg, "53 45 43") || !strings.Contains(msg, "staged row state x") {
		t.Fatalf("message %q", msg)
	}
}

// TestWriteLimit: the store takes a file of exactly vault.MaxFileBytes and refuses one byte more
// with vault.ErrFileTooBig, leaving the row as it was.
func TestWriteLimit(t *testing.T) {
	t.Parallel() // a store of its own; mostly writing and syncing 64 MiB values
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := vault.Key{Tier: "state", Key: "big"}
	big := bytes.Repeat([]byte("c"), vault.MaxFileBytes+1) // each write takes a prefix: Write copies what it keeps
	for _, n := range []int{vault.MaxFileBytes - 1, vault.MaxFileBytes} {
		if _, err := s.Write(k, big[:n], time.Now()); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
	}
	if _, err := s.Write(k, big, time.Now()); !errors.Is(err, vault.ErrFileTooBig) {
		t.Fatalf("limit+1: %v, want ErrFileTooBig", err)
	}
	if got, err := s.Content(k); err != nil || len(got) != vault.MaxFileBytes {
		t.Fatalf("after limit+1 the row has %d bytes (%v)", len(got), err)
	}
	if _, err := s.Write(vault.Key{Tier: "state", Key: ".big.swp", Local: true}, big[:vault.MaxFileBytes], time.Now()); err != nil {
		t.Fatalf("a local file of the limit: %v", err)
	}
}

// TestBodyCopiedOnceEachWay: a large body costs about one copy of itself in the store's
// allocations on the way in (the value badger writes) and one on the way out (the bytes
// Content returns), where it cost three each while bodies were strings. The least of three
// tries is taken, so that badger's background work does not count.
func TestBodyCopiedOnceEachWay(t *testing.T) {
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const size = 32 << 20
	body := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	k := vault.Key{Tier: "state", Key: "big"}
	allocated := func(fn func()) uint64 {
		least := uint64(1 << 62)
		for try := 0; try < 3; try++ {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			fn()
			runtime.ReadMemStats(&after)
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		return least
	}
	try := 0
	in := allocated(func() {
		try++
		body[0] = byte('a' + try) // a change each time
		if _, err := s.Write(k, body, time.Now()); err != nil {
			t.Fatal(err)
		}
	})
	body[0] = 'z'
	if got, err := s.Content(k); err == nil {
		got[0] = 'y' // the caller's own bytes: a change here is not the stored body
	}
	out := allocated(func() {
		got, err := s.Content(k)
		if err != nil || !bytes.Equal(got[1:], body[1:]) || got[0] != byte('a'+try) {
			t.Fatalf("Content: %d bytes, %v", len(got), err)
		}
	})
	// badger writes the value through a buffer of its own: one copy (two are counted under the
	// race detector; three were without it while bodies were strings)
	if in > 5*size/2 || out > 3*size/2 {
		t.Errorf("a %d MiB body: Write allocated %d MiB, Content %d MiB; want under 2.5 and 1.5 times the body", size>>20, in>>20, out>>20)
	}
	t.Logf("a %d MiB body: Write allocated %.1f MiB, Content %.1f MiB", size>>20, float64(in)/(1<<20), float64(out)/(1<<20))
}

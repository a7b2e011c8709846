package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// storedBody is how the body of the staged row id is stored: whole says pStagedBody holds it,
// pieces how many pieces there are.
func storedBody(t *testing.T, r *testStore, id string) (whole bool, pieces int) {
	t.Helper()
	err := r.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get([]byte(pStagedBody + id))
		whole = err == nil
		return scanPrefix(txn, pBodyPiece, func(k, _ []byte) error {
			if len(k) == len(pBodyPiece)+len(pStagedBody)+len(id)+3 && strings.HasPrefix(string(k), pBodyPiece+pStagedBody+id+"\x00") {
				pieces++
			} else {
				t.Errorf("a piece of another key: %q", k)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return whole, pieces
}

// TestStagedBodyPieces rewrites one row with bodies of every size around a piece's and the
// largest stored in pieces, in a seeded order, and after each write (and after a reopen)
// reads it back and finds it stored in the pieces piecesFor says, or whole, with nothing left
// of the body before. A deletion leaves nothing.
func TestStagedBodyPieces(t *testing.T) {
	sizes := []int{0, 1, pieceSize - 1, pieceSize, pieceSize + 1, 2 * pieceSize, 2*pieceSize + 7, maxPiecedBody - 1,
		maxPiecedBody, maxPiecedBody + 1, 3 * maxPiecedBody}
	if piecesFor(maxPiecedBody) != maxPieces || piecesFor(maxPiecedBody+1) != 0 || piecesFor(pieceSize-1) != 1 || piecesFor(pieceSize) != 2 {
		t.Fatalf("piecesFor: %d %d %d %d", piecesFor(maxPiecedBody), piecesFor(maxPiecedBody+1), piecesFor(pieceSize-1), piecesFor(pieceSize))
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	r := newTestStore(t)
	k := vault.Key{Tier: "state", Key: "notes"}
	id := rowID(k)
	for step := 0; step < 3*len(sizes); step++ {
		n := sizes[rng.IntN(len(sizes))]
		body := make([]byte, n)
		for i := range body {
			body[i] = byte('a' + rng.IntN(26))
		}
		if _, err := r.Write(k, body, time.Now()); err != nil {
			t.Fatalf("seed %d: write %d bytes: %v", seed, n, err)
		}
		if step%5 == 4 {
			r = reopenTestStore(t, r)
		}
		if got, err := r.Content(k); err != nil || !bytes.Equal(got, body) {
			t.Fatalf("seed %d: %d bytes written, %d read back (%v)", seed, n, len(got), err)
		}
		whole, pieces := storedBody(t, r, id)
		if want := piecesFor(n); pieces != want || whole != (want == 0) {
			t.Fatalf("seed %d: %d bytes stored whole=%v in %d pieces, want %d pieces", seed, n, whole, pieces, want)
		}
	}
	if err := r.Remove(k); err != nil {
		t.Fatal(err)
	}
	if whole, pieces := storedBody(t, r, id); whole || pieces != 0 {
		t.Fatalf("seed %d: after the deletion: whole=%v, %d pieces", seed, whole, pieces)
	}
}

// TestAnchorDropsPieces: when an epoch anchors what was staged, the staged body goes with its
// record, in whatever pieces it was stored.
func TestAnchorDropsPieces(t *testing.T) {
	r := newTestStore(t)
	var rows []seal.Row
	for i, n := range []int{10, 3 * pieceSize, maxPiecedBody, maxPiecedBody + 1} {
		row := seal.Row{Tier: "state", Key: fmt.Sprintf("r%d", i), Body: seal.BodyOf(bytes.Repeat([]byte{'x'}, n))}
		if _, err := r.Write(rowKey(&row), row.Body.Bytes(), time.Now()); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	anchorRows(t, r, rows...)
	nothingStaged(t, r, "the anchor")
	for i := range rows {
		if whole, pieces := storedBody(t, r, rows[i].ID()); whole || pieces != 0 {
			t.Errorf("%s: whole=%v, %d pieces left after its anchor", rows[i].Key, whole, pieces)
		}
		if got, err := r.Content(rowKey(&rows[i])); err != nil || !bytes.Equal(got, rows[i].Body.Bytes()) {
			t.Errorf("%s reads %d bytes (%v)", rows[i].Key, len(got), err)
		}
	}
}

// TestSmallBodyInMemtableLog: once a write of a body stored in pieces returns, its bytes are in
// badger's memtable log and none in its value log, so the write's sync had one log to make
// durable. A body stored whole is in the value log.
func TestSmallBodyInMemtableLog(t *testing.T) {
	r := newTestStore(t)
	small := []byte(strings.Repeat("small-body-marker ", 60)) // 1080 bytes, in 3 pieces
	large := []byte(strings.Repeat("large-body-marker ", maxPiecedBody/18+1))
	if _, err := r.Write(vault.Key{Tier: "state", Key: "small"}, small, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write(vault.Key{Tier: "state", Key: "large"}, large, time.Now()); err != nil {
		t.Fatal(err)
	}
	in := func(ext string, marker []byte) (n int) {
		logs, err := filepath.Glob(filepath.Join(r.dir, "*"+ext))
		if err != nil || len(logs) == 0 {
			t.Fatalf("no %s log under %s (%v)", ext, r.dir, err)
		}
		for _, name := range logs {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			n += bytes.Count(b, marker)
		}
		return n
	}
	// a piece may cut a marker in two: most are whole
	if m, v := in(".mem", []byte("small-body-marker")), in(".vlog", []byte("small-body-marker")); m < 55 || v != 0 {
		t.Errorf("the small body: %d markers in the memtable log, %d in the value log; want 55 or more and none", m, v)
	}
	if v := in(".vlog", []byte("large-body-marker")); v <= maxPiecedBody/18 {
		t.Errorf("the large body: %d markers in the value log, want %d", v, maxPiecedBody/18+1)
	}
}

// TestSmallWriteSyncsOneLog: the sync that makes a write of a small file durable fsyncs the
// memtable log alone; one of a large file fsyncs the value log, and the memtable log after it.
func TestSmallWriteSyncsOneLog(t *testing.T) {
	if valuesWritten() < 0 {
		t.Fatalf("badger has no metric %s: every sync fsyncs the value logs", badgerValuesWritten)
	}
	r := newTestStore(t)
	var synced []string
	fsync := r.db.fsync
	r.db.fsync = func(path string) error {
		synced = append(synced, filepath.Ext(path))
		return fsync(path)
	}
	write := func(key string, n int) string {
		t.Helper()
		synced = nil
		if _, err := r.Write(vault.Key{Tier: "state", Key: key}, bytes.Repeat([]byte{'x'}, n), time.Now()); err != nil {
			t.Fatal(err)
		}
		return strings.Join(synced, " ")
	}
	write("first", 10) // the first sync covers whatever the store's opening wrote
	if got := write("small", 1024); got != ".mem" {
		t.Errorf("a 1 KB file's write synced %q, want the memtable log alone", got)
	}
	if got := write("large", maxPiecedBody+1); !strings.HasPrefix(got, ".vlog") || !strings.HasSuffix(got, ".mem") {
		t.Errorf("a large file's write synced %q, want the value log, then the memtable log", got)
	}
	if got := write("small again", 1024); got != ".mem" {
		t.Errorf("a 1 KB file's write after a large one synced %q, want the memtable log alone", got)
	}
}

package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

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
	for seed := uint64(1); seed <= 4; seed++ {
		stagedBodyPieces(t, seed, sizes)
	}
}

func stagedBodyPieces(t *testing.T, seed uint64, sizes []int) {
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

// checkStagedBodies fails unless every staged record's body is stored as the record says (its
// pieces 0..n-1 and no whole value, or the whole value and no piece) and no piece is left of
// a body no record names.
func checkStagedBodies(t *testing.T, r *testStore, seed uint64, step int) {
	t.Helper()
	err := r.db.View(func(txn *badger.Txn) error {
		named := map[string]bool{} // piece keys the staged records name
		err := scanPrefix(txn, pStaged, func(k, v []byte) error {
			id := string(k[len(pStaged):])
			var rec stagedRec
			if err := decodeRecord(v, &rec); err != nil {
				return err
			}
			_, err := txn.Get([]byte(pStagedBody + id))
			if whole := err == nil; whole != (rec.RawBody && rec.Pieces == 0) {
				t.Errorf("seed %d step %d: %q (raw %v, %d pieces) has a whole body: %v", seed, step, id, rec.RawBody, rec.Pieces, whole)
			}
			for i := 0; i < rec.Pieces; i++ {
				named[string(pieceKey(pStagedBody+id, i))] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
		found := 0
		err = scanPrefix(txn, pBodyPiece, func(k, _ []byte) error {
			if !named[string(k)] {
				t.Errorf("seed %d step %d: piece %q belongs to no staged record", seed, step, k)
			}
			found++
			return nil
		})
		if err == nil && found != len(named) {
			t.Errorf("seed %d step %d: %d pieces stored, the records name %d", seed, step, found, len(named))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStagedBodiesModel writes, removes and anchors a few entity rows at random, with bodies of
// every size around a piece's and the largest kept in pieces, reopening the store now and
// then, and after every step compares each row with a model and checks that the staged bodies
// are stored exactly as their records say, with no piece left over.
func TestStagedBodiesModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		stagedBodiesModel(t, seed)
	}
}

func stagedBodiesModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 9))
	sizes := []int{0, 1, pieceSize - 1, pieceSize, pieceSize + 1, 3 * pieceSize, maxPiecedBody, maxPiecedBody + 1, 2 * maxPiecedBody}
	r := newTestStore(t)
	keys := make([]vault.Key, 5)
	for i := range keys {
		keys[i] = vault.Key{Tier: "entity", Category: "notes", HasCategory: true, Key: fmt.Sprintf("k%d", i)}
	}
	model := map[int][]byte{} // what each key reads; absent: no file
	state := map[string]seal.Row{}
	seq := uint64(0)
	for step := 0; step < 200; step++ {
		i := rng.IntN(len(keys))
		switch op := rng.IntN(10); {
		case op < 6:
			body := make([]byte, sizes[rng.IntN(len(sizes))])
			for j := range body {
				body[j] = byte('a' + rng.IntN(26))
			}
			if _, err := r.Write(keys[i], body, time.Now()); err != nil {
				t.Fatalf("seed %d step %d: write: %v", seed, step, err)
			}
			model[i] = body
		case op < 7:
			if _, ok := model[i]; !ok {
				continue
			}
			if err := r.Remove(keys[i]); err != nil {
				t.Fatalf("seed %d step %d: remove: %v", seed, step, err)
			}
			delete(model, i)
		case op < 9:
			// an epoch anchors what is staged now, as a push of this machine would
			var rows []seal.Row
			var dels []seal.Deleted
			for j, k := range keys {
				id := rowID(k)
				body, ok := model[j]
				switch {
				case ok && !state[id].Body.Equal(seal.BodyOf(body)):
					rows = append(rows, seal.Row{Tier: k.Tier, Category: k.CategoryPtr(), Key: k.Key, Body: seal.BodyOf(bytes.Clone(body))})
				case !ok && state[id].Tier != "":
					dels = append(dels, seal.Deleted{Tier: k.Tier, Category: k.CategoryPtr(), Key: k.Key})
				}
			}
			if len(rows)+len(dels) == 0 {
				continue
			}
			seq++
			p := plaintextFor(state, seq, rows, dels)
			if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: seq, Block: 10 * seq, Digest: common.Hash{byte(seq)}}, p, ApplyOptions{Own: true}); err != nil {
				t.Fatalf("seed %d step %d: apply: %v", seed, step, err)
			}
		default:
			r = reopenTestStore(t, r)
		}
		for j, k := range keys {
			got, err := r.Content(k)
			want, ok := model[j]
			if !ok {
				if !errors.Is(err, vault.ErrNotFound) {
					t.Fatalf("seed %d step %d: %s removed, reads %d bytes (%v)", seed, step, k.Key, len(got), err)
				}
				continue
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("seed %d step %d: %s reads %d bytes (%v), want %d", seed, step, k.Key, len(got), err, len(want))
			}
		}
		checkStagedBodies(t, r, seed, step)
	}
	if seq == 0 {
		t.Fatalf("seed %d: no epoch anchored in 200 steps", seed)
	}
}

package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// dumpPrefix is every key and value under prefix, for comparing states of the database.
func dumpPrefix(t *testing.T, s *Store, prefix string) []byte {
	t.Helper()
	var b bytes.Buffer
	err := s.db.View(func(txn *badger.Txn) error {
		return scanPrefix(txn, prefix, func(k, v []byte) error {
			b.Write(k)
			b.WriteByte('=')
			b.Write(v)
			b.WriteByte('\n')
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestLocalAttrsChangeNoRow: utimensat and chmod change neither the leaf nor the staged set,
// on an anchored row and on a staged one, and start no flush.
func TestLocalAttrsChangeNoRow(t *testing.T) {
	r := newTestStore(t)
	state := map[string]seal.Row{}
	anchored := seal.Row{Tier: "state", Key: "anchored", Body: seal.BodyString("a1")}
	if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 1, Block: 100, Digest: common.Hash{1}},
		plaintextFor(state, 1, []seal.Row{anchored}, nil), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, r.Store, vault.Key{Tier: "state", Key: "staged"}, "s1")
	staged := 0
	r.Store.onStage = func() { staged++ }
	for _, name := range []string{"anchored", "staged"} {
		k := vault.Key{Tier: "state", Key: name}
		before, err := r.Get(k)
		if err != nil {
			t.Fatal(err)
		}
		mirror, stagedRecs := dumpPrefix(t, r.Store, pMirror), dumpPrefix(t, r.Store, pStaged)
		when := time.Date(2020, 1, 2, 3, 4, 5, 123456789, time.UTC)
		perm := uint32(0o4600)
		v, err := r.SetLocalAttrs(k, vault.AttrChange{Mtime: &when, Atime: &when, Perm: &perm})
		if err != nil {
			t.Fatal(err)
		}
		if !v.Mtime.Equal(when) || !v.HasPerm || v.Perm != 0o600 {
			t.Fatalf("%s: mtime %v perm %o (%v), want %v and 600", name, v.Mtime, v.Perm, v.HasPerm, when)
		}
		if v.Leaf != before.Leaf || v.Staged != before.Staged || v.Ino != before.Ino {
			t.Fatalf("%s: leaf %x staged %v ino %d, was %x %v %d", name, v.Leaf, v.Staged, v.Ino, before.Leaf, before.Staged, before.Ino)
		}
		if !bytes.Equal(mirror, dumpPrefix(t, r.Store, pMirror)) || !bytes.Equal(stagedRecs, dumpPrefix(t, r.Store, pStaged)) {
			t.Fatalf("%s: setting times and mode changed the mirror or the staged set", name)
		}
	}
	if staged != 0 {
		t.Fatalf("setting times and mode told the flush worker %d times", staged)
	}
	if n := bytes.Count(dumpPrefix(t, r.Store, pStaged), []byte("\n")); n != 1 {
		t.Fatalf("%d rows staged, want 1", n)
	}
}

// TestLocalTimesFollowContent: a set time holds across a reopen, a rename and a pull that
// leaves the row alone, and gives way to a write here and to a pull that changes the row.
func TestLocalTimesFollowContent(t *testing.T) {
	r := newTestStore(t)
	state := map[string]seal.Row{}
	a := seal.Row{Tier: "state", Key: "a", Body: seal.BodyString("1")}
	b := seal.Row{Tier: "state", Key: "b", Body: seal.BodyString("1")}
	if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 1, Block: 100, Digest: common.Hash{1}},
		plaintextFor(state, 1, []seal.Row{a, b}, nil), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, k := range []string{"a", "b"} {
		if _, err := r.SetLocalAttrs(vault.Key{Tier: "state", Key: k}, vault.AttrChange{Mtime: &when}); err != nil {
			t.Fatal(err)
		}
	}
	r = reopenTestStore(t, r)
	mtime := func(k string) time.Time {
		t.Helper()
		v, err := r.Get(vault.Key{Tier: "state", Key: k})
		if err != nil {
			t.Fatal(err)
		}
		return v.Mtime
	}
	if !mtime("a").Equal(when) {
		t.Fatalf("after reopen: %v", mtime("a"))
	}
	// another machine changes b only
	b2 := seal.Row{Tier: "state", Key: "b", Body: seal.BodyString("2")}
	if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 2, Block: 200, Digest: common.Hash{2}},
		plaintextFor(state, 2, []seal.Row{b2}, nil), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if !mtime("a").Equal(when) {
		t.Fatalf("a pull that left a alone changed its time: %v", mtime("a"))
	}
	if mtime("b").Equal(when) || !mtime("b").Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("a pull that changed b kept the set time: %v, want the epoch's", mtime("b"))
	}
	// a rename keeps the time and the number; a write replaces the time (an anchored state row
	// is renamed in the full model only: kint's store cannot delete its old name)
	r.SetModel(vault.ModelFull)
	va, _ := r.Get(vault.Key{Tier: "state", Key: "a"})
	if err := r.Rename(vault.Key{Tier: "state", Key: "a"}, vault.Key{Tier: "state", Key: "c"}); err != nil {
		t.Fatal(err)
	}
	vc, err := r.Get(vault.Key{Tier: "state", Key: "c"})
	if err != nil || !vc.Mtime.Equal(when) || vc.Ino != va.Ino {
		t.Fatalf("renamed: %v ino %d, want %v ino %d (%v)", vc.Mtime, vc.Ino, when, va.Ino, err)
	}
	now := time.Now()
	if _, err := r.Write(vault.Key{Tier: "state", Key: "c"}, []byte("new"), now); err != nil {
		t.Fatal(err)
	}
	if !mtime("c").Equal(now) {
		t.Fatalf("after a write: %v, want %v", mtime("c"), now)
	}
	// writing the anchored content back (unstaged) still shows the write's time
	later := now.Add(time.Second)
	if _, err := r.Write(vault.Key{Tier: "state", Key: "c"}, []byte("1"), later); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Get(vault.Key{Tier: "state", Key: "c"}); !v.Mtime.Equal(later) {
		t.Fatalf("after writing the anchored content back: %v (staged %v), want %v", v.Mtime, v.Staged, later)
	}
}

// TestAttrTableModel runs seeded random loads, puts and drops on an attrTable and on a map,
// the model it stands for, and checks after every step that both hold the same attributes.
func TestAttrTableModel(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		rec := func() attrRec {
			a := attrRec{HasPerm: rng.IntN(2) == 0, Perm: uint32(rng.IntN(0o777)), Chmod: rng.IntN(3) == 0, Ctime: rng.Int64()}
			if rng.IntN(3) == 0 {
				a.HasTimes, a.Mtime, a.Atime, a.Base = true, rng.Int64(), rng.Int64(), rng.Int64()
				a.BaseLeaf[rng.IntN(32)] = byte(rng.IntN(256))
			}
			return a
		}
		model := map[uint64]attrRec{}
		var tab attrTable
		for ino := uint64(100); ino < 160; ino++ {
			if rng.IntN(2) == 0 {
				continue
			}
			at := ino
			if rng.IntN(10) == 0 {
				at = 100 + uint64(rng.IntN(60)) // out of order, or a number loaded already
			}
			a := rec()
			tab.load(at, a)
			model[at] = a
		}
		tab.loaded()
		var inos []uint64
		for ino := uint64(90); ino < 170; ino++ {
			inos = append(inos, ino)
		}
		check := func(step string) { t.Helper(); matchesModel(t, seed, step, inos, tab.get, model) }
		check("the load")
		for step := 0; step < 300; step++ {
			ino := 90 + uint64(rng.IntN(80))
			if rng.IntN(3) == 0 {
				tab.del(ino)
				delete(model, ino)
				check(fmt.Sprintf("del %d", ino))
				continue
			}
			a := rec()
			tab.put(ino, a)
			model[ino] = a
			check(fmt.Sprintf("put %d", ino))
		}
	}
}

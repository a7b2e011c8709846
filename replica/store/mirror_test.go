package store

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// mapRoot is rows_root computed the plain way: every leaf, sorted by id.
func mapRoot(state map[string]common.Hash) common.Hash {
	var set leafSet
	var ch []leafChange
	for id, l := range state {
		ch = append(ch, leafChange{id: id, leaf: l})
	}
	sortChanges(ch)
	leaves := make([][32]byte, len(ch))
	for i, c := range ch {
		leaves[i] = c.leaf
	}
	set.reset(ch)
	if len(set.leaves()) != len(leaves) {
		panic("reset lost leaves")
	}
	return seal.MerkleRoot(leaves)
}

func TestLeafSetFollowsEpochs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	state := map[string]common.Hash{}
	var set leafSet
	for epoch := 0; epoch < 60; epoch++ {
		puts := map[string]common.Hash{}
		dels := map[string]seal.Deleted{}
		for i := 0; i < rng.IntN(40); i++ {
			id := fmt.Sprintf("state\x00\x00k%03d", rng.IntN(200))
			if rng.IntN(3) == 0 {
				dels[id] = seal.Deleted{}
			} else {
				puts[id] = crypto.Keccak256Hash([]byte{byte(epoch), byte(i)})
			}
		}
		ch := leafChanges(puts, dels)
		for id := range dels {
			delete(state, id)
		}
		for id, l := range puts {
			state[id] = l
		}
		root, n := set.rootWith(ch, false)
		if want := mapRoot(state); root != want || n != len(state) {
			t.Fatalf("epoch %d: root %x n %d, want %x n %d", epoch, root[:4], n, want[:4], len(state))
		}
		set.apply(ch)
		if got, _ := set.rootWith(nil, false); got != root || set.len() != len(state) {
			t.Fatalf("epoch %d: the set after apply hashes to %x", epoch, got[:4])
		}
		for id, l := range state {
			if got, ok := set.get(id); !ok || got != l {
				t.Fatalf("epoch %d: %q = %x %v", epoch, id, got[:4], ok)
			}
		}
	}
}

// TestMigrateMirrorBodies opens a database whose mirror records hold their bodies (layout 1)
// and finds every row, its size and its content as before.
func TestMigrateMirrorBodies(t *testing.T) {
	dir := t.TempDir()
	db, err := openBadger(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := []seal.Row{
		{Tier: "state", Key: "goal", Body: seal.BodyString("to write it all down")},
		{Tier: "entity", Category: cat("person"), Key: "ann", Body: seal.BodyString(`{"name":"ann"}`)},
		{Tier: "reference", Key: "null body"},
		{Tier: "journal", Key: "j1", TS: cat("2026-12-01T10:00:00Z"), Acted: cat("wrote")},
	}
	for i := 0; i < 2500; i++ { // more than one batch of the migration
		rows = append(rows, seal.Row{Tier: "state", Key: fmt.Sprintf("n%04d", i), Body: seal.BodyString(fmt.Sprint(i))})
	}
	for start := 0; start < len(rows); start += 500 { // a transaction holds a few hundred of them
		if err := writeLayout1(db, rows[start:min(start+500, len(rows))]); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	for pass := 0; pass < 2; pass++ { // the second open finds the layout current
		s, err := OpenStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			k := rowKey(&rows[i])
			v, err := s.Get(k)
			want := RenderContent(&rows[i])
			if err != nil || v.Size != int64(len(want)) || v.Leaf != seal.Leaf(&rows[i]) {
				t.Fatalf("pass %d: %s: %+v %v", pass, keyString(k), v, err)
			}
			if got, err := s.Content(k); err != nil || string(got) != string(want) {
				t.Fatalf("pass %d: %s content %q %v, want %q", pass, keyString(k), got, err, want)
			}
		}
		if s.leaves.len() != len(rows) {
			t.Fatalf("pass %d: %d leaves", pass, s.leaves.len())
		}
		s.Close()
	}
}

// writeLayout1 writes rows as mirror records of layout 1, their bodies inside them.
func writeLayout1(db *badger.DB, rows []seal.Row) error {
	return db.Update(func(txn *badger.Txn) error {
		for i := range rows {
			old := struct {
				Row    seal.Row     `json:"row"`
				Leaf   common.Hash  `json:"leaf"`
				Anchor vault.Anchor `json:"anchor"`
				Mtime  int64        `json:"mtime"`
			}{rows[i], seal.Leaf(&rows[i]), vault.Anchor{Seq: 1, Block: 10}, 1}
			if err := setJSON(txn, pMirror+rows[i].ID(), &old); err != nil {
				return err
			}
		}
		return nil
	})
}

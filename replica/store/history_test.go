package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// modelListing is what a directory should list, computed from a copy of the whole state.
func modelListing(state map[string]seal.Row, tier string, category *string) string {
	var out []string
	cats := map[string]bool{}
	for _, r := range state {
		if r.Tier != tier {
			continue
		}
		k := rowKey(&r)
		switch {
		case eqStrp(k.CategoryPtr(), category):
			out = append(out, k.Key)
		case category == nil && k.HasCategory:
			cats[k.Category] = true
		}
	}
	for c := range cats {
		out = append(out, c+"/")
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func sortedNames(ds []vault.Dirent) string {
	out := strings.Split(names(ds), ",")
	sort.Strings(out)
	return strings.Join(out, ",")
}

// TestHistoryMatchesModel applies random epochs (puts, deletions, rows with many versions,
// categories that empty and come back, the "" category beside null-category entities) and
// checks every history query at every block against a model of the state.
func TestHistoryMatchesModel(t *testing.T) {
	r := newTestStore(t)
	rng := rand.New(rand.NewPCG(7, 11))
	// No NUL in names: a canonical id joins its parts with NUL, so such names are ambiguous
	// to the whole vault, not only here.
	cats := []*string{nil, cat(""), cat("a"), cat("b"), cat("bb"), cat("zz")}
	keys := []string{"k1", "k2", "hot", "a"}
	state := map[string]seal.Row{}
	snaps := map[uint64]map[string]seal.Row{}
	var blocks []uint64
	block := uint64(10)
	for seq := uint64(1); seq <= 60; seq++ {
		var rows []seal.Row
		var dels []seal.Deleted
		// the hot row changes in every epoch: a long history for the reverse seeks
		rows = append(rows, seal.Row{Tier: "entity", Category: cat("a"), Key: "hot", Body: seal.BodyString(fmt.Sprint(seq))})
		for i := 0; i < 3; i++ {
			c, k := cats[rng.IntN(len(cats))], keys[rng.IntN(len(keys))]
			id := seal.CanonicalID("entity", c, k)
			if _, ok := state[id]; ok && rng.IntN(2) == 0 {
				dels = append(dels, seal.Deleted{Tier: "entity", Category: c, Key: k})
				continue
			}
			if c != nil && *c == "a" && k == "hot" {
				continue
			}
			rows = append(rows, seal.Row{Tier: "entity", Category: c, Key: k, Body: seal.BodyString(fmt.Sprint(seq, i))})
		}
		if seq%7 == 0 {
			for id, row := range state {
				if id != seal.CanonicalID("entity", cat("a"), "hot") && row.Category != nil && *row.Category == "b" {
					dels = append(dels, seal.Deleted{Tier: "entity", Category: row.Category, Key: row.Key})
				}
			}
		}
		dels = dedupeDels(dels, rows)
		p := plaintextFor(state, seq, rows, dels)
		if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: seq, Block: block, Digest: common.Hash{byte(seq)}}, p, ApplyOptions{}); err != nil {
			t.Fatalf("epoch %d: %v", seq, err)
		}
		snap := map[string]seal.Row{}
		for id, row := range state {
			snap[id] = row
		}
		snaps[block] = snap
		blocks = append(blocks, block)
		block += uint64(rng.IntN(4)) // one epoch in four shares its block with the next

	}
	stateAt := func(b uint64) map[string]seal.Row {
		best := map[string]seal.Row{}
		for _, eb := range blocks {
			if eb <= b {
				best = snaps[eb]
			}
		}
		return best
	}
	for b := uint64(0); b <= block+1; b++ {
		want := stateAt(b)
		h := r.Store.At(b)
		dirs := []*string{nil}
		dirs = append(dirs, cats[1:]...)
		for _, c := range dirs {
			ls, err := h.List("entity", c)
			if err != nil {
				t.Fatal(err)
			}
			if got, exp := sortedNames(ls), modelListing(want, "entity", c); got != exp {
				t.Fatalf("block %d, entity/%v: %q, want %q", b, c, got, exp)
			}
		}
		n := 0
		for _, c := range cats[1:] {
			has := strings.Contains(","+modelListing(want, "entity", nil)+",", ","+*c+"/,")
			if has {
				n++
			}
			if h.HasCategory(*c) != has {
				t.Fatalf("block %d: HasCategory(%q) = %v", b, *c, !has)
			}
		}
		if got, err := h.CategoryCount(); err != nil || got != n {
			t.Fatalf("block %d: CategoryCount %d, %v; want %d", b, got, err, n)
		}
		// the count as recorded by each epoch, and as counted without the records
		var counted int
		var recorded bool
		err := r.Store.db.View(func(txn *badger.Txn) error {
			var err error
			if _, recorded, err = h.recordedCategoryCount(txn); err != nil {
				return err
			}
			counted, err = h.countCategories(txn)
			return err
		})
		if err != nil || counted != n || recorded != (b >= blocks[0]) {
			t.Fatalf("block %d: counted %d (want %d), recorded %v, %v", b, counted, n, recorded, err)
		}
		for id, row := range want {
			body, err := h.Content(rowKey(&row))
			if err != nil || string(body) != string(row.Body.Bytes()) {
				t.Fatalf("block %d, %q: %q, %v; want %q", b, id, body, err, row.Body.Bytes())
			}
			// Read is Get and Content in one find
			v, err := h.Get(rowKey(&row))
			rv, rbody, rerr := h.Read(rowKey(&row))
			if err != nil || rerr != nil || string(rbody) != string(body) || !reflect.DeepEqual(rv, v) {
				t.Fatalf("block %d, %q: Read gives %+v %q %v; Get and Content %+v %q %v", b, id, rv, rbody, rerr, v, body, err)
			}
		}
	}
}

// dedupeDels drops deletions of rows the same epoch puts, and repeats.
func dedupeDels(dels []seal.Deleted, rows []seal.Row) []seal.Deleted {
	put := map[string]bool{}
	for _, r := range rows {
		put[r.ID()] = true
	}
	var out []seal.Deleted
	for _, d := range dels {
		if !put[d.ID()] {
			put[d.ID()] = true
			out = append(out, d)
		}
	}
	return out
}

// TestDeletedHistPrefix pins what the walks rely on to skip deletions without decoding them,
// in both layouts; a row's record starts otherwise, its row null or not.
func TestDeletedHistPrefix(t *testing.T) {
	del := &histRec{Anchor: vault.Anchor{Seq: 1}, Mtime: 5}
	live := &histRec{Row: &seal.Row{Tier: "state", Key: "k", Body: seal.BodyString("null")}}
	for _, enc := range []struct {
		prefix []byte
		encode func(*histRec) []byte
	}{
		{histDeletedPrefix, func(h *histRec) []byte { return encodeRecord(h) }},
		{jsonDeletedPrefix, func(h *histRec) []byte { b, _ := json.Marshal(h); return b }},
	} {
		if b := enc.encode(del); !bytes.HasPrefix(b, enc.prefix) {
			t.Fatalf("a deletion encodes as %q", b)
		}
		if b := enc.encode(live); bytes.HasPrefix(b, enc.prefix) {
			t.Fatalf("a row encodes as %q", b)
		}
	}
}

// TestCategoryCountFromPrevious: an epoch's apply counts the entity categories from the count
// the epoch before it recorded, looking only at the categories it touches; an epoch sharing
// its block with the one before counts them all. A wrong count planted on epoch 1 shows which
// way each epoch counted.
func TestCategoryCountFromPrevious(t *testing.T) {
	r := newTestStore(t)
	state := map[string]seal.Row{}
	apply := func(seq, block uint64, rows []seal.Row, dels []seal.Deleted) {
		t.Helper()
		p := plaintextFor(state, seq, rows, dels)
		if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: seq, Block: block, Digest: common.Hash{byte(seq)}}, p, ApplyOptions{}); err != nil {
			t.Fatalf("epoch %d: %v", seq, err)
		}
	}
	recorded := func(block uint64) int {
		t.Helper()
		n, err := r.Store.At(block).CategoryCount()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	row := func(c, k string) seal.Row {
		return seal.Row{Tier: "entity", Category: cat(c), Key: k, Body: seal.BodyString(`"` + k + `"`)}
	}
	apply(1, 10, []seal.Row{row("a", "x"), row("a", "y")}, nil)
	if got := recorded(10); got != 1 {
		t.Fatalf("after epoch 1: %d categories, want 1", got)
	}
	err := r.Store.db.Update(func(txn *badger.Txn) error {
		return txn.Set(append(append([]byte(pCategoryCount), be64(10)...), be64(1)...), []byte("5"))
	})
	if err != nil {
		t.Fatal(err)
	}
	apply(2, 11, []seal.Row{row("b", "z")}, nil) // a new category: 5 + 1
	if got := recorded(11); got != 6 {
		t.Fatalf("after epoch 2: %d categories, want 6 (counted from epoch 1's 5)", got)
	}
	apply(3, 12, []seal.Row{row("a", "w")}, []seal.Deleted{{Tier: "entity", Category: cat("b"), Key: "z"}}) // b empties: 6 - 1
	if got := recorded(12); got != 5 {
		t.Fatalf("after epoch 3: %d categories, want 5", got)
	}
	apply(4, 12, []seal.Row{row("c", "v")}, nil) // same block as epoch 3: counted whole
	if got := recorded(12); got != 2 {
		t.Fatalf("after epoch 4 (block shared with epoch 3): %d categories, want 2 (a and c, counted whole)", got)
	}
}

// TestHistoryReadTakesWhatGetFound: the read that follows a lookup at the same block takes the
// version the lookup found, once, and shows the same row; a read of another row or at another
// block, a second read, and a row over foundMax find theirs again.
func TestHistoryReadTakesWhatGetFound(t *testing.T) {
	r := newTestStore(t)
	small := seal.Row{Tier: "entity", Category: cat("c"), Key: "small", Body: seal.BodyString(`{"v":1}`)}
	big := seal.Row{Tier: "entity", Category: cat("c"), Key: "big", Body: seal.BodyString(strings.Repeat("b", foundMax+1))}
	other := seal.Row{Tier: "state", Key: "other", Body: seal.BodyString("other body")}
	p := plaintextFor(map[string]seal.Row{}, 1, []seal.Row{small, big, other}, nil)
	if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 1, Block: 10, Digest: common.Hash{1}}, p, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	key := func(row seal.Row) vault.Key { return rowKey(&row) }
	h := r.At(10)
	if _, err := h.Get(key(small)); err != nil || r.histFound.rec == nil {
		t.Fatalf("Get of a small row: %v, kept %v", err, r.histFound.rec != nil)
	}
	if got, err := h.Content(key(other)); err != nil || string(got) != "other body" || r.histFound.rec == nil {
		t.Fatalf("Content of another row after it: %q, %v; the small row's kept: %v", got, err, r.histFound.rec != nil)
	}
	if got, err := r.At(11).Content(key(small)); err != nil || string(got) != `{"v":1}` || r.histFound.rec == nil {
		t.Fatalf("Content of the row at another block: %q, %v; the one kept at block 10 still kept: %v", got, err, r.histFound.rec != nil)
	}
	v, got, err := h.Read(key(small))
	if err != nil || string(got) != `{"v":1}` || v.Key != key(small) || v.Size != int64(len(got)) || r.histFound.rec != nil {
		t.Fatalf("Read after the Get: %+v, %q, %v; still kept: %v", v, got, err, r.histFound.rec != nil)
	}
	if _, got, err := h.Read(key(small)); err != nil || string(got) != `{"v":1}` {
		t.Fatalf("a second Read, found again: %q, %v", got, err)
	}
	if _, err := h.Get(key(big)); err != nil || r.histFound.rec != nil {
		t.Fatalf("Get of a row over %d bytes: %v; kept: %v", foundMax, err, r.histFound.rec != nil)
	}
	if got, err := h.Content(key(big)); err != nil || len(got) != foundMax+1 {
		t.Fatalf("Content of that row: %d bytes, %v", len(got), err)
	}
}

// TestHistoryMetaTellsDeletions: every version an epoch writes to the history says in its user
// meta whether it is a deletion, which the walks take without reading the record; a version
// written before the meta (0) is read, and tells the same.
func TestHistoryMetaTellsDeletions(t *testing.T) {
	r := newTestStore(t)
	state := map[string]seal.Row{}
	live := seal.Row{Tier: "entity", Category: cat("kept"), Key: "k", Body: seal.BodyString("kept")}
	gone := seal.Row{Tier: "entity", Category: cat("gone"), Key: "k", Body: seal.BodyString("gone")}
	if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 1, Block: 10, Digest: common.Hash{1}}, plaintextFor(state, 1, []seal.Row{live, gone}, nil), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	del := []seal.Deleted{{Tier: "entity", Category: cat("gone"), Key: "k"}}
	if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 2, Block: 20, Digest: common.Hash{2}}, plaintextFor(state, 2, nil, del), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	metas := map[string]byte{}
	err := r.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pHistory)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			metas[fmt.Sprintf("%s@%d", strings.ReplaceAll(string(k[len(pHistory):len(k)-17]), "\x00", "/"), beUint64(k[len(k)-16:]))] = it.Item().UserMeta()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]byte{"entity/kept/k@10": histMetaLive, "entity/gone/k@10": histMetaLive, "entity/gone/k@20": histMetaDeleted}
	if !maps.Equal(metas, want) {
		t.Fatalf("the history's user metas: %v, want %v", metas, want)
	}
	check := func(when string) {
		t.Helper()
		if !r.At(15).HasCategory("gone") || r.At(25).HasCategory("gone") || !r.At(25).HasCategory("kept") {
			t.Errorf("%s: category gone at 15 %v, at 25 %v; kept at 25 %v; want true, false, true", when,
				r.At(15).HasCategory("gone"), r.At(25).HasCategory("gone"), r.At(25).HasCategory("kept"))
		}
		if n, err := r.At(25).CategoryCount(); err != nil || n != 1 {
			t.Errorf("%s: %d categories at 25 (%v), want 1", when, n, err)
		}
	}
	check("with the metas")
	// as an earlier version wrote them: the same records, no meta
	err = r.db.Update(func(txn *badger.Txn) error {
		for _, v := range []struct {
			id         string
			block, seq uint64
		}{{"entity\x00gone\x00k", 10, 1}, {"entity\x00gone\x00k", 20, 2}, {"entity\x00kept\x00k", 10, 1}} {
			e := historyEntry(v.id, v.block, v.seq, &histRec{})
			item, err := txn.Get(e.Key)
			if err != nil {
				return err
			}
			b, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if err := txn.Set(e.Key, b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	check("without them")
}

// TestCategoryCountMatchesModel: random epochs put and delete entity rows across a few
// categories, the "" category and none (whose ids look alike), and state rows, some sharing a
// block with the epoch before, some applied in batches; after each, the count recorded at its block is the number of categories the model
// holds a row of. The shortcuts (a category an epoch puts into has a row after it; one whose
// row the mirror held had one before it) must agree with walking the categories.
func TestCategoryCountMatchesModel(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 5))
		r := newTestStore(t)
		if seed%3 == 2 {
			r.batchLimits = idsPerBatch(2)
		}
		state := map[string]seal.Row{}
		cats := []*string{nil, cat(""), cat("c0"), cat("c1"), cat("c2")}
		block := uint64(10)
		for seq := uint64(1); seq <= 40; seq++ {
			var rows []seal.Row
			var dels []seal.Deleted
			touched := map[string]bool{}
			for range 1 + rng.IntN(6) {
				c, k := cats[rng.IntN(len(cats))], fmt.Sprintf("k%d", rng.IntN(3))
				row := seal.Row{Tier: "entity", Category: c, Key: k, Body: seal.BodyString(fmt.Sprintf(`"%d"`, rng.IntN(1000)))}
				if rng.IntN(8) == 0 {
					row = seal.Row{Tier: "state", Key: k, Body: seal.BodyString(`"s"`)}
				}
				if touched[row.ID()] {
					continue
				}
				touched[row.ID()] = true
				if _, live := state[row.ID()]; live && rng.IntN(2) == 0 {
					dels = append(dels, seal.Deleted{Tier: row.Tier, Category: row.Category, Key: row.Key})
				} else {
					rows = append(rows, row)
				}
			}
			if rng.IntN(5) > 0 {
				block++
			}
			p := plaintextFor(state, seq, rows, dels)
			if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: seq, Block: block, Digest: common.Hash{byte(seq)}}, p, ApplyOptions{}); err != nil {
				t.Fatalf("seed %d epoch %d: %v", seed, seq, err)
			}
			want := map[string]bool{}
			for _, row := range state {
				if row.Tier == "entity" && row.Category != nil {
					want[*row.Category] = true
				}
			}
			got, err := r.Store.At(block).CategoryCount()
			if err != nil {
				t.Fatal(err)
			}
			if got != len(want) {
				t.Fatalf("seed %d, after epoch %d at block %d: %d categories recorded, the model has %d", seed, seq, block, got, len(want))
			}
		}
	}
}

package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// largestEpoch is the epoch of the most of rows (a prefix; rows are in id order and leaves are
// their leaves) that seals into the largest bucket, with its real root and row count, sealed
// and opened again as a pull would. One row more does not fit the bucket. The search
// interpolates on the compressed size, which grows about linearly with the rows, so it
// compresses a handful of candidates rather than one per step of a bisection.
func largestEpoch(t *testing.T, r *testStore, rows []seal.Row, leaves [][32]byte, seq uint64, snapshot bool) *seal.Plaintext {
	t.Helper()
	largest := seal.Buckets[len(seal.Buckets)-1]
	plain := func(n int) *seal.Plaintext {
		return &seal.Plaintext{Tenant: r.vault.Tenant, Space: r.vault.Space, Seq: seq, Rows: rows[:n],
			RowsRoot: seal.MerkleRoot(leaves[:n]), NRows: n, CreatedAt: "2026-12-01T10:00:00Z", Snapshot: snapshot}
	}
	sizes := map[int]int{} // n rows: compressed bytes and the length word, as a bucket holds them
	size := func(n int) int {
		if s, ok := sizes[n]; ok {
			return s
		}
		s := len(seal.Compress(seal.EncodePlaintext(plain(n)))) + 4
		sizes[n] = s
		return s
	}
	lo, hi := 0, len(rows) // lo rows fit, hi do not
	if size(hi) <= largest {
		t.Fatalf("%d rows fit one bucket: give the test more", hi)
	}
	lastFit, sameSide := false, 0
	for hi-lo > 1 {
		n := lo + int(int64(largest-size(lo))*int64(hi-lo)/int64(size(hi)-size(lo)))
		if sameSide >= 2 {
			// interpolation keeps landing on one side: bisect once
			n, sameSide = (lo+hi)/2, 0
		}
		n = min(max(n, lo+1), hi-1)
		fit := size(n) <= largest
		if fit {
			lo = n
		} else {
			hi = n
		}
		if fit == lastFit {
			sameSide++
		} else {
			sameSide = 0
		}
		lastFit = fit
	}
	if size(lo+1) <= largest {
		t.Fatalf("%d rows fit the largest bucket too", lo+1)
	}
	t.Logf("the largest epoch of tiny rows holds %d (%d bytes in a bucket of %d; %d with one row more), %d sizes tried",
		lo, size(lo), largest, size(lo+1), len(sizes))
	p := plain(lo)
	var nonce [12]byte
	ctx := r.epochContext(p.Seq, p.Prev)
	sealed, err := seal.Seal(p, ctx, r.dek, nil, 0, nonce)
	if err != nil {
		t.Fatalf("seal %d rows: %v", len(p.Rows), err)
	}
	if sealed.Bucket != largest {
		t.Fatalf("bucket %d, want the largest", sealed.Bucket)
	}
	opened, err := seal.Open(sealed.Blob, r.dek, ctx)
	if err != nil {
		t.Fatal(err)
	}
	return opened.Plaintext
}

// idsPerBatch is a batch budget of n tiny rows (their changes counted at the most each can
// write), so that a test epoch of a few thousand is applied in a few batches.
func idsPerBatch(n int64) func() (int64, int64) {
	row := TinyRows(1, "")[0]
	c, k := changeCost(row.Tier, row.Category, row.Key+"ffff")
	fixed := int64(8 * entryCost(64))
	return func() (int64, int64) { return fixed + n*c, 8 + n*k }
}

func countBatches(s *Store) *int {
	n := new(int)
	s.applyHook = func(batch int) error { *n = batch; return nil }
	return n
}

func TestApplyLargestEpoch(t *testing.T) {
	all := TinyRows(30000, "")
	leaves := make([][32]byte, len(all))
	for i := range all {
		leaves[i] = seal.Leaf(&all[i])
	}
	chunks, err := seal.ChunkDiff(all, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, snapshot := range []bool{false, true} {
		t.Run(map[bool]string{false: "diff", true: "snapshot"}[snapshot], func(t *testing.T) {
			t.Parallel() // all, leaves and chunks are only read
			r := newTestStore(t)
			state := map[string]seal.Row{}
			seq := uint64(1)
			var old []seal.Row
			if snapshot {
				// a state the snapshot replaces: some rows it keeps, some it changes, some it drops
				old = TinyRows(3000, "o")
				for i := 1500; i < len(old); i++ {
					old[i].Tier = seal.TierReference // gone from the snapshot
				}
				seal.SortByID(old)
				p := plaintextFor(state, 1, old, nil)
				if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 1, Block: 10, Digest: common.Hash{1}}, p, ApplyOptions{}); err != nil {
					t.Fatal(err)
				}
				seq = 2
			}
			p := largestEpoch(t, r, all, leaves, seq, snapshot)
			n := len(p.Rows)
			rows := all[:n]
			t.Logf("seal's chunking puts %d tiny rows in one epoch", len(chunks[0].Rows))
			if n < len(chunks[0].Rows) {
				t.Fatalf("the bucket holds fewer rows (%d) than a chunk (%d)", n, len(chunks[0].Rows))
			}
			batches := countBatches(r.Store)
			start := time.Now()
			changed, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: seq, Block: 20, Digest: common.Hash{2}}, p, ApplyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("applied %d rows in %d batches in %v", n, *batches, time.Since(start))
			if *batches < 2 {
				t.Fatalf("%d batches: the epoch should not fit one transaction", *batches)
			}
			if len(changed) < n {
				t.Fatalf("%d keys changed, want at least %d", len(changed), n)
			}
			if h, _ := r.MirrorHead(); h.Seq != seq || h.Digest != (common.Hash{2}) {
				t.Fatalf("head %+v", h)
			}
			CheckRows(t, r.Store, rows)
			ls, _ := r.List(seal.TierState, nil)
			if len(ls) != n {
				t.Fatalf("state/ lists %d files, want %d", len(ls), n)
			}
			if snapshot {
				// the old rows the snapshot does not hold are gone, live and at its block
				for _, row := range old {
					if row.Tier != seal.TierReference {
						continue
					}
					if _, err := r.Get(rowKey(&row)); !errors.Is(err, vault.ErrNotFound) {
						t.Fatalf("%s survived the snapshot: %v", row.Key, err)
					}
				}
				if body, err := r.At(10).Content(rowKey(&old[len(old)-1])); err != nil || string(body) != "o" {
					t.Fatalf("history before the snapshot: %q, %v", body, err)
				}
			}
			// the root agrees with the anchored one, and the rows are there after a reopen
			if got := r.leaves.len(); got != n {
				t.Fatalf("%d leaves, want %d", got, n)
			}
			var rt [32]byte
			r.t.mu.RLock()
			rt, _ = r.leaves.rootWith(nil, false)
			r.t.mu.RUnlock()
			if rt != p.RowsRoot {
				t.Fatal("the leaves after the apply do not hash to the anchored root")
			}
			r = reopen(t, r)
			CheckRows(t, r.Store, rows)
		})
	}
}

// reopen closes r and opens its home again.
func reopen(t *testing.T, r *testStore) *testStore {
	t.Helper()
	r.Close()
	r2 := &testStore{dir: r.dir, dek: r.dek, owner: r.owner, vault: r.vault}
	r2.open(t)
	return r2
}

func localNames(t *testing.T, s *Store) []string {
	t.Helper()
	ls, err := s.List(seal.TierState, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ls {
		if d.Local {
			out = append(out, d.Name)
		}
	}
	sort.Strings(out)
	return out
}

func TestApplyCrashMidEpoch(t *testing.T) {
	for _, stopAfter := range []int{1, 3, 0} { // 0: the last batch, before the head moves
		t.Run(fmt.Sprintf("after-batch-%d", stopAfter), func(t *testing.T) {
			r := newTestStore(t)
			state := map[string]seal.Row{}
			p1 := plaintextFor(state, 1, TinyRows(400, "o"), nil)
			if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 1, Block: 10, Digest: common.Hash{1}}, p1, ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			// local edits of a row in the first batch and of one in the last: each becomes
			// exactly one conflict copy, crash or not
			rows := TinyRows(400, "n")
			first, last := rows[0], rows[len(rows)-1]
			mustWrite(t, r.Store, rowKey(&first), "mine-first")
			mustWrite(t, r.Store, rowKey(&last), "mine-last")
			p2 := plaintextFor(state, 2, rows[:390], []seal.Deleted{{Tier: seal.TierState, Key: rows[395].Key}})
			r.batchLimits = idsPerBatch(50)
			total := len(r.applyBatches(r.prepareApply(vault.EpochInfo{Seq: 2}, p2, ApplyOptions{})))
			if total < 5 || total > 12 {
				t.Fatalf("%d batches, want about 8", total)
			}
			stop := stopAfter
			if stop == 0 {
				stop = total
			}
			r.applyHook = func(batch int) error {
				if batch == stop {
					return errors.New("simulated crash")
				}
				return nil
			}
			_, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 2, Block: 20, Digest: common.Hash{2}}, p2, ApplyOptions{})
			if err == nil || !strings.Contains(err.Error(), "simulated crash") || !strings.Contains(err.Error(), "reopen the store") {
				t.Fatalf("apply: %v", err)
			}
			// half an epoch is never served: reads and writes refuse until the store reopens
			if _, err := r.Content(rowKey(&rows[1])); err == nil {
				t.Fatal("a read after a stopped apply must fail")
			}
			if _, err := r.Write(vault.Key{Tier: seal.TierState, Key: "new"}, []byte("x"), time.Now()); err == nil {
				t.Fatal("a write after a stopped apply must fail")
			}
			r = reopen(t, r)
			if h, _ := r.MirrorHead(); h.Seq != 2 || h.Digest != (common.Hash{2}) {
				t.Fatalf("head after the reopen: %+v", h)
			}
			CheckRows(t, r.Store, rows[1:390])
			if _, err := r.Get(rowKey(&rows[395])); !errors.Is(err, vault.ErrNotFound) {
				t.Fatalf("the deleted row: %v", err)
			}
			if body, _ := r.Content(rowKey(&rows[394])); string(body) != "o" {
				t.Fatalf("a row the epoch left alone: %q", body)
			}
			// the staged edit of a row the epoch changed is a conflict; the other stays staged
			if body, _ := r.Content(rowKey(&first)); string(body) != "n" {
				t.Fatalf("the chain's version must stand: %q", body)
			}
			if v, _ := r.Get(rowKey(&last)); v == nil || !v.Staged {
				t.Fatalf("a staged row the epoch did not touch stays staged: %+v", v)
			}
			if got := localNames(t, r.Store); len(got) != 1 || got[0] != "."+first.Key+".conflict-2" {
				t.Fatalf("conflict copies: %v", got)
			}
			var conflicts []vault.Conflict
			if err := r.getState(kConflict, &conflicts); err != nil || len(conflicts) != 1 {
				t.Fatalf("conflicts %+v, %v", conflicts, err)
			}
			if r.leaves.len() != 400-1 {
				t.Fatalf("%d leaves", r.leaves.len())
			}
			r.t.mu.RLock()
			rt, _ := r.leaves.rootWith(nil, false)
			r.t.mu.RUnlock()
			if rt != p2.RowsRoot {
				t.Fatal("the finished state does not hash to the anchored root")
			}
			err = r.db.View(func(txn *badger.Txn) error {
				found := false
				err := scanValues(txn, "x/applying", func(_, _ []byte) error { found = true; return nil })
				if found {
					return errors.New("the apply marker is left behind")
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			// the next epoch follows as usual
			p3 := plaintextFor(state, 3, []seal.Row{{Tier: seal.TierState, Key: "after", Body: seal.BodyString("z")}}, nil)
			if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 3, Block: 30, Digest: common.Hash{3}}, p3, ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A crash while the marker's plaintext was being written, before the marker itself: nothing
// of the epoch was written, and the pieces are deleted on open.
func TestApplyOrphanPiecesDeleted(t *testing.T) {
	r := newTestStore(t)
	if err := r.db.Update(func(txn *badger.Txn) error { return txn.Set(applyPieceKey(0), []byte("partial")) }); err != nil {
		t.Fatal(err)
	}
	r = reopen(t, r)
	err := r.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(applyPieceKey(0))
		return err
	})
	if !errors.Is(err, badger.ErrKeyNotFound) {
		t.Fatalf("an orphan piece: %v", err)
	}
	if h, _ := r.MirrorHead(); h.Seq != 0 {
		t.Fatalf("head %+v", h)
	}
}

func TestApplyBatchBudget(t *testing.T) {
	r := newTestStore(t)
	rows := TinyRows(11, "")
	c, n := changeCost(rows[0].Tier, rows[0].Category, rows[0].Key)
	for _, row := range rows {
		if cc, _ := changeCost(row.Tier, row.Category, row.Key); cc != c {
			t.Fatal("the test wants rows of one cost")
		}
	}
	fixed := int64(8 * entryCost(64))
	for _, tc := range []struct {
		size, count int64
		want        int
	}{
		{fixed + 10*c, 8 + 10*n, 2},     // at the budget: ten rows, then one
		{fixed + 10*c - 1, 8 + 10*n, 2}, // just below it: nine, then two
		{fixed + 11*c, 8 + 11*n, 1},     // just above: all eleven
		{fixed + 11*c, 8 + 11*n - 1, 2}, // the entry count binds as well
	} {
		r.batchLimits = func() (int64, int64) { return tc.size, tc.count }
		p := plaintextFor(map[string]seal.Row{}, 1, rows, nil)
		b := r.applyBatches(r.prepareApply(vault.EpochInfo{Seq: 1}, p, ApplyOptions{}))
		if len(b) != tc.want {
			t.Fatalf("budget %d/%d: %d batches, want %d", tc.size, tc.count, len(b), tc.want)
		}
		if tc.size == fixed+10*c-1 && len(b[0]) != 9 {
			t.Fatalf("below the budget the first batch holds %d", len(b[0]))
		}
	}
	// badger's own limits, which a batch stays well under
	if r.db.MaxBatchSize() < 512<<10 || r.db.MaxBatchCount() < 4*9 {
		t.Fatalf("badger allows %d bytes, %d entries", r.db.MaxBatchSize(), r.db.MaxBatchCount())
	}
	t.Logf("badger allows %d bytes and %d entries a transaction; a tiny row costs at most %d bytes, %d entries", r.db.MaxBatchSize(), r.db.MaxBatchCount(), c, n)
}

func TestApplyKeyLimit(t *testing.T) {
	// a state key of plain letters: its longest badger key is the conflict copy's inode name,
	// 42 bytes more than the key
	at := MaxKeyBytes - 42
	for _, tc := range []struct {
		n  int
		ok bool
	}{{at - 1, true}, {at, true}, {at + 1, false}} {
		key := strings.Repeat("k", tc.n)
		p := &seal.Plaintext{Rows: []seal.Row{{Tier: seal.TierState, Key: "a", Body: seal.BodyString("x")}, {Tier: seal.TierState, Key: key, Body: seal.BodyString("x")}}}
		err := CheckApplicable(p)
		if tc.ok != (err == nil) {
			t.Fatalf("key of %d bytes: %v", tc.n, err)
		}
		if err != nil {
			if !errors.Is(err, ErrApplyLimit) || !strings.Contains(err.Error(), "row 1 (state tier) cannot be applied: its key is") ||
				!strings.Contains(err.Error(), "more than the 65000 a key may hold") || strings.Contains(err.Error(), "kkkk") {
				t.Fatalf("message: %.300s", err)
			}
		}
		d := &seal.Plaintext{Deleted: []seal.Deleted{{Tier: seal.TierState, Key: key}}}
		if err := CheckApplicable(d); tc.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "deletion 0 (state tier)")) {
			t.Fatalf("deletion of a key of %d bytes: %v", tc.n, err)
		}
	}
	// "/" takes three bytes in a conflict copy's name
	if err := CheckApplicable(&seal.Plaintext{Rows: []seal.Row{{Tier: seal.TierState, Key: strings.Repeat("/", at/3+1)}}}); err == nil {
		t.Fatal("a key of slashes whose conflict copy passes the limit")
	}
	// a row at the limit really applies, conflict copy and all
	r := newTestStore(t)
	state := map[string]seal.Row{}
	key := vault.Key{Tier: seal.TierState, Key: strings.Repeat("k", at)}
	p1 := plaintextFor(state, 1, []seal.Row{{Tier: seal.TierState, Key: key.Key, Body: seal.BodyString("v1")}}, nil)
	if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 1, Block: 10}, p1, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, r.Store, key, "mine")
	p2 := plaintextFor(state, 2, []seal.Row{{Tier: seal.TierState, Key: key.Key, Body: seal.BodyString("v2")}}, nil)
	if _, conflicts, err := r.ApplyEpoch(vault.EpochInfo{Seq: 2, Block: 20}, p2, ApplyOptions{}); err != nil || len(conflicts) != 1 {
		t.Fatalf("conflicts %d, %v", len(conflicts), err)
	}
	// one past it is refused whole, before anything is written
	long := seal.Row{Tier: seal.TierState, Key: strings.Repeat("k", at+1), Body: seal.BodyString("x")}
	p3 := plaintextFor(state, 3, []seal.Row{{Tier: seal.TierState, Key: "fine", Body: seal.BodyString("x")}, long}, nil)
	if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 3, Block: 30}, p3, ApplyOptions{}); !errors.Is(err, ErrApplyLimit) ||
		!strings.HasPrefix(err.Error(), "epoch 3: row 1 (state tier) cannot be applied") {
		t.Fatalf("apply: %.300v", err)
	}
	if _, err := r.Get(vault.Key{Tier: seal.TierState, Key: "fine"}); !errors.Is(err, vault.ErrNotFound) {
		t.Fatal("a refused epoch must apply nothing")
	}
}

// TestApplyValueLimit: a row is refused when its history record, with the largest anchor,
// would pass badger's largest value less the margin, at and below that accepted.
func TestApplyValueLimit(t *testing.T) {
	row := func(n int) *seal.Row {
		return &seal.Row{Tier: seal.TierState, Key: "big", Body: seal.BodyOf(make([]byte, n))}
	}
	at := sort.Search(valueLogFileSize+1, func(n int) bool { return rowLimit(row(n)) != "" }) - 1
	largest := histRec{Row: row(at), Anchor: vault.Anchor{Seq: math.MaxUint64, Block: math.MaxUint64, Tx: "0x" + strings.Repeat("ab", 32)}, Mtime: math.MinInt64}
	if n := len(encodeRecord(&largest)); n+1024 > valueLogFileSize || n+1024+1 <= valueLogFileSize {
		t.Fatalf("a body of %d bytes: its history record is %d bytes, the limit %d less 1024", at, n, valueLogFileSize)
	}
	for _, tc := range []struct {
		n  int
		ok bool
	}{{at - 1, true}, {at, true}, {at + 1, false}} {
		why := rowLimit(row(tc.n))
		if tc.ok != (why == "") {
			t.Fatalf("body of %d: %q", tc.n, why)
		}
		if why != "" && !strings.Contains(why, fmt.Sprintf("its history record is %d bytes, more than the %d a value may hold", histRecLen(row(at+1), txHashLen), valueLogFileSize)) {
			t.Fatalf("message: %.200s", why)
		}
	}
}

// TestHistRecLen: the measured length of a history record is its length in the binary
// layout with the largest anchor and time, for rows of every shape.
func TestHistRecLen(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 16383, 16384, 1<<63 - 1, 1 << 63, math.MaxUint64} {
		if got, want := uvarintLen(v), len(binary.AppendUvarint(nil, v)); got != want {
			t.Fatalf("uvarintLen(%d) = %d, want %d", v, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for i := 0; i < 2000; i++ {
		r := randomRow(rng)
		tx := "0x" + strings.Repeat("c", rng.IntN(80))
		rec := histRec{Row: &r, Anchor: vault.Anchor{Seq: math.MaxUint64, Block: math.MaxUint64, Tx: tx}, Mtime: math.MinInt64}
		if got, want := histRecLen(&r, len(tx)), len(encodeRecord(&rec)); got != want {
			t.Fatalf("row %d measures %d, its record is %d bytes", i, got, want)
		}
	}
}

// TestJournalFits: the journal entry of an epoch is refused when its rows' names and its
// transaction would pass the largest value badger holds, at one byte past the limit and not at
// it, and the entry at the limit, encoded, is a value badger takes.
func TestJournalFits(t *testing.T) {
	blob := 100 << 10
	ids := func(n int) []string { return []string{strings.Repeat("k", n)} }
	at := valueLogFileSize - 4*(blob+1024)/3 - 4096 - len(`[""]`)
	if err := JournalFits(ids(at), blob); err != nil {
		t.Fatal(err)
	}
	err := JournalFits(ids(at+1), blob)
	if !errors.Is(err, ErrApplyLimit) || !strings.Contains(err.Error(), "the push journal holds at most") {
		t.Fatalf("above the limit: %v", err)
	}
	// a name that JSON escapes counts as escaped
	if err := JournalFits([]string{strings.Repeat("\x00", at/6+1)}, blob); err == nil {
		t.Fatal("names escaped past the limit fit")
	}
	entry := mustJSON(t, &PendingPush{Seq: 1 << 60, Bucket: 98304, Stage: JournalReceipt, Block: 1 << 60, RawTx: make([]byte, blob+1024), IDs: ids(at)})
	if len(entry) > valueLogFileSize {
		t.Fatalf("a journal entry of %d bytes at the limit", len(entry))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

package seal

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// checkChunks verifies the chunker's contract against the exact one-shot
// measure: order kept, deletions ahead of rows, every chunk within the
// limit, and every chunk but the last closed only because the next item
// would not fit.
func checkChunks(t *testing.T, rows []Row, dels []Deleted, chunks []Chunk) {
	t.Helper()
	var gotRows []Row
	var gotDels []Deleted
	seenRow := false
	for i, c := range chunks {
		if len(c.Rows) == 0 && len(c.Deleted) == 0 {
			t.Fatalf("chunk %d is empty", i)
		}
		if len(c.Deleted) > 0 && seenRow {
			t.Fatalf("chunk %d carries deletions after rows were sent", i)
		}
		if len(c.Rows) > 0 {
			seenRow = true
		}
		gotRows = append(gotRows, c.Rows...)
		gotDels = append(gotDels, c.Deleted...)
		if m := chunkMeasure(c.Rows, c.Deleted); m > MaxDiffBytes {
			t.Fatalf("chunk %d measures %d > %d", i, m, MaxDiffBytes)
		}
		if i+1 < len(chunks) {
			next := chunks[i+1]
			r, d := c.Rows, c.Deleted
			if len(c.Rows) == 0 && len(next.Deleted) > 0 {
				d = append(d[:len(d):len(d)], next.Deleted[0])
			} else {
				r = append(r[:len(r):len(r)], next.Rows[0])
			}
			if m := chunkMeasure(r, d); m <= MaxDiffBytes {
				t.Fatalf("chunk %d closed early: with the next item it measures %d", i, m)
			}
		}
	}
	if len(rows) == 0 {
		rows = nil
	}
	if len(dels) == 0 {
		dels = nil
	}
	if !reflect.DeepEqual(gotRows, rows) || !reflect.DeepEqual(gotDels, dels) {
		t.Fatalf("chunks do not add up to the input in order")
	}
}

func TestChunkDiffEmptyAndSmall(t *testing.T) {
	chunks, err := ChunkDiff(nil, nil)
	if chunks != nil || err != nil {
		t.Fatalf("empty: %v %v", chunks, err)
	}
	rows := proseRows(1, 5, 300)
	dels := []Deleted{{Tier: TierEntity, Category: strp("notes"), Key: "gone"}, {Tier: TierState, Key: "old"}}
	chunks, err = ChunkDiff(rows, dels)
	if err != nil || len(chunks) != 1 {
		t.Fatalf("small: %d chunks, %v", len(chunks), err)
	}
	checkChunks(t, rows, dels, chunks)
	chunks, err = ChunkDiff(nil, dels)
	if err != nil || len(chunks) != 1 || len(chunks[0].Rows) != 0 {
		t.Fatalf("deletions only: %+v %v", chunks, err)
	}
}

func TestChunkDiffSplitPoints(t *testing.T) {
	// Noise rows of 40,000 characters gzip to about 30 KB each: three fit
	// under 92,160 with the headroom, four do not.
	var rows []Row
	for i := range 10 {
		body := randomText(uint64(i), 40_000)
		rows = append(rows, Row{Tier: TierState, Key: "s" + strconv.Itoa(i), Body: bodyp(&body)})
	}
	dels := []Deleted{{Tier: TierReference, Key: "doc/old"}}
	chunks, err := ChunkDiff(rows, dels)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, c := range chunks {
		sizes = append(sizes, len(c.Rows))
	}
	if !reflect.DeepEqual(sizes, []int{3, 3, 3, 1}) {
		t.Errorf("rows per chunk = %v, want [3 3 3 1]", sizes)
	}
	if len(chunks[0].Deleted) != 1 || len(chunks[1].Deleted) != 0 {
		t.Errorf("deletions must all travel in the first chunk")
	}
	checkChunks(t, rows, dels, chunks)
}

func TestChunkDiffManyRows(t *testing.T) {
	rows := proseRows(7, 2500, 1024)
	var dels []Deleted
	for i := range 300 {
		dels = append(dels, Deleted{Tier: TierEntity, Category: strp("notes"), Key: "old-" + strconv.Itoa(i)})
	}
	chunks, err := ChunkDiff(rows, dels)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 3 || len(chunks[0].Deleted) != len(dels) {
		t.Fatalf("%d chunks, %d deletions in the first", len(chunks), len(chunks[0].Deleted))
	}
	checkChunks(t, rows, dels, chunks)
}

func TestChunkDiffDeletionsSpill(t *testing.T) {
	// Far more deletions than one epoch carries: they fill the leading
	// chunks, still ahead of every row.
	var dels []Deleted
	for i := range 12000 {
		dels = append(dels, Deleted{Tier: TierEntity, Category: strp("c"), Key: randomText(uint64(i), 24)})
	}
	rows := proseRows(3, 50, 500)
	chunks, err := ChunkDiff(rows, dels)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 2 || len(chunks[0].Rows) != 0 {
		t.Fatalf("%d chunks", len(chunks))
	}
	checkChunks(t, rows, dels, chunks)
}

// edgeRows grows one noise row until it no longer fits an epoch, measuring one-shot: row(lo)
// is the largest that fits, row(hi) the smallest that does not.
func edgeRows() (row func(n int) Row, lo, hi int) {
	body := randomText(99, 130_000)
	row = func(n int) Row { b := body[:n]; return Row{Tier: TierState, Key: "edge", Body: bodyp(&b)} }
	lo, hi = 1000, len(body)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if chunkMeasure([]Row{row(mid)}, nil) <= MaxDiffBytes {
			lo = mid
		} else {
			hi = mid
		}
	}
	return row, lo, hi
}

func TestChunkDiffBoundaryIsExact(t *testing.T) {
	// the chunker must agree with the one-shot measure on both sides of the line
	row, lo, hi := edgeRows()
	if chunks, err := ChunkDiff([]Row{row(lo)}, nil); err != nil || len(chunks) != 1 {
		t.Errorf("largest fitting row (%d chars) refused: %v", lo, err)
	}
	var big *RowTooLargeError
	if _, err := ChunkDiff([]Row{row(hi)}, nil); !errors.As(err, &big) || big.Row.Key != "edge" {
		t.Errorf("smallest non-fitting row (%d chars) accepted: %v", hi, err)
	}
}

func TestChunkDiffOversizedRow(t *testing.T) {
	noise := randomText(5, 150_000)
	cases := []struct {
		row  Row
		want string
	}{
		{Row{Tier: TierEntity, Category: strp("rules"), Key: "x", Body: bodyp(&noise)},
			"row entity rules/x compresses to more than 90 KB on its own and cannot fit one epoch; shrink or split it in Sibyl (push refuses until then, nothing else is blocked)"},
		{Row{Tier: TierState, Key: "goal", Body: bodyp(&noise)},
			"row state goal compresses to more than 90 KB on its own and cannot fit one epoch; shrink or split it in Sibyl (push refuses until then, nothing else is blocked)"},
		{Row{Tier: TierJournal, Key: "abc:1", Extra: &noise},
			"row journal abc:1 compresses to more than 90 KB on its own and cannot fit one epoch; shrink or split it in Sibyl (push refuses until then, nothing else is blocked)"},
	}
	for _, c := range cases {
		rows := append(proseRows(1, 3, 200), c.row)
		rows = append(rows, proseRows(2, 3, 200)...)
		_, err := ChunkDiff(rows, nil)
		var big *RowTooLargeError
		if !errors.As(err, &big) || err.Error() != c.want || big.Row.Key != c.row.Key || !errors.Is(err, ErrTooLarge) {
			t.Errorf("got %v\nwant %s", err, c.want)
		}
	}
}

func TestSnapshotFits(t *testing.T) {
	small := &Plaintext{Rows: proseRows(1, 50, 500), Snapshot: true}
	if err := SnapshotFits(small); err != nil {
		t.Errorf("small snapshot: %v", err)
	}
	var rows []Row
	for i := range 4 {
		body := randomText(uint64(i), 40_000)
		rows = append(rows, Row{Tier: TierState, Key: "s" + strconv.Itoa(i), Body: bodyp(&body)})
	}
	p := &Plaintext{Rows: rows, NRows: len(rows), Snapshot: true}
	err := SnapshotFits(p)
	size := chunkMeasure(rows, nil)
	want := fmt.Sprintf("the full state (4 rows) compresses to %d bytes, more than the 92160 bytes one epoch can carry, and snapshots are single-epoch: keep anchoring ordinary epochs (`kintfs push`), or shrink the memory in Sibyl. Nothing else is blocked; a restore just walks more epochs.", size)
	var st *SnapshotTooLargeError
	if !errors.Is(err, ErrSnapshotTooLarge) || !errors.As(err, &st) || err.Error() != want || size <= MaxDiffBytes {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestChunkStreamMatchesDiff: the stream hands out the chunks ChunkDiff returns, in order, each
// before the next is measured; an error from the receiver stops it.
func TestChunkStreamMatchesDiff(t *testing.T) {
	rows := proseRows(11, 2000, 1024)
	var dels []Deleted
	for i := range 200 {
		dels = append(dels, Deleted{Tier: TierState, Key: "gone-" + strconv.Itoa(i)})
	}
	want, err := ChunkDiff(rows, dels)
	if err != nil || len(want) < 3 {
		t.Fatalf("%d chunks, %v", len(want), err)
	}
	var got []Chunk
	if err := ChunkStream(rows, dels, func(c Chunk) error { got = append(got, c); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("stream gave %d chunks, ChunkDiff %d", len(got), len(want))
	}
	for i := range want {
		if len(got[i].Rows) != len(want[i].Rows) || len(got[i].Deleted) != len(want[i].Deleted) ||
			(len(want[i].Rows) > 0 && got[i].Rows[0].Key != want[i].Rows[0].Key) {
			t.Fatalf("chunk %d: %d rows %d deletions, want %d and %d", i, len(got[i].Rows), len(got[i].Deleted), len(want[i].Rows), len(want[i].Deleted))
		}
	}
	stop := errors.New("receiver gone")
	n := 0
	err = ChunkStream(rows, dels, func(Chunk) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("after a refused chunk: %v, %d chunks handed out", err, n)
	}
}

// TestFitsAlone agrees with ChunkDiff on both sides of the largest row an epoch carries, and
// passes small rows without measuring them.
func TestFitsAlone(t *testing.T) {
	row, lo, hi := edgeRows()
	if r := row(lo); FitsAlone(&r) != nil {
		t.Errorf("largest fitting row (%d chars) refused: %v", lo, FitsAlone(&r))
	}
	var big *RowTooLargeError
	if r := row(hi); !errors.As(FitsAlone(&r), &big) || big.Row.Key != "edge" {
		t.Errorf("smallest non-fitting row (%d chars) accepted", hi)
	}
	// below the bound nothing is compressed: even a row of noise passes at once
	if r := row(fitsAloneBelow - 100); FitsAlone(&r) != nil {
		t.Errorf("a %d-char row refused", fitsAloneBelow-100)
	}
	huge := strings.Repeat("a", MaxChunkPlain)
	if r := (Row{Tier: TierState, Key: "flat", Body: bodyp(&huge)}); !errors.As(FitsAlone(&r), &big) || big.Plain == 0 {
		t.Errorf("a row past MaxChunkPlain accepted")
	}
}

func TestChunkBucketKeepsTheBucket(t *testing.T) {
	var rows []Row
	for i := range 200 {
		body := randomText(uint64(i), 1024)
		rows = append(rows, Row{Tier: TierState, Key: fmt.Sprintf("import-%03d", i), Body: bodyp(&body)})
	}
	dels := []Deleted{{Tier: TierState, Key: "gone"}}
	tenant := "a-tenant-name-of-some-length"
	chunks, err := ChunkDiffBucket(rows, dels, 4096, PlaintextHeadroom(tenant))
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 20 {
		t.Fatalf("%d chunks for 200 KB cut to 4096-byte buckets", len(chunks))
	}
	var got []Row
	for i, c := range chunks {
		got = append(got, c.Rows...)
		if c.Bucket != 4096 || c.RaisedBy != "" {
			t.Fatalf("chunk %d: bucket %d raised by %q", i, c.Bucket, c.RaisedBy)
		}
		p := &Plaintext{Tenant: tenant, Space: SpaceID("t"), Seq: uint64(i + 1), Rows: c.Rows, Deleted: c.Deleted,
			NRows: 1 << 20, CreatedAt: "2026-12-04T10:00:00.000000Z"}
		s, err := Seal(p, EpochContext{Space: p.Space, Seq: p.Seq}, [32]byte{1}, nil, 4096, [12]byte{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Bucket != 4096 {
			t.Fatalf("chunk %d sealed into bucket %d", i, s.Bucket)
		}
		if i+1 < len(chunks) {
			more := append(c.Rows[:len(c.Rows):len(c.Rows)], chunks[i+1].Rows[0])
			if m := chunkMeasure(more, c.Deleted) - Headroom; m <= BucketLimit(4096, PlaintextHeadroom(tenant)) {
				t.Fatalf("chunk %d closed early: with the next row it measures %d", i, m)
			}
		}
	}
	if !reflect.DeepEqual(got, rows) || len(chunks[0].Deleted) != 1 {
		t.Fatal("chunks do not add up to the input in order")
	}
	// the default cut is the largest epoch, as before
	big, err := ChunkDiff(rows, dels)
	if err != nil {
		t.Fatal(err)
	}
	if len(big) > 3 || big[0].Bucket != 0 {
		t.Fatalf("ChunkDiff: %d chunks, bucket %d", len(big), big[0].Bucket)
	}
}

func TestChunkBucketRaisedOnlyAsFarAsARowNeeds(t *testing.T) {
	small := randomText(1, 500)
	large := randomText(2, 11000) // about 8.3 KB of gzip: needs bucket 16384
	rows := []Row{
		{Tier: TierState, Key: "a", Body: bodyp(&small)},
		{Tier: TierEntity, Category: strp("notes"), Key: "large", Body: bodyp(&large)},
		{Tier: TierState, Key: "b", Body: bodyp(&small)},
	}
	chunks, err := ChunkDiffBucket(rows, nil, 4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 2 {
		t.Fatalf("%d chunks", len(chunks))
	}
	if c := chunks[0]; c.Bucket != 4096 || c.RaisedBy != "" || len(c.Rows) != 1 {
		t.Fatalf("first chunk: bucket %d raised by %q, %d rows", c.Bucket, c.RaisedBy, len(c.Rows))
	}
	// the large row raised the bucket to 16384, not further, and the row after it rides along
	if c := chunks[1]; c.Bucket != 16384 || c.RaisedBy != "entity notes/large" || len(c.Rows) != 2 {
		t.Fatalf("second chunk: bucket %d raised by %q, %d rows", c.Bucket, c.RaisedBy, len(c.Rows))
	}
	p := &Plaintext{Tenant: "t", Space: SpaceID("t"), Seq: 2, Rows: chunks[1].Rows, CreatedAt: "2026-12-04T10:00:00.000000Z"}
	s, err := Seal(p, EpochContext{Space: p.Space, Seq: p.Seq}, [32]byte{1}, nil, 4096, [12]byte{})
	if err != nil || s.Bucket != 16384 {
		t.Fatalf("sealed: bucket %v, %v", s, err)
	}
}

// The Chunker, fed one item at a time from one reused variable, cuts as ChunkDiff does: it
// keeps copies, not the pointers it was given. A deletion after a row is refused.
func TestChunkerCopiesItsItems(t *testing.T) {
	rows := proseRows(5, 400, 1024)
	dels := []Deleted{{Tier: TierState, Key: "gone-1"}, {Tier: TierState, Key: "gone-2"}}
	want, err := ChunkDiff(rows, dels)
	if err != nil || len(want) < 2 {
		t.Fatalf("%d chunks, %v", len(want), err)
	}
	var got []Chunk
	k := NewChunker(0, 0, func(c Chunk) error { got = append(got, c); return nil })
	var d Deleted
	for i := range dels {
		d = dels[i]
		if err := k.AddDeleted(&d); err != nil {
			t.Fatal(err)
		}
	}
	var r Row
	for i := range rows {
		r = rows[i]
		if err := k.AddRow(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.AddDeleted(&Deleted{Tier: TierState, Key: "late"}); err == nil {
		t.Error("a deletion after a row was taken")
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the chunker's %d chunks differ from ChunkDiff's %d", len(got), len(want))
	}
	checkChunks(t, rows, dels, got)
}

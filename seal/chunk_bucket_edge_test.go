package seal

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// bucketEdge grows one noise row until it no longer fits bucket alone, measuring one-shot:
// row(lo) is the largest that fits, row(lo+1) the smallest that does not.
func bucketEdge(bucket, headroom int) (row func(n int) Row, lo int) {
	body := randomText(77, 4*bucket)
	row = func(n int) Row { b := body[:n]; return Row{Tier: TierState, Key: "edge", Body: BodyString(b)} }
	limit := BucketLimit(bucket, headroom)
	lo, hi := 10, len(body)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if chunkMeasure([]Row{row(mid)}, nil)-Headroom <= limit {
			lo = mid
		} else {
			hi = mid
		}
	}
	return row, lo
}

// A row exactly at the bucket's limit, one byte under it and one over: the first two are cut
// to the bucket and seal into it; the one over raises the bucket for itself and names itself,
// and no epoch seals into a bucket larger than the one it was cut for.
func TestChunkBucketRowAtTheLimit(t *testing.T) {
	tenant := "edge-tenant"
	headroom := PlaintextHeadroom(tenant)
	for _, bucket := range []int{4096, 8192} {
		row, lo := bucketEdge(bucket, headroom)
		for _, n := range []int{lo - 1, lo, lo + 1} {
			t.Run(fmt.Sprintf("bucket %d, row %+d", bucket, n-lo), func(t *testing.T) {
				chunks, err := ChunkDiffBucket([]Row{row(n)}, nil, bucket, headroom)
				if err != nil || len(chunks) != 1 {
					t.Fatalf("%d chunks, %v", len(chunks), err)
				}
				c := chunks[0]
				want, raised := bucket, ""
				if n > lo {
					want, raised = 2*bucket, RowName(&c.Rows[0])
				}
				if c.Bucket != want || c.RaisedBy != raised {
					t.Fatalf("cut for bucket %d raised by %q, want %d raised by %q", c.Bucket, c.RaisedBy, want, raised)
				}
				p := &Plaintext{Tenant: tenant, Space: SpaceID(tenant), Seq: 1<<40 + 1, Rows: c.Rows, NRows: 1 << 30,
					CreatedAt: "2026-12-05T10:00:00Z"}
				s, err := Seal(p, EpochContext{Space: p.Space, Seq: p.Seq}, [32]byte{1}, nil, bucket, [12]byte{})
				if err != nil {
					t.Fatal(err)
				}
				// the epoch fits the bucket it was cut for (the headroom is a bound, so one
				// over the limit may still seal into the smaller one: never into a larger)
				if s.Bucket > want || s.Bucket < bucket {
					t.Fatalf("sealed into bucket %d, cut for %d", s.Bucket, want)
				}
			})
		}
	}
}

// The streamed cut (which measures near the limit on clones it reuses) gives exactly the
// chunks a plain greedy cut by one-shot measures gives: each chunk as full as it can be,
// rows of every size around the limit, mixed.
func TestChunkBucketMatchesOneShotCut(t *testing.T) {
	headroom := PlaintextHeadroom("t")
	const bucket = 4096
	var rows []Row
	for i := range 300 {
		var body string
		switch i % 4 {
		case 0:
			body = randomText(uint64(i), 100+(i*37)%900)
		case 1:
			body = fmt.Sprintf(`{"n":%d,"text":"note task meeting project owner draft review %d"}`, i, i*i)
		case 2:
			body = randomText(uint64(i), 2000+(i*53)%1200)
		default:
			body = randomText(uint64(i), 30)
		}
		rows = append(rows, Row{Tier: TierState, Key: fmt.Sprintf("r%03d", i), Body: BodyString(body)})
	}
	dels := []Deleted{{Tier: TierState, Key: "gone-1"}, {Tier: TierState, Key: "gone-2"}}
	checkOneShotCut(t, rows, dels, bucket, headroom)
}

// checkOneShotCut checks that ChunkDiffBucket cuts rows and dels exactly as a plain greedy cut
// by one-shot measures does.
func checkOneShotCut(t *testing.T, rows []Row, dels []Deleted, bucket, headroom int) {
	t.Helper()
	limit := BucketLimit(bucket, headroom)
	got, err := ChunkDiffBucket(rows, dels, bucket, headroom)
	if err != nil {
		t.Fatal(err)
	}
	var want []Chunk
	cur := Chunk{Bucket: bucket}
	fits := func(rs []Row, ds []Deleted) bool { return chunkMeasure(rs, ds)-Headroom <= limit }
	cur.Deleted = dels
	for _, r := range rows {
		more := append(cur.Rows[:len(cur.Rows):len(cur.Rows)], r)
		if fits(more, cur.Deleted) {
			cur.Rows = more
			continue
		}
		if !fits([]Row{r}, nil) {
			t.Fatalf("row %s does not fit alone: the test's rows must", r.Key)
		}
		want = append(want, cur)
		cur = Chunk{Bucket: bucket, Rows: []Row{r}}
	}
	want = append(want, cur)
	if len(got) != len(want) {
		t.Fatalf("%d chunks, the one-shot cut gives %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("chunk %d: %d rows %d deletions (bucket %d), the one-shot cut: %d rows %d deletions",
				i, len(got[i].Rows), len(got[i].Deleted), got[i].Bucket, len(want[i].Rows), len(want[i].Deleted))
		}
	}
}

// The chunker keeps a copy of the stream before an item only when the item's compressed size,
// predicted from the chunk so far, might not fit. Rows that compress 50:1 followed by rows
// that barely compress defeat the prediction: the cut must still be the greedy one.
func TestChunkCutWhenCompressionChangesSharply(t *testing.T) {
	headroom := PlaintextHeadroom("t")
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 3))
		var rows []Row
		for i := range 400 {
			body := strings.Repeat("kint epoch ", 20+r.IntN(200))
			if r.IntN(25) == 0 {
				body = randomText(seed*1000+uint64(i), 1000+r.IntN(2000))
			}
			rows = append(rows, Row{Tier: TierState, Key: fmt.Sprintf("r%03d", i), Body: BodyString(body)})
		}
		for _, bucket := range []int{Buckets[0], Buckets[1]} {
			checkOneShotCut(t, rows, nil, bucket, headroom)
		}
	}
}

// FuzzChunkCut: rows of any mix of sizes and compressibility, cut to any bucket, give exactly
// the chunks of the plain greedy cut by one-shot measures. Each byte of plan makes a row: its
// low bits its kind, the rest its size.
func FuzzChunkCut(f *testing.F) {
	f.Add([]byte{0x10, 0x21, 0x33, 0xff, 0x02, 0x80}, uint8(0), uint64(1))
	f.Add(bytes.Repeat([]byte{0x41, 0xfe}, 16), uint8(1), uint64(2))
	f.Add(bytes.Repeat([]byte{0xf3}, 32), uint8(2), uint64(3))
	headroom := PlaintextHeadroom("t")
	f.Fuzz(func(t *testing.T, plan []byte, bucket uint8, seed uint64) {
		if len(plan) > 32 {
			plan = plan[:32] // each input costs a one-shot measure a row: keep a run of many quick
		}
		var rows []Row
		for i, b := range plan {
			size := int(b>>2) * 24
			var body string
			switch b & 3 {
			case 0:
				body = randomText(seed+uint64(i), size)
			case 1:
				body = proseText(seed+uint64(i), size)
			case 2:
				body = strings.Repeat("kint epoch ", size/11+1)
			default:
				body = fmt.Sprintf(`{"n":%d}`, i)
			}
			rows = append(rows, Row{Tier: TierState, Key: fmt.Sprintf("r%03d", i), Body: BodyString(body)})
		}
		if len(rows) == 0 {
			return
		}
		checkOneShotCut(t, rows, nil, Buckets[int(bucket)%3], headroom)
	})
}

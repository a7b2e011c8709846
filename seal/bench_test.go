package seal

import (
	"strconv"
	"testing"
)

// benchPlaintext builds a prose plaintext whose compressed size lands in
// the middle of bucket b.
func benchPlaintext(tb testing.TB, b int) *Plaintext {
	lower := 0
	for i, x := range Buckets {
		if x == b && i > 0 {
			lower = Buckets[i-1]
		}
	}
	target := (lower + b) / 2
	p := &Plaintext{Tenant: "bench", Space: SpaceID("bench"), Seq: 1, CreatedAt: "2026-01-01T00:00:00Z"}
	n := target * 3
	for range 40 {
		body := proseText(uint64(b), n)
		p.Rows = []Row{{Tier: TierState, Key: "bench", Body: bodyp(&body)}}
		gz := len(Compress(EncodePlaintext(p)))
		if got, _ := ChooseBucket(gz, 0); got == b && gz > target*9/10 && gz < target*11/10 {
			p.NRows = 1
			p.RowsRoot = StateRoot(p.Rows)
			return p
		}
		n = n * target / gz
	}
	tb.Fatalf("no plaintext lands in bucket %d", b)
	return nil
}

func BenchmarkSeal(b *testing.B) {
	var dek [32]byte
	dek[0] = 1
	wraps := []Wrap{WrapDEK([32]byte{2}, KindPassphrase, dek, [12]byte{3})}
	for _, bucket := range Buckets {
		b.Run(strconv.Itoa(bucket), func(b *testing.B) {
			p := benchPlaintext(b, bucket)
			c := EpochContext{ChainID: 8453, Space: p.Space, Seq: 1}
			b.SetBytes(int64(len(EncodePlaintext(p))))
			for b.Loop() {
				s, err := Seal(p, c, dek, wraps, 0, [12]byte{4})
				if err != nil || s.Bucket != bucket {
					b.Fatal(err, s.Bucket)
				}
			}
		})
	}
}

func BenchmarkOpen(b *testing.B) {
	var dek [32]byte
	dek[0] = 1
	wraps := []Wrap{WrapDEK([32]byte{2}, KindPassphrase, dek, [12]byte{3})}
	for _, bucket := range Buckets {
		b.Run(strconv.Itoa(bucket), func(b *testing.B) {
			p := benchPlaintext(b, bucket)
			c := EpochContext{ChainID: 8453, Space: p.Space, Seq: 1}
			s, err := Seal(p, c, dek, wraps, 0, [12]byte{4})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(s.Plaintext)))
			for b.Loop() {
				if _, err := Open(s.Blob, dek, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChunkDiff cuts 10,000 rows of 1 KB to the largest epoch, and to the smallest
// bucket, as a flush under the low bucket policy does: many small chunks, each measured near
// its limit row by row.
func BenchmarkChunkDiff(b *testing.B) {
	rows := proseRows(1, 10_000, 1024)
	total := 0
	for i := range rows {
		total += rows[i].Body.Len()
	}
	for _, bucket := range []int{0, Buckets[0]} {
		b.Run(strconv.Itoa(bucket), func(b *testing.B) {
			b.SetBytes(int64(total))
			n := 0
			for b.Loop() {
				n = 0
				if err := ChunkStreamBucket(rows, nil, bucket, 0, func(Chunk) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "chunks")
		})
	}
}

package store

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"kintfs/replica/vault"
)

// BenchmarkDurableCreate is the store's part of a new file made durable at close, as cp -r
// makes one: a create (queued, not waited for), then its content (committed and synced). It
// reports the time of each part per file.
func BenchmarkDurableCreate(b *testing.B) {
	r := newTestStore(b)
	body := bytes.Repeat([]byte("x"), 1024)
	var create, write time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := vault.Key{Tier: "state", Key: fmt.Sprintf("f%07d", i)}
		t0 := time.Now()
		if _, err := r.Create(k, 0o644, t0); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := r.Write(k, body, t1); err != nil {
			b.Fatal(err)
		}
		create, write = create+t1.Sub(t0), write+time.Since(t1)
	}
	b.ReportMetric(float64(create.Microseconds())/float64(b.N), "µs-create/op")
	b.ReportMetric(float64(write.Microseconds())/float64(b.N), "µs-write-durable/op")
}

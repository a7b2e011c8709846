package replica

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkBackfill: a fresh machine restores a vault of KINT_BENCH_EPOCHS (500) one-row diff
// epochs under a snapshot, then backfills their history; reported as epochs per second and
// RPC calls per epoch (a cold pull makes about 2). Run it with -benchtime=1x: each round
// builds its own vault.
func BenchmarkBackfill(b *testing.B) {
	epochs := int(envInt("KINT_BENCH_EPOCHS", 500))
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newDevChainEnv(b) // requests per epoch mean something on a real node
		a := e.machine()
		w := &writer{t: b, r: a, m: model{}}
		for n := 0; n < epochs; n++ {
			w.write(fmt.Sprintf("state/s%d", n%20), fmt.Sprintf("v%d", n))
			flushAll(b, a)
		}
		if _, err := a.Push(context.Background(), PushOptions{Snapshot: true}); err != nil {
			b.Fatal(err)
		}
		fresh := e.machine()
		if _, err := fresh.Pull(context.Background(), false); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		rep, err := fresh.Backfill(context.Background(), BackfillOptions{})
		if err != nil {
			b.Fatal(err)
		}
		secs := time.Since(t0).Seconds()
		if rep.Recorded != epochs || rep.Missing != 0 {
			b.Fatalf("recorded %d of %d epochs, %d missing", rep.Recorded, epochs, rep.Missing)
		}
		b.ReportMetric(float64(rep.Recorded)/secs, "epochs/s")
		b.ReportMetric(float64(rep.RPCCalls)/float64(rep.Recorded), "rpc/epoch")
	}
}

package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkFlush: KINT_BENCH_ROWS (10,000) entity rows of about 1 KB of text are anchored, every one is
// changed, and the timed part pushes until nothing is staged (under the bucket policy
// KINT_BENCH_POLICY, the default when unset), on the in-memory chain, so what
// it measures is the engine's own work (seal, journal, apply), not a node's. Run it with
// -benchtime=1x: each round builds its own vault.
func BenchmarkFlush(b *testing.B) {
	rows := int(envInt("KINT_BENCH_ROWS", 10000))
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newChainEnv(b)
		a := e.machineWith(func(string, ...any) {}) // hundreds of lines of epochs anchored say nothing here
		if p := os.Getenv("KINT_BENCH_POLICY"); p != "" {
			if err := a.SetBucketPolicy(p); err != nil {
				b.Fatal(err)
			}
		}
		writeRows := func(round int) {
			rng := rand.New(rand.NewPCG(uint64(round), 1))
			for n := 0; n < rows; n++ {
				k := pathKey(fmt.Sprintf("entity/c%03d/k%03d", n/100, n%100))
				if _, err := a.Write(k, noteBody(rng, 1024), time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		}
		writeRows(0)
		flushAll(b, a)
		writeRows(1)
		// the price of the flush, beforehand: it seals every epoch as the flush will
		d0 := time.Now()
		plan, err := a.Push(context.Background(), PushOptions{DryRun: true})
		if err != nil {
			b.Fatal(err)
		}
		dry := time.Since(d0).Seconds()
		stopProfile := profileFlush(b, i)
		b.StartTimer()
		t0, cpu0 := time.Now(), cpuTime()
		epochs := flushAll(b, a)
		secs := time.Since(t0).Seconds()
		b.StopTimer()
		stopProfile()
		if len(plan.Plan) != epochs {
			b.Fatalf("the dry run planned %d epochs, the flush sent %d", len(plan.Plan), epochs)
		}
		b.ReportMetric(dry, "s/dry-run")
		b.ReportMetric(secs, "s/flush")
		// The flush runs on every core it gets; its CPU time says what it costs where wall
		// time on a loaded machine cannot.
		cpu := (cpuTime() - cpu0).Seconds()
		b.ReportMetric(cpu, "cpu-s/flush")
		b.ReportMetric(float64(epochs), "epochs")
		line, _ := json.Marshal(map[string]any{"rows": rows, "epochs": epochs, "seconds": secs, "cpu_seconds": cpu, "dry_run_seconds": dry, "policy": a.BucketPolicy()})
		b.Logf("bench-flush: %s", line)
	}
}

// profileFlush starts a CPU profile of the timed flush of round i, into
// $KINT_BENCH_FLUSH_PROFILE.<i>, when that is set (go test's -cpuprofile would take in the
// vault's building too); it returns the func that ends it.
func profileFlush(b *testing.B, i int) func() {
	path := os.Getenv("KINT_BENCH_FLUSH_PROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", path, i))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the CPU time this process has used, in user and system mode.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// noteWords make bodies that compress as notes do.
var noteWords = strings.Fields(`note task meeting project owner draft review merge release plan
budget river harbour garden station summer winter market letter answer question reason result
memory vault chain block anchor epoch mirror staged sealed pulled verified kernel page inode`)

// noteBody is about size bytes of words.
func noteBody(rng *rand.Rand, size int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "{\"n\":%d,\"text\":\"", rng.IntN(1<<30))
	for b.Len() < size-2 {
		b.WriteString(noteWords[rng.IntN(len(noteWords))])
		b.WriteByte(' ')
	}
	b.WriteString("\"}")
	return []byte(b.String())
}

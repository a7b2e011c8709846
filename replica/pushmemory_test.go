package replica

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// A push holds the bodies of the epochs it is cutting, sealing and sending, not those of its
// whole change set: the heap grows by far less than the staged bodies during a push of all of
// them.
func TestPushHoldsOnlyTheBodiesInFlight(t *testing.T) {
	const rows, size = 4000, 12 << 10
	e := newChainEnv(t)
	a := e.machineWith(func(string, ...any) {})
	if err := a.SetBucketPolicy(PolicyKint); err != nil { // fewer, larger epochs: a quicker test
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < rows; n++ {
		if _, err := a.Write(pathKey(fmt.Sprintf("entity/c%02d/k%05d", n/100, n)), noteBody(rng, size), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	base := heapObjects()
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			peak = max(peak, heapObjects())
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	epochs := flushAll(t, a)
	close(stop)
	wg.Wait()
	growth := int64(peak) - int64(base)
	t.Logf("%d rows of %d KB in %d epochs: heap %d MB before the push, peak %d MB (+%d MB)", rows, size>>10, epochs, base>>20, peak>>20, growth>>20)
	// before the push's rows were read one epoch at a time, it grew by about 1.7 times the
	// bodies; now by about 20 MB whatever their size (the epochs in flight, badger's buffers)
	if staged := int64(rows * size); growth > staged {
		t.Errorf("the heap grew by %d MB during the push, for %d MB of staged bodies", growth>>20, staged>>20)
	}
}

// heapObjects is the bytes of the heap's objects, live or not yet swept.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

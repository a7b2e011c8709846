package replica

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// A push holds the bodies of the epochs it is cutting, sealing and sending, not those of its
// whole change set: measured while its second epoch is about to be journaled, the live heap
// has grown by far less than the staged bodies (before the rows were read one epoch at a
// time, by all of them and more).
func TestPushHoldsOnlyTheBodiesInFlight(t *testing.T) {
	const rows, size = 2000, 8 << 10
	e := newChainEnv(t)
	a := e.machineWith(func(string, ...any) {})
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < rows; n++ {
		if _, err := a.Write(pathKey(fmt.Sprintf("entity/c%02d/k%04d", n/100, n)), noteBody(rng, size), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	before := liveHeap()
	var during uint64
	stop := errors.New("measured")
	a.SetPushHook(func(stage PushStage, seq uint64) error {
		if stage != StageSealed || seq < 2 {
			return nil
		}
		during = liveHeap()
		return stop
	})
	defer a.SetPushHook(nil)
	if _, err := a.Push(context.Background(), PushOptions{}); !errors.Is(err, stop) {
		t.Fatalf("the push did not reach its second epoch: %v", err)
	}
	growth := int64(during) - int64(before)
	staged := int64(rows * size)
	t.Logf("%d rows of %d KB staged: live heap %d MB before the push, %d MB at its second epoch (%+d MB)", rows, size>>10, before>>20, during>>20, growth>>20)
	if growth > staged/2 {
		t.Errorf("the live heap grew by %d MB during the push, for %d MB of staged bodies", growth>>20, staged>>20)
	}
}

// liveHeap is the heap live after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// TestCollectOftenWhileLoading: opening a vault runs at loadGCPercent, and the mount at
// mountGCPercent of the heap left live after (50 here: a test's heap is far below the index of
// a large vault); a GOGC of the user's own is left alone.
func TestCollectOftenWhileLoading(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	restore := collectOftenWhileLoading()
	if got := debug.SetGCPercent(loadGCPercent); got != loadGCPercent {
		t.Errorf("while loading the GC target is %d, want %d", got, loadGCPercent)
	}
	restore(ctx)
	if live := liveHeap(); live == 0 || live > 24<<20 {
		t.Fatalf("the live heap reads %d bytes, want more than 0 and a test's few MB", live)
	}
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("after loading the GC target is %d, want 50", got)
	}

	t.Setenv("GOGC", "300")
	debug.SetGCPercent(300)
	collectOftenWhileLoading()(ctx)
	if got := debug.SetGCPercent(100); got != 300 {
		t.Errorf("with GOGC=300 the GC target is %d, want it left at 300", got)
	}
}

// TestMountGCPercent: 50 while the live heap is at most twice mountHeadroom, a tenth once it
// is ten times as large, and in between the percent that leaves mountHeadroom of garbage.
func TestMountGCPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 50}, {1, 50}, {mountHeadroom, 50}, {2*mountHeadroom - 1, 50}, {2 * mountHeadroom, 50},
		{2*mountHeadroom + 1 + mountHeadroom/50, 49}, {3 * mountHeadroom, 33},
		{4 * mountHeadroom, 25}, {8 * mountHeadroom, 12}, {10*mountHeadroom - 1, 10}, {10 * mountHeadroom, 10},
		{10*mountHeadroom + 1, 10}, {20 * mountHeadroom, 10}, {1 << 40, 10},
	} {
		if got := mountGCPercent(c.live); got != c.want {
			t.Errorf("mountGCPercent(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

// gcPercent reads the collector's target without setting it.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// TestFollowLiveHeap: the target goes down to its floor while the live heap holds more than
// ten times mountHeadroom, back to 50 once it is small again, and stays once the context ends.
func TestFollowLiveHeap(t *testing.T) {
	before := debug.SetGCPercent(50)
	defer debug.SetGCPercent(before)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { followLiveHeap(ctx); close(done) }()
	waitFor := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			runtime.GC()
			if gcPercent() == want {
				return
			}
		}
		t.Fatalf("the GC target is %d with %d bytes live, want %d", gcPercent(), liveHeap(), want)
	}
	held := make([]byte, 12*mountHeadroom)
	waitFor(minMountGCPercent)
	runtime.KeepAlive(held)
	waitFor(50)
	cancel()
	<-done
	debug.SetGCPercent(40)
	time.Sleep(20 * time.Millisecond)
	if got := gcPercent(); got != 40 {
		t.Fatalf("after the context ended the GC target is %d, want it left at 40", got)
	}
}

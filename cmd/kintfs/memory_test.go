package main

import (
	"runtime/debug"
	"testing"
)

// TestCollectOftenWhileLoading: opening a vault runs at loadGCPercent, and the mount at
// mountGCPercent of the heap left live after (50 here: a test's heap is far below the index of
// a large vault); a GOGC of the user's own is left alone.
func TestCollectOftenWhileLoading(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	restore := collectOftenWhileLoading()
	if got := debug.SetGCPercent(loadGCPercent); got != loadGCPercent {
		t.Errorf("while loading the GC target is %d, want %d", got, loadGCPercent)
	}
	restore()
	if live := liveHeap(); live == 0 || live > 24<<20 {
		t.Fatalf("the live heap reads %d bytes, want more than 0 and a test's few MB", live)
	}
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("after loading the GC target is %d, want 50", got)
	}

	t.Setenv("GOGC", "300")
	debug.SetGCPercent(300)
	collectOftenWhileLoading()()
	if got := debug.SetGCPercent(100); got != 300 {
		t.Errorf("with GOGC=300 the GC target is %d, want it left at 300", got)
	}
}

// TestMountGCPercent: 50 while the live heap is at most twice mountHeadroom, a quarter once it
// is four times as large, and in between the percent that leaves mountHeadroom of garbage.
func TestMountGCPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 50}, {1, 50}, {mountHeadroom, 50}, {2*mountHeadroom - 1, 50}, {2 * mountHeadroom, 50},
		{2*mountHeadroom + 1 + mountHeadroom/50, 49}, {3 * mountHeadroom, 33},
		{4*mountHeadroom - 1, 25}, {4 * mountHeadroom, 25}, {4*mountHeadroom + 1, 25}, {1 << 40, 25},
	} {
		if got := mountGCPercent(c.live); got != c.want {
			t.Errorf("mountGCPercent(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

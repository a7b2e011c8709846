package main

import (
	"runtime/debug"
	"testing"
)

// TestCollectOftenWhileLoading: opening a vault runs at loadGCPercent, and the mount at
// mountGCPercent after; a GOGC of the user's own is left alone.
func TestCollectOftenWhileLoading(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	restore := collectOftenWhileLoading()
	if got := debug.SetGCPercent(loadGCPercent); got != loadGCPercent {
		t.Errorf("while loading the GC target is %d, want %d", got, loadGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(100); got != mountGCPercent {
		t.Errorf("after loading the GC target is %d, want %d", got, mountGCPercent)
	}

	t.Setenv("GOGC", "300")
	debug.SetGCPercent(300)
	collectOftenWhileLoading()()
	if got := debug.SetGCPercent(100); got != 300 {
		t.Errorf("with GOGC=300 the GC target is %d, want it left at 300", got)
	}
}

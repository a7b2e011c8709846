package chain

import "testing"

// The window starts wide, halves below a refused range, never below windowMin, and doubles
// after widenAfter successes at its full width (up to windowMax).
func TestLogWindowAdapts(t *testing.T) {
	var w logWindow
	if got := w.get(); got != windowStart {
		t.Fatalf("start %d, want %d", got, windowStart)
	}
	if !w.refused(windowStart) || w.get() != windowStart/2 {
		t.Fatalf("after a refusal: %d", w.get())
	}
	// a refusal of a range narrower than the window narrows it below that range
	if !w.refused(3000) || w.get() != 1500 {
		t.Fatalf("after a refusal of 3000 blocks: %d", w.get())
	}
	// a refusal of a range wider than the window does not widen it
	if !w.refused(100_000) || w.get() != 1500 {
		t.Fatalf("after a stale refusal: %d", w.get())
	}
	// successes on narrower ranges (the tail of a span) do not widen it
	for range 5 {
		w.succeeded(10)
	}
	if w.get() != 1500 {
		t.Fatalf("after narrow successes: %d", w.get())
	}
	w.succeeded(1500)
	if w.get() != 1500 {
		t.Fatalf("widened after one success: %d", w.get())
	}
	w.succeeded(1500)
	if w.get() != 3000 {
		t.Fatalf("after %d successes: %d, want 3000", widenAfter, w.get())
	}
	// a refusal resets the streak
	w.succeeded(3000)
	w.refused(1) // below windowMin: nothing narrower to try
	w.succeeded(3000)
	if w.get() != 3000 {
		t.Fatalf("streak survived a refusal: %d", w.get())
	}
	for range 100 {
		w.succeeded(w.get())
	}
	if w.get() != windowMax {
		t.Fatalf("widened to %d, want the cap %d", w.get(), windowMax)
	}
	for range 100 {
		w.refused(w.get())
	}
	if w.get() != windowMin {
		t.Fatalf("narrowed to %d, want the floor %d", w.get(), windowMin)
	}
	if w.refused(windowMin) {
		t.Fatal("a refusal at the smallest window says there is a narrower one")
	}
}

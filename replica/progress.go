package replica

import (
	"context"
	"sync"
	"time"
)

// Progress is one step of a long task (a push, pull, backfill, compact or rekey): an epoch
// that landed, or a batch of epochs fetched. The caller that asked for it with WithProgress
// renders it (an updating line on a terminal, a line per epoch otherwise).
type Progress struct {
	Task  string    `json:"task"`  // push, pull, backfill, compact
	Phase string    `json:"phase"` // "fetched" (epochs read from the chain), "sent" (a push's transaction sent) or "landed" (applied, anchored, recorded)
	Done  int       `json:"done"`  // epochs done in this phase
	Total int       `json:"total"` // epochs in all, 0 when not known yet
	Bytes int64     `json:"bytes"` // bytes of the epochs done so far
	Sent  int       `json:"sent"`  // a push's epochs sent so far (they land a block or more later)
	Seq   uint64    `json:"seq"`   // the epoch that landed (0 for a fetched batch)
	Line  string    `json:"line"`  // what happened to it, in a few words
	Start time.Time `json:"start"` // when the task started
}

type progressKey struct{}

// WithProgress asks the long tasks run under ctx to report each step to fn, from their own
// goroutines (fn must be safe for concurrent use).
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// HasProgress reports whether ctx asks for progress.
func HasProgress(ctx context.Context) bool {
	_, ok := ctx.Value(progressKey{}).(func(Progress))
	return ok
}

// tracker counts one task's steps and reports them; a nil tracker (no one asked) does nothing.
type tracker struct {
	fn    func(Progress)
	mu    sync.Mutex
	p     Progress
	fetch int
}

func newTracker(ctx context.Context, task string, total int) *tracker {
	fn, ok := ctx.Value(progressKey{}).(func(Progress))
	if !ok {
		return nil
	}
	return &tracker{fn: fn, p: Progress{Task: task, Total: total, Start: time.Now()}}
}

// setTotal sets the number of epochs the task will land, once it is known.
func (t *tracker) setTotal(n int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.p.Total = n
	t.mu.Unlock()
}

// fetched reports n more epochs of bytes read from the chain.
func (t *tracker) fetched(n int, bytes int64) {
	if t == nil || n == 0 {
		return
	}
	t.mu.Lock()
	t.fetch += n
	p := t.p
	p.Phase, p.Done, p.Seq, p.Line = "fetched", t.fetch, 0, ""
	p.Bytes = bytes
	t.mu.Unlock()
	t.fn(p)
}

// landed reports one epoch applied, anchored or recorded.
func (t *tracker) landed(seq uint64, bytes int64, line string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.p.Done++
	t.p.Bytes += int64(bytes)
	p := t.p
	p.Phase, p.Seq, p.Line = "landed", seq, line
	t.mu.Unlock()
	t.fn(p)
}

// sentOne reports one epoch of a push sent: its receipt comes a block or more later, so this
// is the first sign of a push's progress.
func (t *tracker) sentOne(seq uint64, line string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.p.Sent++
	p := t.p
	p.Phase, p.Seq, p.Line = "sent", seq, line
	t.mu.Unlock()
	t.fn(p)
}

type trackerKey struct{}

// withTracker carries a task's tracker to the functions under it.
func withTracker(ctx context.Context, t *tracker) context.Context {
	if t == nil {
		return ctx
	}
	return context.WithValue(ctx, trackerKey{}, t)
}

func trackerOf(ctx context.Context) *tracker {
	t, _ := ctx.Value(trackerKey{}).(*tracker)
	return t
}

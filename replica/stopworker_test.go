package replica

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// stopDuringFlush stages 40 rows of 1 KB (about ten epochs), lets the worker's quiet-period
// flush send its first epoch, and holds it there until StopWorker has closed the worker's
// stop; it returns the replica's log and StopWorker's error.
func stopDuringFlush(t *testing.T, before func(r *Replica)) (*Replica, []string, error) {
	t.Helper()
	e := newChainEnv(t)
	var mu sync.Mutex
	var lines []string
	r := e.machineWith(func(f string, a ...any) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf(f, a...))
		mu.Unlock()
		t.Logf(f, a...)
	})
	stageNoise(t, &writer{t: t, r: r, m: model{}}, "stop", 40)
	before(r)
	sent, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.SetPushHook(func(stage PushStage, seq uint64) error {
		if stage == StageSent {
			once.Do(func() { close(sent); <-release })
		}
		return nil
	})
	r.StartWorker(WorkerOptions{Quiet: time.Millisecond, Poll: time.Hour, BackfillAfter: -1})
	select {
	case <-sent:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker's flush sent nothing")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- r.StopWorker(ctx) }()
	<-r.worker.stop
	time.Sleep(50 * time.Millisecond) // time for a cancel to reach the flush
	close(release)
	err := <-stopped
	mu.Lock()
	defer mu.Unlock()
	return r, append([]string(nil), lines...), err
}

// TestStopWorkerLetsAFlushFinish: a mount stopping while its background flush is between two
// epochs lets that flush go on (under the unmount's deadline): every epoch is sent in turn, and
// none is left in the push journal for the flush on unmount to settle one block at a time.
func TestStopWorkerLetsAFlushFinish(t *testing.T) {
	r, lines, err := stopDuringFlush(t, func(*Replica) {})
	if err != nil {
		t.Fatalf("StopWorker: %v", err)
	}
	for _, l := range lines {
		if strings.Contains(l, "push journal") || strings.Contains(l, "context canceled") {
			t.Fatalf("the flush in progress was stopped: %q", l)
		}
	}
	st, err := r.Status()
	if err != nil {
		t.Fatal(err)
	}
	if st.StagedRows != 0 {
		t.Fatalf("%d rows still staged after the stop", st.StagedRows)
	}
	if pend, err := r.PendingPushes(); err != nil || len(pend) != 0 {
		t.Fatalf("push journal after the stop: %d entries, %v", len(pend), err)
	}
}

// TestStopWorkerNoFlushStopsAFlush: after no-flush, the stop ends a flush in progress at
// once, and anchors nothing more: rows stay staged for the next mount.
func TestStopWorkerNoFlushStopsAFlush(t *testing.T) {
	r, _, err := stopDuringFlush(t, func(r *Replica) {
		if err := r.Control(context.Background(), "no-flush"); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil {
		t.Fatalf("StopWorker: %v", err)
	}
	st, err := r.Status()
	if err != nil {
		t.Fatal(err)
	}
	head, err := r.MirrorHead()
	if err != nil {
		t.Fatal(err)
	}
	if st.StagedRows == 0 || head.Seq > 1 {
		t.Fatalf("no-flush, yet the flush went on: %d rows staged, mirror at seq %d", st.StagedRows, head.Seq)
	}
}

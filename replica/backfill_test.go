package replica

import (
	"context"
	"errors"
	"strings"
	"testing"

	"kintfs/replica/vault"
)

var historyPaths = []string{"entity/person/first", "entity/person/second", "entity/team/t", "entity/club/c", "state/x", "state/y"}

// historyWriter anchors diff, diff, a snapshot that deletes a row, and a diff, returning the
// writer and the blocks of its four epochs. The second diff empties one entity category and
// starts another.
func historyWriter(t *testing.T, e *chainEnv) (*Replica, []uint64) {
	t.Helper()
	a := e.machine()
	w := &writer{t: t, r: a, m: model{}}
	w.write("entity/person/first", `{"v":1}`)
	w.write("entity/team/t", `{"t":1}`)
	w.write("state/x", "x1")
	flushAll(t, a)
	w.write("entity/person/first", `{"v":2}`)
	w.write("entity/person/second", `{"v":"s"}`)
	w.rm("entity/team/t")
	w.write("entity/club/c", `{"c":2}`)
	flushAll(t, a)
	w.rm("entity/person/first")
	w.write("state/y", "y3")
	if _, err := a.Push(context.Background(), PushOptions{Snapshot: true}); err != nil {
		t.Fatalf("compact: %v", err)
	}
	w.write("state/x", "x4")
	flushAll(t, a)
	infos, err := a.Epochs()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 4 || !infos[2].Snapshot {
		t.Fatalf("the writer anchored %+v, want four epochs, the third a snapshot", infos)
	}
	var blocks []uint64
	for _, in := range infos {
		blocks = append(blocks, in.Block)
	}
	return a, blocks
}

// sameHistory checks that b reads as a does at every block from just before the first epoch
// to the last.
func sameHistory(t *testing.T, a, b *Replica, blocks []uint64) {
	t.Helper()
	for blk := blocks[0] - 1; blk <= blocks[len(blocks)-1]; blk++ {
		view, err := b.HistoryView(blk)
		if err != nil {
			t.Fatalf("block %d: %v", blk, err)
		}
		want, got := viewOf(t, a.At(blk), historyPaths), viewOf(t, view, historyPaths)
		if d := diffModels(want, got); d != "" {
			t.Fatalf("@%d on the fresh machine: %s", blk, d)
		}
		// entity/'s link count: recorded by each epoch, on the writer by its apply and here by
		// the backfill
		wantN, err := a.At(blk).CategoryCount()
		if err != nil {
			t.Fatal(err)
		}
		if gotN, err := view.CategoryCount(); err != nil || gotN != wantN {
			t.Fatalf("@%d on the fresh machine: %d entity categories, %v; want %d", blk, gotN, err, wantN)
		}
	}
}

// TestBackfillHistoryUnderSnapshot: a fresh machine restores from the snapshot; until the
// backfill runs, blocks under the snapshot are refused, never shown empty; after it, every
// block reads as on the writer, the row the snapshot deleted included.
func TestBackfillHistoryUnderSnapshot(t *testing.T) {
	e := newChainEnv(t)
	a, blocks := historyWriter(t, e)
	b := e.machine()
	rep, err := b.Pull(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied != 2 {
		t.Fatalf("the restore applied %d epochs, want the snapshot and the diff after it", rep.Applied)
	}
	_, err = b.HistoryView(blocks[0])
	if !errors.Is(err, vault.ErrHistoryIncomplete) || !strings.Contains(err.Error(), "kintfs pull --full") {
		t.Fatalf("history at the first epoch before the backfill: %v", err)
	}
	if err := b.CheckHistory(blocks[2]); err != nil {
		t.Fatalf("history at the snapshot: %v", err)
	}
	if from, _ := b.HistoryFrom(); from.Seq != 3 || from.Block != blocks[2] {
		t.Fatalf("history_from %+v before the backfill, want seq 3 at block %d", from, blocks[2])
	}
	if st, _ := b.Status(); st.Backfill != "not started" {
		t.Fatalf("status backfill %q before it ran", st.Backfill)
	}
	// one epoch at a time, as the mount does in the background: it resumes where it stopped
	br, err := b.Backfill(context.Background(), BackfillOptions{Max: 1})
	if err != nil || br.Recorded != 1 || br.Missing != 1 {
		t.Fatalf("first step: %+v, %v", br, err)
	}
	if st, _ := b.Status(); !strings.HasPrefix(st.Backfill, "running") {
		t.Fatalf("status backfill %q part way", st.Backfill)
	}
	b = e.reopen(b)
	br, err = b.Backfill(context.Background(), BackfillOptions{})
	if err != nil || br.Recorded != 1 || br.Missing != 0 {
		t.Fatalf("second step: %+v, %v", br, err)
	}
	if br.RPCCalls > 2*uint64(br.Recorded)+2 {
		t.Errorf("the backfill made %d RPC calls for %d epochs", br.RPCCalls, br.Recorded)
	}
	if from, _ := b.HistoryFrom(); from.Seq != 1 || from.Block != blocks[0] {
		t.Fatalf("history_from %+v after the backfill, want seq 1", from)
	}
	if st, _ := b.Status(); st.Backfill != "done" {
		t.Fatalf("status backfill %q at the end", st.Backfill)
	}
	sameHistory(t, a, b, blocks)
	if v := viewOf(t, b.At(blocks[1]), historyPaths); v["entity/person/first"].body != `{"v":2}` {
		t.Fatalf("@%d: %v", blocks[1], v)
	}
	infos, _ := b.Epochs()
	if len(infos) != 4 {
		t.Fatalf("the fresh machine lists %d epochs, want 4", len(infos))
	}
	// nothing more to do, and the mirror is the writer's
	if br, err := b.Backfill(context.Background(), BackfillOptions{}); err != nil || br.Recorded != 0 {
		t.Fatalf("a backfill with nothing missing: %+v, %v", br, err)
	}
	if d := diffModels(viewOf(t, a, historyPaths), viewOf(t, b, historyPaths)); d != "" {
		t.Fatalf("mirror after the backfill: %s", d)
	}
}

// TestPullFullRecordsHistory: pull --full on a machine that restored from the snapshot
// records the epochs under it.
func TestPullFullRecordsHistory(t *testing.T) {
	e := newChainEnv(t)
	a, blocks := historyWriter(t, e)
	b := e.machine()
	if _, err := b.Pull(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	rep, err := b.Pull(context.Background(), true)
	if err != nil || rep.Recorded != 2 {
		t.Fatalf("pull --full: %+v, %v", rep, err)
	}
	sameHistory(t, a, b, blocks)
}

// TestBackfillSkipsUnopenable: an epoch under the snapshot that cannot be opened is reported
// as superseded and its block stays refused; the epochs before it are recorded.
func TestBackfillSkipsUnopenable(t *testing.T) {
	e := newChainEnv(t)
	a := e.machine()
	w := &writer{t: t, r: a, m: model{}}
	w.write("state/x", "x1")
	flushAll(t, a)
	head, _ := a.MirrorHead()
	junk := []byte("this is not an epoch")
	sendRaw(t, a, head.Digest, junk)
	if _, err := a.Pull(context.Background(), false); !errors.Is(err, ErrGapOpen) {
		t.Fatalf("pull over the junk epoch: %v", err)
	}
	w.write("state/y", "y3")
	_, err := a.Push(context.Background(), PushOptions{Snapshot: true})
	if !errors.Is(err, ErrGapOpen) || !strings.Contains(err.Error(), "--over-skipped") {
		t.Fatalf("compact over the gap without the override: %v", err)
	}
	if _, err := a.Push(context.Background(), PushOptions{Snapshot: true, OverSkipped: true}); err != nil {
		t.Fatalf("compact --over-skipped: %v", err)
	}
	infos, _ := a.Epochs()
	b := e.machine()
	if _, err := b.Pull(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	rep, err := b.Pull(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Recorded != 1 || len(rep.Skipped) != 1 || rep.Skipped[0].Seq != 2 || rep.Skipped[0].SupersededBy != 3 {
		t.Fatalf("pull --full: recorded %d, skipped %+v", rep.Recorded, rep.Skipped)
	}
	if rep.Skipped[0].Reason == "" {
		t.Fatalf("skipped without a reason: %+v", rep.Skipped[0])
	}
	first := infos[0].Block
	if v := viewOf(t, b.At(first), historyPaths); v["state/x"].body != "x1" {
		t.Fatalf("@%d: %v", first, v)
	}
	if err := b.CheckHistory(first + 1); !errors.Is(err, vault.ErrHistoryIncomplete) {
		t.Fatalf("history just after the first epoch: %v", err)
	}
	st, _ := b.Status()
	if !strings.Contains(st.Backfill, "epoch 2 cannot be recorded") {
		t.Fatalf("status backfill %q", st.Backfill)
	}
	// the next backfill does not try again
	br, err := b.Backfill(context.Background(), BackfillOptions{})
	if err != nil || br.Recorded != 0 || len(br.Skipped) != 0 {
		t.Fatalf("a backfill after the skip: %+v, %v", br, err)
	}
}

package replica

import (
	"context"
	"fmt"
	"testing"

	"kintfs/seal"
)

// A pull of more epochs than are opened ahead applies them all, in order; after a rekey the
// epochs opened ahead under the old data key are opened again under the new one the snapshot
// brings, and the pull ends with the writer's state.
func TestPullOpensAheadInOrder(t *testing.T) {
	ctx := context.Background()
	e := newChainEnv(t)
	a := e.machine()
	w := &writer{t: t, r: a, m: model{}}
	b := e.machine()
	write := func(from, n int) {
		for i := from; i < from+n; i++ {
			w.write(fmt.Sprintf("state/s%02d", i%7), fmt.Sprintf("v%d", i)) // rows written over and over: order matters
			flushAll(t, a)
		}
	}
	write(0, 2*openAheadDepth+5)
	rep, err := b.Pull(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied != 2*openAheadDepth+5 {
		t.Fatalf("applied %d epochs, want %d", rep.Applied, 2*openAheadDepth+5)
	}
	if d := diffModels(w.m, viewOf(t, b, keysOf(w.m))); d != "" {
		t.Fatalf("after the first pull: %s", d)
	}

	if _, _, err := a.Rekey(ctx, *e.kek(), seal.KindPassphrase, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	write(100, openAheadDepth+3)
	rep, err = b.Pull(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied != openAheadDepth+4 { // the rekey's snapshot and the epochs after it
		t.Fatalf("applied %d epochs after the rekey, want %d", rep.Applied, openAheadDepth+4)
	}
	if b.opt.DEK != a.opt.DEK {
		t.Fatal("the pulling machine did not adopt the new data key")
	}
	if d := diffModels(w.m, viewOf(t, b, keysOf(w.m))); d != "" {
		t.Fatalf("after the rekey: %s", d)
	}
}

package replica

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"kintfs/replica/store"
)

// TestOwnEpochCacheRecoveredFromJournal: a push clears an epoch's journal entry only once the
// epoch's cache files are durable. A crash in between leaves the entry of an epoch the mirror
// holds and no files (or files not yet in place); the next push's recovery writes them from
// the entry, byte for byte what the push would have written, and clears it.
func TestOwnEpochCacheRecoveredFromJournal(t *testing.T) {
	e := newChainEnv(t)
	r := e.machine()
	w := &writer{t: t, r: r, m: model{}}
	for n := range 3 { // 2.5 KB of noise: one epoch a row
		w.write(fmt.Sprintf("state/r%d", n), noiseText(uint64(n), 2500))
	}
	pp := startPausedPush(r, StageReceipt)
	if !pp.wait(t) {
		t.Fatalf("the push ended before its first receipt: %v", <-pp.done)
	}
	pend, err := r.PendingPushes()
	if err != nil || len(pend) == 0 {
		t.Fatalf("journal while paused: %d entries, %v", len(pend), err)
	}
	entry := pend[0]
	if err := pp.finish(t, nil); err != nil {
		t.Fatalf("push: %v", err)
	}
	if pend, err := r.PendingPushes(); err != nil || len(pend) != 0 {
		t.Fatalf("journal after the push: %d entries, %v", len(pend), err)
	}

	dir := r.opt.Home.Path("epochs", r.vault.Space16())
	files := map[string][]byte{}
	for _, ext := range []string{".bin", ".json", ".meta.json"} {
		name := filepath.Join(dir, fmt.Sprintf("%08d%s", entry.Seq, ext))
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("the push cached no %s for epoch %d: %v", ext, entry.Seq, err)
		}
		files[name] = b
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	// the state a crash before the files were made durable leaves
	entry.Stage = store.JournalReceipt
	if err := r.store.PutPendingBatch([]store.PendingPush{entry}); err != nil {
		t.Fatal(err)
	}

	if got := flushAll(t, r); got != 0 { // recovery, then nothing to push
		t.Fatalf("the flush after made %d epochs", got)
	}
	for name, want := range files {
		got, err := os.ReadFile(name)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s after recovery: %d bytes, %v; want the %d bytes the push wrote", filepath.Base(name), len(got), err, len(want))
		}
	}
	if pend, err := r.PendingPushes(); err != nil || len(pend) != 0 {
		t.Fatalf("journal after recovery: %d entries, %v", len(pend), err)
	}
	w.check("after recovery", r, []string{"state/r0", "state/r1", "state/r2"})
}

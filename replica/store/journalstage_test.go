package store

import (
	"encoding/json"
	"kintfs/replica/vault"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// The push journal's stage moves on with the writes that happen anyway, never back, and an
// entry already cleared stays cleared; an entry written before the stage was kept reads back
// with none.
func TestPushJournalStages(t *testing.T) {
	s := newTestStore(t).Store
	stageOf := func(seq uint64) (JournalStage, uint64, bool) {
		t.Helper()
		pend, err := s.PendingPushes()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pend {
			if p.Seq == seq {
				return p.Stage, p.Block, true
			}
		}
		return 0, 0, false
	}
	if err := s.PutPending(&PendingPush{Seq: 1, Stage: JournalSealed}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPendingAfter(&PendingPush{Seq: 2, Stage: JournalSealed}, 1); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := stageOf(1); st != JournalSent {
		t.Fatalf("epoch 1 after epoch 2 was journaled: %s, want sent", st)
	}
	if err := s.SetPendingStage(2, JournalReceipt, 42); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPendingAfter(&PendingPush{Seq: 3, Stage: JournalSealed}, 2); err != nil {
		t.Fatal(err)
	}
	if st, block, _ := stageOf(2); st != JournalReceipt || block != 42 {
		t.Fatalf("epoch 2: %s in block %d, want its receipt kept", st, block)
	}
	seen := vault.Head{Seq: 2, Block: 42}
	if err := s.ClearPending([]uint64{2}, &seen); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Seen(); err != nil || h.Seq != 2 || h.Block != 42 {
		t.Fatalf("seen after the clear: %+v, %v", h, err)
	}
	if err := s.SetPendingStage(2, JournalReceipt, 43); err != nil {
		t.Fatal(err)
	}
	if _, _, found := stageOf(2); found {
		t.Fatal("a cleared entry came back")
	}
	// an entry as it was written before the stage was kept
	old, _ := json.Marshal(map[string]any{"seq": 4, "bucket": 4096})
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(pendingKey(4)), old) }); err != nil {
		t.Fatal(err)
	}
	if st, block, found := stageOf(4); !found || st != JournalUnknown || block != 0 || st.String() != "no stage" {
		t.Fatalf("an old entry: found %v, stage %s, block %d", found, st, block)
	} // an old entry moves on as a new one does, and one already further on stays there
	if err := s.PutPendingAfter(&PendingPush{Seq: 5, Stage: JournalSealed}, 4); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := stageOf(4); st != JournalSent {
		t.Fatalf("an old entry after the next was journaled: %s, want sent", st)
	}
	old, _ = json.Marshal(map[string]any{"seq": 6, "stage": JournalReceipt, "block": 77})
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(pendingKey(6)), old) }); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPendingAfter(&PendingPush{Seq: 7, Stage: JournalSealed}, 6); err != nil {
		t.Fatal(err)
	}
	if st, block, _ := stageOf(6); st != JournalReceipt || block != 77 {
		t.Fatalf("an old entry with its receipt: %s in block %d after the next was journaled", st, block)
	}
	// a cleared entry leaves no stage behind
	if err := s.ClearPending([]uint64{1, 3, 4, 5, 6, 7}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.db.View(func(txn *badger.Txn) error {
		return scanPrefix(txn, pJournalAt, func(k, v []byte) error {
			t.Errorf("stage of a cleared entry left: %x", k)
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
}

package store

import (
	"encoding/json"
	"kintfs/replica/vault"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// The push journal's stage moves on in a record of its own, never rewriting the entry; an
// entry already cleared stays cleared, with no stage left behind; an entry written before the
// stage was kept apart reads back with its own, until it is moved on.
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
	if err := s.PutPendingBatch([]PendingPush{{Seq: 1, Stage: JournalSealed}}); err != nil {
		t.Fatal(err)
	}
	// a batch: two entries in one commit
	if err := s.PutPendingBatch([]PendingPush{{Seq: 2, Stage: JournalSealed}, {Seq: 3, Stage: JournalSealed}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPendingStage(1, JournalSent, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPendingStage(2, JournalReceipt, 42); err != nil {
		t.Fatal(err)
	}
	for seq, want := range map[uint64]JournalStage{1: JournalSent, 2: JournalReceipt, 3: JournalSealed} {
		if st, _, found := stageOf(seq); !found || st != want {
			t.Errorf("epoch %d: found %v, %s, want %s", seq, found, st, want)
		}
	}
	if _, block, _ := stageOf(2); block != 42 {
		t.Errorf("epoch 2's receipt in block %d, want 42", block)
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
	// entries as they were written before the stage was kept apart
	for seq, entry := range map[uint64]map[string]any{4: {"seq": 4, "bucket": 4096}, 5: {"seq": 5, "stage": JournalReceipt, "block": 77}} {
		old, _ := json.Marshal(entry)
		if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(pendingKey(seq)), old) }); err != nil {
			t.Fatal(err)
		}
	}
	if st, block, found := stageOf(4); !found || st != JournalUnknown || block != 0 || st.String() != "no stage" {
		t.Fatalf("an old entry: found %v, stage %s, block %d", found, st, block)
	}
	if st, block, _ := stageOf(5); st != JournalReceipt || block != 77 {
		t.Fatalf("an old entry with its receipt: %s in block %d", st, block)
	}
	if err := s.SetPendingStage(4, JournalSent, 0); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := stageOf(4); st != JournalSent {
		t.Fatalf("an old entry moved on: %s, want sent", st)
	}
	if err := s.ClearPending([]uint64{1, 3, 4, 5}, nil); err != nil {
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

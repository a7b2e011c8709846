package store

import (
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// TestEpochsWithoutTimeFollowsWrites: the records a push or pull still has to give a block
// time are found after the first scan without scanning again: each epoch applied since, a
// history record, none once their times are set, and the same after a reopen.
func TestEpochsWithoutTimeFollowsWrites(t *testing.T) {
	r := newTestStore(t)
	state := map[string]seal.Row{}
	apply := func(seq uint64, time uint64) {
		t.Helper()
		row := seal.Row{Tier: seal.TierState, Key: "k", Body: seal.BodyString("v" + string(rune('0'+seq)))}
		p := plaintextFor(state, seq, []seal.Row{row}, nil)
		if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: seq, Block: 10 * seq, Digest: common.Hash{byte(seq)}, Time: time}, p, ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(what string, seqs ...uint64) {
		t.Helper()
		got, err := r.EpochsWithoutTime()
		if err != nil {
			t.Fatal(err)
		}
		ok := len(got) == len(seqs)
		for i := 0; ok && i < len(seqs); i++ {
			ok = got[i].Seq == seqs[i]
		}
		if !ok {
			t.Fatalf("%s: without a time %v, want seqs %v", what, got, seqs)
		}
	}
	apply(1, 0)
	apply(2, 1700000000)
	want("first scan", 1)
	apply(3, 0)
	apply(4, 0)
	want("after two more", 1, 3, 4)
	if err := r.SetEpochTimes([]vault.EpochInfo{{Seq: 1, Block: 10, Digest: common.Hash{1}, Time: 1}, {Seq: 3, Block: 30, Digest: common.Hash{3}, Time: 3}}); err != nil {
		t.Fatal(err)
	}
	want("after times set", 4)
	if err := r.RecordHistory(&vault.EpochInfo{Seq: 9, Block: 5}, nil); err != nil {
		t.Fatal(err)
	}
	want("after a history record", 4, 9)
	r = reopenTestStore(t, r)
	want("after a reopen", 4, 9)
	apply(5, 0)
	want("after a reopen and one more", 4, 5, 9)
}

package store

import (
	"testing"
	"time"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// TestHistoryHoles: the holes come from the records' seqs, each with the records on either side,
// and a write of an epoch record through the store drops the holes kept from before it.
func TestHistoryHoles(t *testing.T) {
	s := newTestStore(t)
	var infos []vault.EpochInfo
	for _, seq := range []uint64{2, 3, 4, 7, 8, 9, 12} {
		infos = append(infos, vault.EpochInfo{Seq: seq, Block: 10 * seq, CreatedAt: "t"})
	}
	putEpochRecords(t, s.Store, infos...)
	type hole struct{ lo, hi, below, above, aboveBlock uint64 }
	check := func(want ...hole) {
		t.Helper()
		holes, err := s.HistoryHoles()
		if err != nil {
			t.Fatal(err)
		}
		var got []hole
		for _, h := range holes {
			g := hole{lo: h.Lo, hi: h.Hi, above: h.Above.Seq, aboveBlock: h.Above.Block}
			if h.Below != nil {
				g.below = h.Below.Seq
			}
			got = append(got, g)
		}
		if len(got) != len(want) {
			t.Fatalf("holes %+v, want %+v", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("holes %+v, want %+v", got, want)
			}
		}
	}
	check(hole{1, 1, 0, 2, 20}, hole{5, 6, 4, 7, 70}, hole{10, 11, 9, 12, 120})
	if err := s.CheckHistory(55); err == nil {
		t.Fatal("block 55, in the hole under epoch 7, was not refused")
	}
	if err := s.CheckHistory(80); err != nil {
		t.Fatalf("block 80, recorded: %v", err)
	}
	// the store's own write of records 1, 5 and 6 (their block times) fills two holes
	if err := s.SetEpochTimes([]vault.EpochInfo{{Seq: 1, Block: 10, Time: 1}, {Seq: 5, Block: 50, Time: 5}, {Seq: 6, Block: 60, Time: 6}}); err != nil {
		t.Fatal(err)
	}
	check(hole{10, 11, 9, 12, 120})
	if err := s.CheckHistory(55); err != nil {
		t.Fatalf("block 55, recorded now: %v", err)
	}
}

// TestStagedKeepsAnchorAcrossOpen: a staged change over an anchored row still names the
// version it replaces after the store is opened again, and a row never anchored names none.
func TestStagedKeepsAnchorAcrossOpen(t *testing.T) {
	s := newTestStore(t)
	a := seal.Row{Tier: "state", Key: "a", Body: seal.BodyString("one")}
	p := plaintextFor(map[string]seal.Row{}, 1, []seal.Row{a}, nil)
	if _, _, err := s.ApplyEpoch(vault.EpochInfo{Seq: 1, Block: 10, Tx: "0x01"}, p, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	ka, kb := vault.Key{Tier: "state", Key: "a"}, vault.Key{Tier: "state", Key: "b"}
	for _, k := range []vault.Key{ka, kb} {
		if _, err := s.Write(k, []byte("two"), time.Unix(2, 0)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s.open(t)
	va, err := s.Get(ka)
	if err != nil || va == nil || !va.Staged || va.Anchor == nil || va.Anchor.Seq != 1 || va.Anchor.Block != 10 {
		t.Fatalf("a after reopening: %+v %v; want staged over epoch 1's version", va, err)
	}
	vb, err := s.Get(kb)
	if err != nil || vb == nil || !vb.Staged || vb.Anchor != nil {
		t.Fatalf("b after reopening: %+v %v; want staged, never anchored", vb, err)
	}
}

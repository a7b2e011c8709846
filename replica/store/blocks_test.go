package store

import (
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// TestBlocksTextCarriesBlockTimes: each .kint/blocks line is "seq block tx time", the time
// the block's in RFC 3339 UTC, "-" until it is known, and filled in once it is.
func TestBlocksTextCarriesBlockTimes(t *testing.T) {
	r := newTestStore(t)
	state := map[string]seal.Row{}
	for _, e := range []struct{ seq, time uint64 }{{1, 1767225600}, {2, 0}} {
		row := seal.Row{Tier: seal.TierState, Key: "k", Body: seal.BodyString("v" + string(rune('0'+e.seq)))}
		p := plaintextFor(state, e.seq, []seal.Row{row}, nil)
		info := vault.EpochInfo{Seq: e.seq, Block: 10 * e.seq, Tx: "0xt" + string(rune('0'+e.seq)), Digest: common.Hash{byte(e.seq)}, Time: e.time}
		if _, _, err := r.ApplyEpoch(info, p, ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := "1 10 0xt1 2026-01-01T00:00:00Z\n2 20 0xt2 -\n"
	if got := string(r.BlocksText()); got != want {
		t.Fatalf(".kint/blocks:\n%s\nwant:\n%s", got, want)
	}
	if err := r.SetEpochTimes([]vault.EpochInfo{{Seq: 2, Block: 20, Tx: "0xt2", Digest: common.Hash{2}, Time: 1767225612}}); err != nil {
		t.Fatal(err)
	}
	if got := string(r.BlocksText()); !strings.HasSuffix(got, "2 20 0xt2 2026-01-01T00:00:12Z\n") {
		t.Fatalf("after the time is read: %q", got)
	}
}

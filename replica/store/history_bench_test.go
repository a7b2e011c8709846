package store

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// BenchmarkHistoryRead times the store's part of a first read at an arbitrary @<block>: the
// calls a lookup of @<block>/entity/hist/row, its open and its read make, on a vault of 2,000
// rows in 20 categories whose one row has 300 versions.
func BenchmarkHistoryRead(b *testing.B) {
	r := newTestStore(b)
	state := map[string]seal.Row{}
	var rows []seal.Row
	for c := 0; c < 20; c++ {
		for k := 0; k < 100; k++ {
			rows = append(rows, seal.Row{Tier: "entity", Category: cat(fmt.Sprintf("c%02d", c)), Key: fmt.Sprintf("k%03d", k), Body: seal.BodyString(`{"v":0}`)})
		}
	}
	const versions = 300
	var blocks []uint64
	for seq := uint64(1); seq <= versions; seq++ {
		rows = append(rows, seal.Row{Tier: "entity", Category: cat("hist"), Key: "row", Body: seal.BodyString(fmt.Sprintf(`{"v":%d}`, seq))})
		p := plaintextFor(state, seq, rows, nil)
		block := 10 + 3*seq
		if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: seq, Block: block, Digest: common.Hash{byte(seq), byte(seq >> 8)}}, p, ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
		blocks = append(blocks, block)
		rows = nil
	}
	k := vault.Key{Tier: "entity", Category: "hist", HasCategory: true, Key: "row"}
	rng := rand.New(rand.NewPCG(1, 2))
	at := func() *History { return r.At(blocks[rng.IntN(len(blocks))] + uint64(rng.IntN(3))) }
	b.Run("CategoryCount", func(b *testing.B) {
		for b.Loop() {
			if _, err := at().CategoryCount(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("HasCategory", func(b *testing.B) {
		for b.Loop() {
			if !at().HasCategory("hist") {
				b.Fatal("no category hist")
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		for b.Loop() {
			if _, err := at().Get(k); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Read", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := at().Read(k); err != nil {
				b.Fatal(err)
			}
		}
	})
	// a first read at a block: the lookup of the row, then the read of the same view
	b.Run("GetThenRead", func(b *testing.B) {
		for b.Loop() {
			h := at()
			if _, err := h.Get(k); err != nil {
				b.Fatal(err)
			}
			if _, _, err := h.Read(k); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Content", func(b *testing.B) {
		for b.Loop() {
			if _, err := at().Content(k); err != nil {
				b.Fatal(err)
			}
		}
	})
}

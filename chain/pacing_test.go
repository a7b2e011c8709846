package chain_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/chain/devchain"
)

// TestReceiptPacedToBlockTime: on a chain with a block every 2 s, a push that knows the block
// time polls for its receipt a few times per block instead of backing off from 20 ms; both
// land, and the paced ones ask for fewer receipts.
func TestReceiptPacedToBlockTime(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2 s block chain")
	}
	d, err := devchain.Start(devchain.Config{DataDir: t.TempDir(), Period: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	key := d.Keys()[0]
	owner := crypto.PubkeyToAddress(key.PublicKey)
	space := crypto.Keccak256Hash([]byte("paced receipts"))
	const pushes = 3
	prev := common.Hash{}
	run := func(name string, opt chain.Options) (receipts uint64, took time.Duration) {
		c := dial(t, d.Info().RPC, d.Contract(), opt)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		for i := 0; i < pushes; i++ {
			r, err := c.SendRawBlob(ctx, key, owner, space, prev, bytes.Repeat([]byte(name), 10+i))
			if err != nil {
				t.Fatalf("%s: push %d: %v", name, i, err)
			}
			prev = r.Digest
		}
		st := c.Stats()
		return st.Methods["eth_getTransactionReceipt"], time.Since(start)
	}
	unpaced, tookU := run("unpaced", chain.Options{})
	paced, tookP := run("paced", chain.Options{BlockTime: 2 * time.Second})
	t.Logf("%d pushes on 2 s blocks: %d receipt polls in %v unpaced, %d in %v paced", pushes, unpaced, tookU.Round(time.Millisecond), paced, tookP.Round(time.Millisecond))
	if paced >= unpaced || paced > 5*pushes {
		t.Errorf("paced: %d receipt polls for %d pushes, unpaced %d", paced, pushes, unpaced)
	}
}

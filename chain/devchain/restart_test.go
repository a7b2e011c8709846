package devchain_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/chain/devchain"
)

// The acceptance flow, in-process: push three epochs through the chain client, restart the
// node from its data directory, walk them back and fetch them byte-exact, with at most two
// RPC round trips per epoch.
func TestPushRestartWalkFetch(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	opts := chain.Options{PollInterval: 10 * time.Millisecond}

	d, err := devchain.Start(devchain.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	info := d.Info()
	key := d.Keys()[0]
	owner := crypto.PubkeyToAddress(key.PublicKey)
	space := crypto.Keccak256Hash([]byte("kint-space-v1"), []byte("restart"))

	c, err := chain.Dial(ctx, info.RPC, common.HexToAddress(info.Contract), opts)
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	var (
		cts  [][]byte
		prev common.Hash
	)
	for i := 0; i < 3; i++ {
		ct := make([]byte, 200+i*1000)
		rand.Read(ct)
		p, err := c.PreparePush(ctx, key, owner, space, prev, ct)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Send(ctx, p); err != nil {
			t.Fatal(err)
		}
		r, err := c.WaitPush(ctx, p, owner, space, 2)
		if err != nil {
			t.Fatal(err)
		}
		if r.Seq != uint64(i+1) || r.Digest != crypto.Keccak256Hash(ct) {
			t.Fatalf("push %d: %+v", i, r)
		}
		prev = r.Digest
		cts = append(cts, ct)
	}
	headBefore, err := c.Head(ctx, owner, space)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d, err = devchain.Start(devchain.Config{DataDir: dir})
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer d.Close()
	if d.Info().Contract != info.Contract || d.Info().ChainID != info.ChainID || len(d.Info().Accounts) != len(info.Accounts) {
		t.Fatalf("after restart %+v, before %+v", d.Info(), info)
	}
	c, err = chain.Dial(ctx, d.Info().RPC, common.HexToAddress(d.Info().Contract), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	head, err := c.Head(ctx, owner, space)
	if err != nil {
		t.Fatal(err)
	}
	if head != headBefore || head.Seq != 3 {
		t.Fatalf("head after restart %+v, before %+v", head, headBefore)
	}
	// walk them back as a pull does: a discovery, each epoch at the block the newer one names
	finder := c.NewDiscovery(ctx, owner, space, 0)
	defer finder.Close()
	var evs []*chain.EpochEvent
	block, want := head.Block, head.Digest
	for seq := head.Seq; seq >= 1; seq-- {
		ev, err := finder.Next(ctx, block, seq, want)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Digest != want {
			t.Fatalf("epoch %d has digest %s, want %s", seq, ev.Digest.Hex(), want.Hex())
		}
		evs = append(evs, ev)
		block, want = ev.PrevBlock, ev.Prev
	}
	blobs, err := c.FetchBlobs(ctx, evs)
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs) != 3 {
		t.Fatalf("%d blobs", len(blobs))
	}
	for i, b := range blobs { // newest first
		if want := cts[2-i]; !bytes.Equal(b, want) {
			t.Fatalf("epoch %d: %d bytes back, %d sent, not equal", 3-i, len(b), len(want))
		}
	}

	// Dial (chain id) is not an epoch read; head + walk + fetch are.
	st := c.Stats()
	reads := st.Calls - st.Methods["eth_chainId"]
	t.Logf("reading 3 epochs: %d round trips (%v), %d retries", reads, st.Methods, st.Retries)
	if perEpoch := float64(reads) / 3; perEpoch > 2 {
		t.Fatalf("%.2f RPC round trips per epoch, want at most 2", perEpoch)
	}
	// one ranged log query finds all three
	if st.Methods["eth_getLogs"] != 1 || st.Methods["eth_getTransactionByHash"] != 3 {
		t.Fatalf("methods %v", st.Methods)
	}

	// The chain goes on where it was.
	r, err := c.SendRawBlob(ctx, key, owner, space, head.Digest, []byte("epoch four"))
	if err != nil || r.Seq != 4 || r.Event.PrevBlock != head.Block {
		t.Fatalf("push after restart: %+v %v", r, err)
	}
}

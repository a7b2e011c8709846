package chain_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/chain/devchain"
	"kintfs/chain/rpcproxy"
)

func TestHeadWalkFetch(t *testing.T) {
	e := newEnv(t)
	if h := e.head(); h != (chain.Head{}) {
		t.Fatalf("fresh space head %+v", h)
	}
	if evs, _, err := e.walk(e.c, chain.Head{}, walkOpts{}); err != nil || len(evs) != 0 {
		t.Fatalf("walk of an empty space: %v, %v", evs, err)
	}
	cts := e.pushN(4)
	h := e.head()
	if h.Seq != 4 || h.Digest != crypto.Keccak256Hash(cts[3]) {
		t.Fatalf("head %+v", h)
	}

	// the exact-block path (what discovery falls back to): one log query per epoch
	before := e.c.Stats()
	evs, _, err := e.walk(e.c, h, walkOpts{exact: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 {
		t.Fatalf("walked %d epochs", len(evs))
	}
	for i, ev := range evs {
		seq := uint64(4 - i)
		if ev.Seq != seq || ev.Owner != e.owner || ev.Space != e.space || ev.Writer != e.owner ||
			ev.Digest != crypto.Keccak256Hash(cts[seq-1]) {
			t.Fatalf("event %d: %+v", i, ev)
		}
		if seq == 1 && (ev.Prev != common.Hash{} || ev.PrevBlock != 0) {
			t.Fatalf("first epoch %+v", ev)
		}
		if seq > 1 && (ev.Prev != evs[i+1].Digest || ev.PrevBlock != evs[i+1].Block) {
			t.Fatalf("epoch %d does not link to %d", seq, seq-1)
		}
	}
	if evs[0].Block != h.Block {
		t.Fatalf("newest event at block %d, head says %d", evs[0].Block, h.Block)
	}
	blobs, err := e.c.FetchBlobs(e.ctx, evs)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range blobs {
		if !bytes.Equal(b, cts[3-i]) {
			t.Fatalf("blob %d differs", i)
		}
	}
	after := e.c.Stats()
	if calls := after.Calls - before.Calls; calls != 4+1 {
		t.Errorf("walk + fetch of 4 epochs took %d round trips, want 5", calls)
	}
	if n := after.Methods["eth_getLogs"] - before.Methods["eth_getLogs"]; n != 4 {
		t.Errorf("%d eth_getLogs, want 4", n)
	}
	if n := after.Methods["eth_getTransactionByHash"] - before.Methods["eth_getTransactionByHash"]; n != 4 {
		t.Errorf("%d eth_getTransactionByHash, want 4", n)
	}
	// the ranged path finds the same events in one log query
	before = e.c.Stats()
	ranged, st, err := e.walk(e.c, h, walkOpts{})
	if err != nil || len(ranged) != len(evs) || st.FromRange != 4 {
		t.Fatalf("ranged walk: %d events, %+v, %v", len(ranged), st, err)
	}
	for i := range ranged {
		if *ranged[i] != *evs[i] {
			t.Fatalf("ranged event %d is %+v, want %+v", i, ranged[i], evs[i])
		}
	}
	if n := e.c.Stats().Methods["eth_getLogs"] - before.Methods["eth_getLogs"]; n != 1 {
		t.Errorf("ranged walk of 4 epochs: %d eth_getLogs, want 1", n)
	}

	// EpochAt finds each one at its block, and nothing at the wrong block or seq.
	ev, err := e.c.EpochAt(e.ctx, e.owner, e.space, evs[1].Block, 3)
	if err != nil || *ev != *evs[1] {
		t.Fatalf("EpochAt: %+v, %v", ev, err)
	}
	_, err = e.c.EpochAt(e.ctx, e.owner, e.space, evs[1].Block, 2)
	var nee *chain.NoEventError
	if !errors.As(err, &nee) || !errors.Is(err, chain.ErrNoEvent) ||
		err.Error() != "no Epoch event for seq 2 at block "+big.NewInt(int64(evs[1].Block)).String() {
		t.Fatalf("EpochAt wrong seq: %v", err)
	}
}

// A walk down to an epoch already applied here reads nothing at or below its block, ends
// above it, and is refused when the newest epoch walked does not build on it.
func TestWalkStop(t *testing.T) {
	e := newEnv(t)
	e.pushN(5)
	h := e.head()
	all, _, err := e.walk(e.c, h, walkOpts{})
	if err != nil {
		t.Fatal(err)
	}
	ev3 := all[2] // "already applied"
	known := chain.Head{Digest: ev3.Digest, Seq: ev3.Seq, Block: ev3.Block}

	p := newProxy(t, e.dev.Info().RPC)
	c := dial(t, p.URL, e.dev.Contract(), testOpts)
	var mu sync.Mutex
	lowest := ^uint64(0) // the lowest block a log query asked for
	p.SetRewrite(func(method string, params, result json.RawMessage) json.RawMessage {
		if from, _, ok := rpcproxy.LogRange(params); method == "eth_getLogs" && ok {
			mu.Lock()
			lowest = min(lowest, from)
			mu.Unlock()
		}
		return result
	})
	evs, _, err := e.walk(c, h, walkOpts{known: known})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Seq != 5 || evs[1].Seq != 4 || evs[1].Prev != known.Digest {
		t.Fatalf("walk stopped with %d events", len(evs))
	}
	mu.Lock()
	if lowest < known.Block {
		t.Fatalf("a log query asked for block %d, below the known epoch's %d", lowest, known.Block)
	}
	mu.Unlock()

	// a known epoch the chain does not build on: refused
	forked := known
	forked.Digest = common.Hash{3}
	if _, _, err := e.walk(c, h, walkOpts{known: forked}); !errors.Is(err, chain.ErrBrokenChain) {
		t.Fatalf("walk onto another epoch 3: %v", err)
	}

	// known is the head itself: nothing new, nothing asked
	p.ResetStats()
	evs, _, err = e.walk(c, h, walkOpts{known: h})
	if err != nil || len(evs) != 0 || p.Stats().Seen["eth_getLogs"] != 0 {
		t.Fatalf("walk stopped at head: %d events, %v, %v", len(evs), p.Stats().Seen, err)
	}
}

// Two epochs of one space in one block: prevBlock == block, and one log query serves both.
func TestWalkEpochsInOneBlock(t *testing.T) {
	d, err := devchain.Start(devchain.Config{DataDir: t.TempDir(), Period: 3600})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c := dial(t, d.Info().RPC, d.Contract(), testOpts)
	key := d.Keys()[1]
	owner := crypto.PubkeyToAddress(key.PublicKey)
	space := crypto.Keccak256Hash([]byte("one-block"))
	ctx := t.Context()

	ct1, ct2 := []byte("epoch one"), []byte("epoch two")
	p1, err := c.PreparePush(ctx, key, owner, space, common.Hash{}, ct1)
	if err != nil {
		t.Fatal(err)
	}
	// The second builds on the first before it is mined, so it cannot be estimated: sign
	// it by hand with the first's fees and the next nonce.
	tx2, err := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(int64(c.ChainID()))), &types.DynamicFeeTx{
		ChainID: big.NewInt(int64(c.ChainID())), Nonce: p1.Nonce + 1, GasTipCap: p1.Tx.GasTipCap(), GasFeeCap: p1.Tx.GasFeeCap(),
		Gas: 200_000, To: &[]common.Address{d.Contract()}[0], Data: chain.EncodePushCalldata(owner, space, p1.Digest, ct2),
	})
	if err != nil {
		t.Fatal(err)
	}
	p2 := &chain.PreparedPush{Tx: tx2, Hash: tx2.Hash(), Digest: crypto.Keccak256Hash(ct2), Nonce: tx2.Nonce()}
	for _, p := range []*chain.PreparedPush{p1, p2} {
		if err := c.Send(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	r2, err := c.WaitPush(ctx, p2, owner, space, 1)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := c.WaitPush(ctx, p1, owner, space, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Block != r2.Block || r2.Event.PrevBlock != r1.Block || r2.Seq != 2 {
		t.Fatalf("epochs at blocks %d and %d (prevBlock %d)", r1.Block, r2.Block, r2.Event.PrevBlock)
	}
	h, err := c.Head(ctx, owner, space)
	if err != nil {
		t.Fatal(err)
	}
	before := c.Stats().Methods["eth_getLogs"]
	evs, _, err := walkDown(ctx, c, owner, space, h, walkOpts{})
	if err != nil || len(evs) != 2 {
		t.Fatalf("walk: %d events, %v", len(evs), err)
	}
	if n := c.Stats().Methods["eth_getLogs"] - before; n != 1 {
		t.Fatalf("walk of two epochs in one block made %d log queries", n)
	}
	blobs, err := c.FetchBlobs(ctx, evs)
	if err != nil || !bytes.Equal(blobs[0], ct2) || !bytes.Equal(blobs[1], ct1) {
		t.Fatalf("blobs: %v", err)
	}
}

// A lying or pruned RPC: every inconsistency stops the walk by name.
func TestWalkRefusesLyingRPC(t *testing.T) {
	e := newEnv(t)
	e.pushN(3)
	h := e.head()
	exact := walkOpts{exact: true} // the answers of the exact blocks, which a range cannot override
	good, _, err := e.walk(e.c, h, exact)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, e.dev.Info().RPC)
	c := dial(t, p.URL, e.dev.Contract(), testOpts)

	// Logs withheld for the middle epoch's block.
	p.SetRewrite(func(method string, params, result json.RawMessage) json.RawMessage {
		if method == "eth_getLogs" && strings.Contains(string(params), hexutil.EncodeUint64(good[1].Block)) {
			return json.RawMessage("[]")
		}
		return result
	})
	evs, _, err := e.walk(c, h, exact)
	if !errors.Is(err, chain.ErrNoEvent) || len(evs) != 1 ||
		err.Error() != (&chain.NoEventError{Seq: 2, Block: good[1].Block}).Error() {
		t.Fatalf("withheld logs: %d events, %v", len(evs), err)
	}

	// The middle epoch's digest changed in its own block's logs: the chain no longer links.
	forged := strings.Repeat("ab", 32)
	p.SetRewrite(func(method string, params, result json.RawMessage) json.RawMessage {
		if method == "eth_getLogs" && strings.Contains(string(params), hexutil.EncodeUint64(good[1].Block)) {
			return json.RawMessage(strings.ReplaceAll(string(result), good[1].Digest.Hex()[2:], forged))
		}
		return result
	})
	_, _, err = e.walk(c, h, exact)
	if !errors.Is(err, chain.ErrBrokenChain) {
		t.Fatalf("altered digest: %v", err)
	}
	// Changed consistently in every log, the events link, but the calldata gives it away.
	p.SetRewrite(func(method string, params, result json.RawMessage) json.RawMessage {
		if method == "eth_getLogs" {
			return json.RawMessage(strings.ReplaceAll(string(result), good[1].Digest.Hex()[2:], forged))
		}
		return result
	})
	evs, _, err = e.walk(c, h, exact)
	if err != nil || len(evs) != 3 {
		t.Fatalf("consistent forgery: %d events, %v", len(evs), err)
	}
	if _, err := c.FetchBlobs(e.ctx, evs); !errors.Is(err, chain.ErrCalldataMismatch) && !errors.Is(err, chain.ErrDigestMismatch) {
		t.Fatalf("consistent forgery fetched: %v", err)
	}

	// The head itself does not match the newest event.
	p.SetRewrite(nil)
	bad := h
	bad.Digest = common.Hash{1}
	if _, _, err := e.walk(c, bad, exact); !errors.Is(err, chain.ErrBrokenChain) {
		t.Fatalf("head mismatch: %v", err)
	}

	// eth_getTransactionByHash answers with another transaction.
	p.SetRewrite(func(method string, params, result json.RawMessage) json.RawMessage {
		if method == "eth_getTransactionByHash" && strings.Contains(string(params), good[0].TxHash.Hex()[2:]) {
			var other json.RawMessage
			if err := rpcCall(e.dev.Info().RPC, &other, "eth_getTransactionByHash", good[2].TxHash); err == nil {
				return other
			}
		}
		return result
	})
	_, err = c.FetchBlobs(e.ctx, good)
	if !errors.Is(err, chain.ErrTxMismatch) {
		t.Fatalf("swapped transaction: %v", err)
	}
	// ... or with nothing.
	p.SetRewrite(func(method string, params, result json.RawMessage) json.RawMessage {
		if method == "eth_getTransactionByHash" {
			return json.RawMessage("null")
		}
		return result
	})
	if _, err = c.FetchBlobs(e.ctx, good); !errors.Is(err, chain.ErrTxNotFound) {
		t.Fatalf("missing transaction: %v", err)
	}
}

// Events that point at the wrong transaction are refused by FetchBlobs, each by name.
func TestFetchBlobsChecks(t *testing.T) {
	e := newEnv(t)
	cts := e.pushN(2)
	evs, _, err := e.walk(e.c, e.head(), walkOpts{})
	if err != nil {
		t.Fatal(err)
	}
	ev := *evs[0]

	check := func(name string, mutate func(ev *chain.EpochEvent), want error) {
		t.Helper()
		bad := ev
		mutate(&bad)
		_, err := e.c.FetchBlobs(e.ctx, []*chain.EpochEvent{evs[1], &bad})
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
		if err != nil && !strings.Contains(err.Error(), "epoch 2") {
			t.Errorf("%s: error does not name the epoch: %v", name, err)
		}
	}
	check("owner", func(ev *chain.EpochEvent) { ev.Owner = common.Address{1} }, chain.ErrCalldataMismatch)
	check("space", func(ev *chain.EpochEvent) { ev.Space = common.Hash{1} }, chain.ErrCalldataMismatch)
	check("prev", func(ev *chain.EpochEvent) { ev.Prev = common.Hash{1} }, chain.ErrCalldataMismatch)
	check("digest", func(ev *chain.EpochEvent) { ev.Digest = common.Hash{1} }, chain.ErrDigestMismatch)

	// A transaction to someone else, and a call to the contract that is not push.
	_, to := e.newKey(false)
	fund := fundTx(t, e, to)
	check("wrong contract", func(ev *chain.EpochEvent) { ev.TxHash = fund }, chain.ErrWrongContract)
	other := contractCallTx(t, e)
	check("not push", func(ev *chain.EpochEvent) { ev.TxHash = other }, chain.ErrNotPush)

	blobs, err := e.c.FetchBlobs(e.ctx, evs)
	if err != nil || !bytes.Equal(blobs[0], cts[1]) {
		t.Fatalf("unmodified events: %v", err)
	}
}

// A node that answers that a block lies past its head (behind the node that gave the receipt)
// is asked again until it has caught up; one that never does gets its own answer back, not
// "cannot reach the RPC".
func TestEpochAtWaitsForLaggingNode(t *testing.T) {
	e := newEnv(t)
	e.pushN(2)
	h := e.head()
	p := newProxy(t, e.dev.Info().RPC)
	c := dial(t, p.URL, e.dev.Contract(), testOpts)
	const behind = "block range extends beyond current head block"
	var mu sync.Mutex
	lag := 3 // answers before the node has caught up
	p.SetRefuse(func(method string, _ json.RawMessage) string {
		mu.Lock()
		defer mu.Unlock()
		if method == "eth_getLogs" && lag > 0 {
			lag--
			return behind
		}
		return ""
	})
	ev, err := c.EpochAt(e.ctx, e.owner, e.space, h.Block, h.Seq)
	if err != nil || ev.Digest != h.Digest {
		t.Fatalf("EpochAt through a lagging node: %+v, %v", ev, err)
	}
	if n := p.Seen("eth_getLogs"); n != 4 {
		t.Errorf("%d eth_getLogs, want 4: three answered from behind the head, then the event", n)
	}
	p.SetRefuse(func(method string, _ json.RawMessage) string {
		if method == "eth_getLogs" {
			return behind
		}
		return ""
	})
	_, err = c.EpochAt(e.ctx, e.owner, e.space, h.Block, h.Seq)
	if err == nil || !strings.Contains(err.Error(), behind) || errors.Is(err, chain.ErrUnreachable) {
		t.Fatalf("a node that never catches up: %v", err)
	}
}

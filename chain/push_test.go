package chain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"kintfs/chain"
	"kintfs/chain/devchain"
)

func TestPrepareReportsReverts(t *testing.T) {
	e := newEnv(t)
	r := e.push(common.Hash{}, []byte("one"))

	// Stale prev: the decoded error, by name and by sentinel.
	_, err := e.c.PreparePush(e.ctx, e.key, e.owner, e.space, common.Hash{}, []byte("two"))
	want := "transaction would revert: StaleHead(expected " + r.Digest.Hex() + ", got " + common.Hash{}.Hex() + ")"
	if err == nil || err.Error() != want {
		t.Fatalf("stale push: %v\nwant %s", err, want)
	}
	var rev *chain.RevertError
	if !errors.Is(err, chain.ErrWouldRevert) || !errors.Is(err, chain.ErrStaleHead) || !errors.As(err, &rev) {
		t.Fatalf("stale push error does not match: %v", err)
	}
	if rev.Name != "StaleHead" || rev.Args[0].([32]byte) != r.Digest || errors.Is(err, chain.ErrNotAuthorized) {
		t.Fatalf("decoded %+v", rev)
	}

	// A stranger: NotAuthorized comes first, even with an empty ct.
	k, _ := e.newKey(true)
	_, err = e.c.PreparePush(e.ctx, k, e.owner, e.space, r.Digest, nil)
	if !errors.Is(err, chain.ErrNotAuthorized) || err.Error() != "transaction would revert: NotAuthorized()" {
		t.Fatalf("stranger: %v", err)
	}
	_, err = e.c.PreparePush(e.ctx, e.key, e.owner, e.space, r.Digest, nil)
	if !errors.Is(err, chain.ErrEmptyCiphertext) {
		t.Fatalf("empty ct: %v", err)
	}
	// An unfunded owner key: the push is valid, sending it is not.
	poor, poorAddr := e.newKey(false)
	pp, err := e.c.PreparePush(e.ctx, poor, poorAddr, e.space, common.Hash{}, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	err = e.c.Send(e.ctx, pp)
	var fe *chain.FundsError
	if !errors.Is(err, chain.ErrInsufficientFunds) || !errors.As(err, &fe) || fe.Address != poorAddr || fe.Have.Sign() != 0 ||
		fe.Want.Cmp(pp.Tx.Cost()) != 0 || !strings.Contains(err.Error(), "fund "+poorAddr.Hex()) {
		t.Fatalf("unfunded key: %v", err)
	}
}

func TestPushReceiptAndGasFloor(t *testing.T) {
	e := newEnv(t)
	ct := make([]byte, 4096+16+59+77)
	for i := range ct {
		ct[i] = byte(i*7 + 1)
	}
	first := e.push(common.Hash{}, ct)
	ct2 := append([]byte(nil), ct...)
	ct2[0] ^= 0xff
	bal0, err := e.c.Balance(e.ctx, e.owner)
	if err != nil {
		t.Fatal(err)
	}

	p, err := e.c.PreparePush(e.ctx, e.key, e.owner, e.space, first.Digest, ct2)
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest != crypto.Keccak256Hash(ct2) || p.Hash != p.Tx.Hash() || p.Nonce != p.Tx.Nonce() {
		t.Fatalf("prepared %+v", p)
	}
	if found, _, err := e.c.TxStatus(e.ctx, p.Hash); err != nil || found {
		t.Fatalf("unsent transaction found: %v", err)
	}
	if err := e.c.Send(e.ctx, p); err != nil {
		t.Fatal(err)
	}
	r, err := e.c.WaitPush(e.ctx, p, e.owner, e.space, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Seq != 2 || r.Digest != p.Digest || r.TxHash != p.Hash || r.Event.Prev != first.Digest || r.Event.PrevBlock != first.Block {
		t.Fatalf("receipt %+v", r)
	}
	data := p.Tx.Data()
	zeros := uint64(bytes.Count(data, []byte{0}))
	floor := 21000 + 10*(zeros+4*(uint64(len(data))-zeros))
	if r.GasUsed != floor {
		t.Fatalf("gasUsed %d, want the EIP-7623 floor %d", r.GasUsed, floor)
	}
	if r.L1Fee != nil || r.EffectiveGasPrice.Sign() <= 0 ||
		r.Cost.Cmp(new(big.Int).Mul(big.NewInt(int64(r.GasUsed)), r.EffectiveGasPrice)) != 0 {
		t.Fatalf("cost %v = %d * %v + %v", r.Cost, r.GasUsed, r.EffectiveGasPrice, r.L1Fee)
	}
	bal1, err := e.c.Balance(e.ctx, e.owner)
	if err != nil {
		t.Fatal(err)
	}
	if spent := new(big.Int).Sub(bal0, bal1); spent.Cmp(r.Cost) != 0 {
		t.Fatalf("balance went down by %v, receipt says %v", spent, r.Cost)
	}
	found, block, err := e.c.TxStatus(e.ctx, p.Hash)
	if err != nil || !found || block != r.Block {
		t.Fatalf("TxStatus: %v %d %v", found, block, err)
	}
	n, err := e.c.BlockNumber(e.ctx)
	if err != nil || n < r.Block+1 {
		t.Fatalf("block number %d after 2 confirmations of block %d: %v", n, r.Block, err)
	}
}

func TestSendIsIdempotent(t *testing.T) {
	e := newEnv(t)
	p, err := e.c.PreparePush(e.ctx, e.key, e.owner, e.space, common.Hash{}, []byte("once"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // mined at once on the dev chain: later sends see "nonce too low"
		if err := e.c.Send(e.ctx, p); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if _, err := e.c.WaitPush(e.ctx, p, e.owner, e.space, 1); err != nil {
		t.Fatal(err)
	}
	// A different transaction with a used nonce is refused, and not retried.
	other, err := e.c.PreparePush(e.ctx, e.key, e.owner, e.space, crypto.Keccak256Hash([]byte("once")), []byte("twice"))
	if err != nil {
		t.Fatal(err)
	}
	stale := *other
	stale.Tx, err = resign(e, other, p.Nonce)
	if err != nil {
		t.Fatal(err)
	}
	stale.Hash = stale.Tx.Hash()
	retries := e.c.Stats().Retries
	if err := e.c.Send(e.ctx, &stale); err == nil || !strings.Contains(err.Error(), "nonce too low") {
		t.Fatalf("reused nonce: %v", err)
	}
	if e.c.Stats().Retries != retries {
		t.Fatal("nonce too low was retried")
	}
}

// With Period 0 and no trailing blocks, only Commit produces the confirmations WaitPush waits for.
func TestWaitPushWaitsForConfirmations(t *testing.T) {
	d, err := devchain.Start(devchain.Config{DataDir: t.TempDir(), Confirmations: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c := dial(t, d.Info().RPC, d.Contract(), testOpts)
	key := d.Keys()[0]
	owner := crypto.PubkeyToAddress(key.PublicKey)
	space := common.Hash{7}
	ctx := t.Context()

	p, err := c.PreparePush(ctx, key, owner, space, common.Hash{}, []byte("wait"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, p); err != nil {
		t.Fatal(err)
	}
	type result struct {
		r   *chain.PushReceipt
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := c.WaitPush(ctx, p, owner, space, 3)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		t.Fatalf("WaitPush returned before any confirmation: %+v %v", res.r, res.err)
	case <-time.After(300 * time.Millisecond):
	}
	for i := 0; i < 2; i++ {
		if err := d.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case res := <-done:
		if res.err != nil || res.r.Seq != 1 {
			t.Fatalf("WaitPush: %+v %v", res.r, res.err)
		}
		if n, _ := c.BlockNumber(ctx); n != res.r.Block+2 {
			t.Fatalf("head %d, receipt block %d", n, res.r.Block)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitPush did not return after the confirmations")
	}

	// A context that ends first stops the wait.
	p2, err := c.PreparePush(ctx, key, owner, space, p.Digest, []byte("never confirmed"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, p2); err != nil {
		t.Fatal(err)
	}
	short, cancel := contextWithTimeout(t, 200*time.Millisecond)
	defer cancel()
	if _, err := c.WaitPush(short, p2, owner, space, 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitPush with a short context: %v", err)
	}
}

// WaitPush takes the event from the receipt and refuses one whose digest is not what was sent.
func TestWaitPushChecksTheEvent(t *testing.T) {
	e := newEnv(t)
	p := newProxy(t, e.dev.Info().RPC)
	c := dial(t, p.URL, e.dev.Contract(), testOpts)
	pp, err := c.PreparePush(e.ctx, e.key, e.owner, e.space, common.Hash{}, []byte("sent"))
	if err != nil {
		t.Fatal(err)
	}
	var forge atomic.Bool // read by the proxy
	forge.Store(true)
	p.SetRewrite(func(method string, params, result json.RawMessage) json.RawMessage {
		if method == "eth_getTransactionReceipt" && string(result) != "null" {
			if forge.Load() {
				result = json.RawMessage(strings.ReplaceAll(string(result), pp.Digest.Hex()[2:], strings.Repeat("cd", 32)))
			}
			// An OP-stack receipt carries the L1 data fee.
			var m map[string]any
			json.Unmarshal(result, &m)
			m["l1Fee"] = "0x2a"
			b, _ := json.Marshal(m)
			return b
		}
		return result
	})
	if err := c.Send(e.ctx, pp); err != nil {
		t.Fatal(err)
	}
	_, err = c.WaitPush(e.ctx, pp, e.owner, e.space, 1)
	if !errors.Is(err, chain.ErrEventMismatch) || !strings.Contains(err.Error(), "epoch 1 landed but the Epoch event digest does not match what was sent") {
		t.Fatalf("forged read-back: %v", err)
	}
	// Without the forgery the same push reads back fine, and the l1Fee is in the cost.
	forge.Store(false)
	r, err := c.WaitPush(e.ctx, pp, e.owner, e.space, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := new(big.Int).Mul(big.NewInt(int64(r.GasUsed)), r.EffectiveGasPrice)
	want.Add(want, big.NewInt(42))
	if r.L1Fee == nil || r.L1Fee.Int64() != 42 || r.Cost.Cmp(want) != 0 {
		t.Fatalf("l1Fee %v, cost %v, want %v", r.L1Fee, r.Cost, want)
	}
}

func TestFailedTransaction(t *testing.T) {
	e := newEnv(t)
	// Too little gas for the storage writes: mined, status 0.
	p, err := e.c.PreparePush(e.ctx, e.key, e.owner, e.space, common.Hash{}, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := resignWithGas(e, p, 30_000)
	if err != nil {
		t.Fatal(err)
	}
	p.Tx, p.Hash = tx, tx.Hash()
	if err := e.c.Send(e.ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.WaitPush(e.ctx, p, e.owner, e.space, 1); !errors.Is(err, chain.ErrTxFailed) {
		t.Fatalf("out-of-gas push: %v", err)
	}
}

func TestFund(t *testing.T) {
	e := newEnv(t)
	_, a := e.newKey(false)
	amount := big.NewInt(3 * params.GWei)
	if err := e.c.Fund(e.ctx, e.key, a, amount); err != nil {
		t.Fatal(err)
	}
	if b, err := e.c.Balance(e.ctx, a); err != nil || b.Cmp(amount) != 0 {
		t.Fatalf("balance %v, %v", b, err)
	}
}

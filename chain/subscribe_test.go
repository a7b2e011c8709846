package chain_test

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
	"kintfs/chain/rpcproxy"
)

// TestSubscribeEpochs: a subscription on the dev chain's websocket hears a push of its space
// within a second, not one of another space, and ends with an error when the socket drops.
func TestSubscribeEpochs(t *testing.T) {
	e := newEnv(t)
	info := e.dev.Info()
	if !chain.IsWebsocketURL(info.WS) {
		t.Fatalf("devchain ws URL %q", info.WS)
	}
	u, _ := url.Parse(info.WS)
	cut, err := rpcproxy.StartCut(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cut.Cut)
	ctx, cancel := contextWithTimeout(t, 30*time.Second)
	defer cancel()
	if _, err := chain.SubscribeEpochs(ctx, info.WS, info.ChainID+1, e.dev.Contract(), e.owner, e.space); err == nil {
		t.Fatal("a subscription on the wrong chain id was accepted")
	}
	sub, err := chain.SubscribeEpochs(ctx, "ws://"+cut.Addr(), info.ChainID, e.dev.Contract(), e.owner, e.space)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	other := newEnv(t) // another space: not heard
	other.push(common.Hash{}, []byte("another space"))
	start := time.Now()
	r := e.push(common.Hash{}, []byte("first epoch"))
	select {
	case b := <-sub.Blocks():
		if b != r.Block {
			t.Fatalf("woken for block %d, the push landed in %d", b, r.Block)
		}
		t.Logf("heard the push %v after it was sent", time.Since(start).Round(time.Millisecond))
	case err := <-sub.Err():
		t.Fatal(err)
	case <-time.After(time.Second + time.Since(start)):
		t.Fatal("no wake-up within a second of the block")
	}
	select {
	case b := <-sub.Blocks():
		t.Fatalf("a second wake-up (block %d) for one push", b)
	case <-time.After(300 * time.Millisecond):
	}

	cut.Cut()
	select {
	case err := <-sub.Err():
		if err == nil || errors.Is(err, chain.ErrSubscriptionClosed) {
			t.Fatalf("subscription ended with %v, want the socket's error", err)
		}
		t.Logf("dropped socket: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the subscription did not notice the dropped socket")
	}
}

package chain_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
	"kintfs/chain/rpcproxy"
)

func TestRetriesTransportFailures(t *testing.T) {
	e := newEnv(t)
	p := newProxy(t, e.dev.Info().RPC)
	c := dial(t, p.URL, e.dev.Contract(), testOpts)

	// Dropped connections and 502s are retried, each retry counted.
	p.FaultNext("", rpcproxy.Drop, 2)
	p.FaultNext("", rpcproxy.Error, 1)
	if _, err := c.BlockNumber(e.ctx); err != nil {
		t.Fatalf("after 3 transport failures: %v", err)
	}
	st := c.Stats()
	if st.Retries != 3 || st.Methods["eth_blockNumber"] != 1 {
		t.Fatalf("stats %+v, want 3 retries of one eth_blockNumber", st)
	}

	// A slow answer: the attempt times out on its own and is retried.
	slow := dial(t, p.URL, e.dev.Contract(), chain.Options{CallTimeout: time.Second, Backoff: 10 * time.Millisecond})
	p.DelayNext("", 20*time.Second, 1)
	start := time.Now()
	if _, err := slow.Head(e.ctx, e.owner, e.space); err != nil {
		t.Fatalf("after a timeout: %v", err)
	}
	if slow.Stats().Retries < 1 || time.Since(start) > 10*time.Second {
		t.Fatalf("timeout retry: %+v after %v", slow.Stats(), time.Since(start))
	}

	// Batches are retried whole.
	e.pushN(1)
	evs, _, err := e.walk(e.c, e.head(), walkOpts{})
	if err != nil {
		t.Fatal(err)
	}
	p.FaultNext("", rpcproxy.Drop, 1)
	before := c.Stats()
	if _, err := c.FetchBlobs(e.ctx, evs); err != nil {
		t.Fatal(err)
	}
	if after := c.Stats(); after.Retries-before.Retries != 1 || after.Calls-before.Calls != 1 {
		t.Fatalf("batch retry: %+v -> %+v", before, after)
	}

	// Bounded: after Retries extra attempts the failure is returned.
	bounded := dial(t, p.URL, e.dev.Contract(), chain.Options{Retries: 2, Backoff: time.Millisecond})
	p.FaultNext("", rpcproxy.Drop, 10)
	if _, err := bounded.BlockNumber(e.ctx); err == nil {
		t.Fatal("no error after the retries ran out")
	}
	if st := bounded.Stats(); st.Retries != 2 {
		t.Fatalf("bounded retries: %+v", st)
	}
	p.ClearFaults()
}

func TestNoRetryOnAnswers(t *testing.T) {
	e := newEnv(t)
	e.push(common.Hash{}, []byte("a"))
	before := e.c.Stats()
	_, err := e.c.PreparePush(e.ctx, e.key, e.owner, e.space, common.Hash{}, []byte("b"))
	if !errors.Is(err, chain.ErrStaleHead) {
		t.Fatal(err)
	}
	if e.c.Stats().Retries != before.Retries {
		t.Fatal("a revert was retried")
	}
}

func TestDialFailures(t *testing.T) {
	// Nothing listens there: Dial retries, then gives up with the transport error.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err = chain.Dial(ctx, "http://"+addr, common.Address{}, chain.Options{Retries: 3, Backoff: 20 * time.Millisecond})
	if err == nil {
		t.Fatal("dial of a closed port succeeded")
	}
	// 20 + 40 + 80 ms of backoff.
	if d := time.Since(start); d < 140*time.Millisecond {
		t.Fatalf("gave up after %v: no backoff", d)
	}

	// A contract address without code.
	e := newEnv(t)
	c := dial(t, e.dev.Info().RPC, common.Address{0xde, 0xad}, testOpts)
	if _, err := c.Head(e.ctx, e.owner, e.space); !errors.Is(err, chain.ErrNoContract) {
		t.Fatalf("head from an empty address: %v", err)
	}
	if c.ChainID() != 1337 || c.Contract() != (common.Address{0xde, 0xad}) {
		t.Fatal("chain id or contract")
	}
}

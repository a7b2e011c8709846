package chain_test

import (
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
)

// tcpCut forwards TCP connections to target until cut, which closes them all and stops
// listening: a websocket that drops.
type tcpCut struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newTCPCut(t *testing.T, target string) *tcpCut {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpCut{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

func (p *tcpCut) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestSubscribeEpochs: a subscription on the dev chain's websocket hears a push of its space
// within a second, not one of another space, and ends with an error when the socket drops.
func TestSubscribeEpochs(t *testing.T) {
	e := newEnv(t)
	info := e.dev.Info()
	if !chain.IsWebsocketURL(info.WS) {
		t.Fatalf("devchain ws URL %q", info.WS)
	}
	u, _ := url.Parse(info.WS)
	cut := newTCPCut(t, u.Host)
	ctx, cancel := contextWithTimeout(t, 30*time.Second)
	defer cancel()
	if _, err := chain.SubscribeEpochs(ctx, info.WS, info.ChainID+1, e.dev.Contract(), e.owner, e.space); err == nil {
		t.Fatal("a subscription on the wrong chain id was accepted")
	}
	sub, err := chain.SubscribeEpochs(ctx, "ws://"+cut.ln.Addr().String(), info.ChainID, e.dev.Contract(), e.owner, e.space)
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

	cut.cut()
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

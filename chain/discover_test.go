package chain_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
	"kintfs/chain/rpcproxy"
)

// walkOpts says where a walk ends and how it asks.
type walkOpts struct {
	known chain.Head // an epoch already applied: the walk ends above it (zero: at seq 1)
	exact bool       // every Next asks its exact block (a floor above the head: no ranges)
}

// walkDown follows the epochs of (owner, space) from head downwards the way a pull does: one
// Discovery, Next for each epoch at the block and seq the newer one names, each link checked
// (ErrBrokenChain): the newest has the head's digest, each names the one below as prev, the
// first builds on nothing, and the oldest walked builds on the known epoch. It returns the
// events newest first, with those walked before an error.
func walkDown(ctx context.Context, c *chain.Client, owner common.Address, space common.Hash, head chain.Head, o walkOpts) ([]*chain.EpochEvent, chain.DiscoveryStats, error) {
	floor := o.known.Block
	if o.exact {
		floor = head.Block + 1
	}
	d := c.NewDiscovery(ctx, owner, space, floor)
	defer d.Close()
	var out []*chain.EpochEvent
	block, seq, want := head.Block, head.Seq, head.Digest
	for seq > o.known.Seq {
		ev, err := d.Next(ctx, block, seq, want)
		if err != nil {
			return out, d.Stats(), err
		}
		if ev.Digest != want {
			return out, d.Stats(), fmt.Errorf("%w: epoch %d has digest %s, the newer one (or the head) says %s", chain.ErrBrokenChain, seq, ev.Digest.Hex(), want.Hex())
		}
		out = append(out, ev)
		if seq == 1 && (ev.Prev != common.Hash{} || ev.PrevBlock != 0) {
			return out, d.Stats(), fmt.Errorf("%w: epoch 1 builds on %s at block %d", chain.ErrBrokenChain, ev.Prev.Hex(), ev.PrevBlock)
		}
		if seq > 1 && (ev.PrevBlock == 0 || ev.PrevBlock > ev.Block) {
			return out, d.Stats(), fmt.Errorf("%w: epoch %d at block %d points back to block %d", chain.ErrBrokenChain, ev.Seq, ev.Block, ev.PrevBlock)
		}
		block, seq, want = ev.PrevBlock, seq-1, ev.Prev
	}
	if n := len(out); n > 0 && o.known.Seq > 0 && out[n-1].Prev != o.known.Digest {
		return out, d.Stats(), fmt.Errorf("%w: epoch %d builds on %s, the known epoch %d has digest %s", chain.ErrBrokenChain, out[n-1].Seq, out[n-1].Prev.Hex(), o.known.Seq, o.known.Digest.Hex())
	}
	return out, d.Stats(), nil
}

// walk is walkDown of e's owner and space down to seq 1, through c.
func (e *env) walk(c *chain.Client, head chain.Head, o walkOpts) ([]*chain.EpochEvent, chain.DiscoveryStats, error) {
	return walkDown(e.ctx, c, e.owner, e.space, head, o)
}

// withoutTx is an eth_getLogs answer without the logs of transaction tx.
func withoutTx(result json.RawMessage, tx common.Hash) json.RawMessage {
	return rpcproxy.EditLogs(result, func(l map[string]any) []map[string]any {
		if l["transactionHash"] == tx.Hex() {
			return nil
		}
		return []map[string]any{l}
	})
}

// Ranged discovery finds the same events as the exact-block walk, in one query on an honest
// RPC; narrows its window under a range cap or a result cap; and takes nothing from a range
// on trust: a dropped event is found at its block, an added or altered one is not taken.
func TestDiscoveryRanged(t *testing.T) {
	e := newEnv(t)
	e.pushN(12)
	h := e.head()
	want, _, err := e.walk(e.c, h, walkOpts{exact: true})
	if err != nil {
		t.Fatal(err)
	}
	same := func(name string, got []*chain.EpochEvent) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d events, want %d", name, len(got), len(want))
		}
		for i := range got {
			if *got[i] != *want[i] {
				t.Fatalf("%s: event %d is %+v, want %+v", name, i, got[i], want[i])
			}
		}
	}

	p := newProxy(t, e.dev.Info().RPC)
	c := dial(t, p.URL, e.dev.Contract(), testOpts)
	logs := func() int {
		n := p.Stats().Seen["eth_getLogs"]
		p.ResetStats()
		return n
	}

	evs, st, err := e.walk(c, h, walkOpts{})
	if err != nil {
		t.Fatal(err)
	}
	same("honest", evs)
	if n := logs(); n != 1 || st.FromRange != 12 || st.Exact != 0 {
		t.Fatalf("honest: %d eth_getLogs, %+v; want 1, all 12 from the range", n, st)
	}

	// a cap of 4 blocks per range: refused wider ranges, the window narrows to fit
	p.SetRefuse(func(method string, params json.RawMessage) string {
		if from, to, ok := rpcproxy.LogRange(params); method == "eth_getLogs" && ok && to-from+1 > 4 {
			return "block range too large: at most 4 blocks"
		}
		return ""
	})
	c2 := dial(t, p.URL, e.dev.Contract(), testOpts)
	evs, st, err = e.walk(c2, h, walkOpts{})
	if err != nil {
		t.Fatal(err)
	}
	same("range cap", evs)
	if st.Exact != 0 || st.Refusals == 0 {
		t.Fatalf("range cap: %+v", st)
	}
	t.Logf("range cap of 4 blocks: %d eth_getLogs, %+v", logs(), st)

	// a cap on results: more than 3 events in an answer is refused
	p.SetRefuse(nil)
	p.SetRewrite(nil)
	c3 := dial(t, p.URL, e.dev.Contract(), testOpts)
	p.SetRefuse(func(method string, params json.RawMessage) string {
		from, to, ok := rpcproxy.LogRange(params)
		if method != "eth_getLogs" || !ok {
			return ""
		}
		n := 0
		for _, ev := range want {
			if ev.Block >= from && ev.Block <= to {
				n++
			}
		}
		if n > 3 {
			return "query returned more than 3 results"
		}
		return ""
	})
	evs, st, err = e.walk(c3, h, walkOpts{})
	if err != nil {
		t.Fatal(err)
	}
	same("result cap", evs)
	if st.Exact != 0 || st.Refusals == 0 {
		t.Fatalf("result cap: %+v", st)
	}
	t.Logf("result cap of 3 events: %d eth_getLogs, %+v", logs(), st)
	p.SetRefuse(nil)

	// one event dropped from every ranged answer: found by the exact-block query
	dropped := want[5]
	p.SetRewrite(func(method string, params, result json.RawMessage) json.RawMessage {
		if !rpcproxy.RangedLogs(method, params) {
			return result
		}
		return withoutTx(result, dropped.TxHash)
	})
	evs, st, err = e.walk(dial(t, p.URL, e.dev.Contract(), testOpts), h, walkOpts{})
	if err != nil {
		t.Fatal(err)
	}
	same("dropped", evs)
	if st.Exact != 1 || st.FromRange != 11 {
		t.Fatalf("dropped: %+v, want 1 exact query", st)
	}

	// an event added beside a real one in a range (same block and seq, another digest), and
	// one altered: neither is taken, the exact block answers
	alteredDigest := strings.Repeat("cd", 32)
	p.SetRewrite(func(method string, params, result json.RawMessage) json.RawMessage {
		if !rpcproxy.RangedLogs(method, params) {
			return result
		}
		return rpcproxy.EditLogs(result, func(l map[string]any) []map[string]any {
			out := []map[string]any{l}
			if l["transactionHash"] == want[2].TxHash.Hex() {
				fake := map[string]any{}
				for k, v := range l {
					fake[k] = v
				}
				fake["data"] = strings.Replace(l["data"].(string), want[2].Digest.Hex()[2:], alteredDigest, 1)
				fake["logIndex"] = "0x7"
				out = append(out, fake)
			}
			if l["transactionHash"] == want[8].TxHash.Hex() {
				l["data"] = strings.Replace(l["data"].(string), want[8].Digest.Hex()[2:], alteredDigest, 1)
			}
			return out
		})
	})
	evs, st, err = e.walk(dial(t, p.URL, e.dev.Contract(), testOpts), h, walkOpts{})
	if err != nil {
		t.Fatal(err)
	}
	same("added and altered", evs)
	if st.Exact != 2 {
		t.Fatalf("added and altered: %+v, want 2 exact queries", st)
	}

	// dropped from the exact answer too: refused by name
	p.SetRewrite(func(method string, params, result json.RawMessage) json.RawMessage {
		if method == "eth_getLogs" && strings.Contains(string(result), dropped.TxHash.Hex()) {
			return withoutTx(result, dropped.TxHash)
		}
		return result
	})
	_, _, err = e.walk(dial(t, p.URL, e.dev.Contract(), testOpts), h, walkOpts{})
	var ne *chain.NoEventError
	if !errors.As(err, &ne) || ne.Seq != dropped.Seq || ne.Block != dropped.Block {
		t.Fatalf("dropped everywhere: %v", err)
	}

	// no ranged logs at all (method not found for ranges): the exact-block walk
	p.SetRewrite(nil)
	p.SetRefuse(func(method string, params json.RawMessage) string {
		if rpcproxy.RangedLogs(method, params) {
			return "the method eth_getLogs does not exist/is not available"
		}
		return ""
	})
	logs()
	evs, st, err = e.walk(dial(t, p.URL, e.dev.Contract(), testOpts), h, walkOpts{})
	if err != nil {
		t.Fatal(err)
	}
	same("no ranged logs", evs)
	if st.Exact != 12 {
		t.Fatalf("no ranged logs: %+v", st)
	}
	t.Logf("no ranged logs: %d eth_getLogs for 12 epochs, %+v", logs(), st)
}

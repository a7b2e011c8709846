package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestPrunedNodeSecondRPC: the primary RPC is a pruned node (a proxy answering null for the
// transactions of the four oldest epochs). Without a second RPC a restore stops naming the
// missing transaction; with KINT_RPC_URL_2 it fetches just those from the second and ends at
// the head; a second RPC that is pruned too is refused the same way.
func TestPrunedNodeSecondRPC(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	c := dc.client(t)
	a := newMachine(t, dc, "pruned")
	a.connect("pruned passphrase")
	ma := a.mount()
	const epochs, old = 6, 4
	for i := 1; i <= epochs; i++ {
		writeFile(t, ma.path(fmt.Sprintf("state/s%d", i)), fmt.Sprintf("epoch %d", i))
		ma.mustCtl("flush")
	}
	head := chainHead(t, c, a)
	evs := chainEvents(t, c, a, head)
	if len(evs) != epochs {
		t.Fatalf("walk: %d events", len(evs))
	}
	prunedTx := map[string]bool{}
	for _, ev := range evs {
		if ev.Seq <= old {
			prunedTx[strings.ToLower(ev.TxHash.Hex())] = true
		}
	}
	prune := func(method string, params, result json.RawMessage) json.RawMessage {
		if method != "eth_getTransactionByHash" {
			return result
		}
		var ps []string
		if json.Unmarshal(params, &ps) == nil && len(ps) == 1 && prunedTx[strings.ToLower(ps[0])] {
			return json.RawMessage("null")
		}
		return result
	}
	primary := startRPCProxy(t, dc.info.RPC)
	primary.SetRewrite(prune)
	second := startRPCProxy(t, dc.info.RPC)
	alsoPruned := startRPCProxy(t, dc.info.RPC)
	alsoPruned.SetRewrite(prune)

	restore := func(name, second string) (pullReport, string, int) {
		b := newMachine(t, dc, "pruned")
		b.useRPC(primary.URL)
		if second != "" {
			b.extra = append(b.extra, "KINT_RPC_URL_2="+second)
		}
		b.mustRun("pruned passphrase\n", "init", "--owner", b.owner(), "--passphrase-stdin")
		out, errs, code := b.run("", "pull", "--json")
		var rep pullReport
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%s: pull --json printed %q", name, out)
			}
			if got, want := mirrorOf(b.statusJSON()), mirrorOf(ma.status()); got != want {
				t.Errorf("%s: B's mirror %s, A's %s", name, got, want)
			}
			if got := b.mustRun("", "history", "state", "s1", "--block", "1000000000"); got != "epoch 1" {
				t.Errorf("%s: state/s1 reads %q on B", name, got)
			}
		}
		return rep, errs, code
	}

	_, errs, code := restore("no second RPC", "")
	if code == 0 || !strings.Contains(errs, "transaction not found") {
		t.Errorf("no second RPC: exit %d, want a refusal naming the missing transaction: %s", code, errs)
	}
	t.Logf("no second RPC: exit %d: %s", code, strings.TrimSpace(errs))

	primary.ResetStats()
	rep, errs, code := restore("second RPC", second.URL)
	if code != 0 {
		t.Fatalf("with a second RPC: exit %d: %s", code, errs)
	}
	pst, sst := primary.Stats(), second.Stats()
	if rep.Applied != epochs || rep.FromSecondRPC != old {
		t.Errorf("with a second RPC: applied %d, from the second RPC %d; want %d and %d", rep.Applied, rep.FromSecondRPC, epochs, old)
	}
	if got := sst.Seen["eth_getTransactionByHash"]; got != old {
		t.Errorf("the second RPC was asked for %d transactions, want only the %d pruned ones", got, old)
	}
	t.Logf("with a second RPC: primary %d requests (%d eth_getTransactionByHash), second %d requests (%d eth_getTransactionByHash)",
		pst.Requests, pst.Seen["eth_getTransactionByHash"], sst.Requests, sst.Seen["eth_getTransactionByHash"])
	recordFigure(t, "pruned primary, second RPC", "%d of %d epochs from the second RPC in %d requests to it",
		rep.FromSecondRPC, epochs, sst.Requests)

	_, errs, code = restore("second RPC pruned too", alsoPruned.URL)
	if code == 0 || !strings.Contains(errs, "transaction not found") || !strings.Contains(errs, "from the second RPC") {
		t.Errorf("second RPC pruned too: exit %d, want a refusal naming both: %s", code, errs)
	}
	t.Logf("second RPC pruned too: exit %d: %s", code, strings.TrimSpace(errs))
	ma.checkNoPanic()
}

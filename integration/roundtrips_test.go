package integration

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"kintfs/chain/rpcproxy"
)

// methodList prints the calls of a proxy snapshot, by method.
func methodList(st rpcproxy.Stats) string {
	var parts []string
	for m, n := range st.Seen {
		parts = append(parts, fmt.Sprintf("%s %d", m, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// TestRoundTrips counts, through the proxy, what a flush of one row and a cold restore ask of
// the RPC: a flush reads the head once, and the first pull after init does not fetch the head
// epoch init already fetched.
func TestRoundTrips(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	proxy := startRPCProxy(t, dc.info.RPC)
	a := newMachine(t, dc, "roundtrips")
	a.connect("round trips passphrase")
	a.useRPC(proxy.URL)
	ma := a.mount("--poll", "1h")
	const epochs = 5
	var flush rpcproxy.Stats
	for i := 1; i <= epochs; i++ {
		writeFile(t, ma.path(fmt.Sprintf("state/r%d", i)), fmt.Sprintf("row %d", i))
		if i == epochs {
			proxy.ResetStats()
		}
		ma.mustCtl("flush")
		if i == epochs {
			flush = proxy.Stats()
		}
	}
	t.Logf("flush of one row: %d requests (%s)", flush.Requests, methodList(flush))
	recordFigure(t, "flush of one row", "%d requests, %d head reads", flush.Requests, flush.Seen["eth_call"])
	if flush.Seen["eth_call"] != 1 {
		t.Errorf("a flush read the head %d times, want once", flush.Seen["eth_call"])
	}

	b := newMachine(t, dc, "roundtrips")
	b.useRPC(proxy.URL)
	proxy.ResetStats()
	b.mustRun("round trips passphrase\n", "init", "--owner", b.owner(), "--passphrase-stdin")
	initSt := proxy.Stats()
	proxy.ResetStats()
	rep := b.pull()
	pullSt := proxy.Stats()
	t.Logf("init: %d requests (%s)", initSt.Requests, methodList(initSt))
	t.Logf("first pull: %d requests (%s); report %+v", pullSt.Requests, methodList(pullSt), rep)
	recordFigure(t, "cold restore of 5 epochs", "init %d requests, first pull %d requests (%d transactions fetched)",
		initSt.Requests, pullSt.Requests, pullSt.Seen["eth_getTransactionByHash"])
	if rep.Applied != epochs {
		t.Fatalf("the first pull applied %d epochs, want %d", rep.Applied, epochs)
	}
	if got := initSt.Seen["eth_getTransactionByHash"] + pullSt.Seen["eth_getTransactionByHash"]; got != epochs {
		t.Errorf("init and the first pull fetched %d transactions for %d epochs, want each once", got, epochs)
	}

	// after a compact: the head is a snapshot, which init fetched already
	ma.mustCtl("compact")
	c := newMachine(t, dc, "roundtrips")
	c.useRPC(proxy.URL)
	proxy.ResetStats()
	c.mustRun("round trips passphrase\n", "init", "--owner", c.owner(), "--passphrase-stdin")
	initSt = proxy.Stats()
	proxy.ResetStats()
	rep = c.pull()
	pullSt = proxy.Stats()
	t.Logf("after compact: init %d requests (%s)", initSt.Requests, methodList(initSt))
	t.Logf("after compact: first pull %d requests (%s); report %+v", pullSt.Requests, methodList(pullSt), rep)
	recordFigure(t, "restore after compact", "init %d requests, first pull %d requests (%d transactions fetched)",
		initSt.Requests, pullSt.Requests, pullSt.Seen["eth_getTransactionByHash"])
	if rep.Mirror.Seq != epochs+1 || rep.Applied != 1 {
		t.Fatalf("restore after compact: %+v, want the snapshot alone applied", rep)
	}
	if n := pullSt.Seen["eth_getTransactionByHash"]; n != 0 {
		t.Errorf("restore after compact: the pull fetched %d transactions; init had the snapshot", n)
	}
	if pullSt.Requests > 6 {
		t.Errorf("restore after compact: the pull made %d requests, want at most 6", pullSt.Requests)
	}

	// A push tells the time it waited on the chain from its own: a send held 400 ms by the
	// proxy is counted in the epoch's chain_seconds and the report's.
	const held = 400 * time.Millisecond
	proxy.SetRule("eth_sendRawTransaction", rpcproxy.Rule{Delay: held})
	writeFile(t, ma.path("state/slow"), "a slow send")
	ma.mustCtl("flush")
	proxy.ClearRules()
	rep0 := ma.status()["last_push"].(map[string]any)["report"].(map[string]any)
	total, onChain := rep0["seconds"].(float64), rep0["chain_seconds"].(float64)
	epochChain := rep0["anchored"].([]any)[0].(map[string]any)["chain_seconds"].(float64)
	t.Logf("push of one row with the send held %v: %.3f s, %.3f s on the chain", held, total, onChain)
	if onChain < held.Seconds() || epochChain != onChain || total < onChain {
		t.Errorf("push report: seconds %.3f, chain_seconds %.3f (its epoch %.3f); want chain_seconds >= %.1f, the epoch's the same, seconds >= chain_seconds",
			total, onChain, epochChain, held.Seconds())
	}
	ma.checkNoPanic()
}

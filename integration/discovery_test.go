package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"kintfs/chain/rpcproxy"
)

// TestRangedRestore: a fresh machine restores a 12-epoch vault by ranged log queries through
// an honest proxy, one that caps ranges at 3 blocks, one that caps answers at 4 events, one
// that drops an event from every ranged answer and one that adds events to them. Each restore
// ends at the chain's head with every epoch applied; an event dropped from the exact-block
// answer too is refused by name (exit 6), nothing applied.
func TestRangedRestore(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	c := dc.client(t)
	a := newMachine(t, dc, "ranged")
	a.connect("ranged restore passphrase")
	ma := a.mount()
	const epochs = 12
	for i := 1; i <= epochs; i++ {
		writeFile(t, ma.path(fmt.Sprintf("entity/things/t%02d", i)), fmt.Sprintf(`{"n":%d}`, i))
		ma.mustCtl("flush")
	}
	head := chainHead(t, c, a)
	if head.Seq != epochs {
		t.Fatalf("head at seq %d, want %d", head.Seq, epochs)
	}
	evs := chainEvents(t, c, a, head)
	bySeq := func(seq uint64) string { return strings.ToLower(evs[epochs-seq].TxHash.Hex()) }
	target := uint64(6)
	eventsIn := func(from, to uint64) int {
		n := 0
		for _, ev := range evs {
			if ev.Block >= from && ev.Block <= to {
				n++
			}
		}
		return n
	}
	isTx := func(l map[string]any, seq uint64) bool {
		s, _ := l["transactionHash"].(string)
		return strings.ToLower(s) == bySeq(seq)
	}
	proxy := startRPCProxy(t, dc.info.RPC)

	type restoreCase struct {
		name   string
		lie    func(method string, params, result json.RawMessage) json.RawMessage
		refuse func(method string, params json.RawMessage) string
		reason string // when set, the pull is refused with this in stderr
	}
	cases := []restoreCase{
		{name: "honest"},
		{name: "range cap of 3 blocks", refuse: func(method string, params json.RawMessage) string {
			if from, to, ok := rpcproxy.LogRange(params); method == "eth_getLogs" && ok && to-from+1 > 3 {
				return "block range too large: eth_getLogs is limited to a 3 block range"
			}
			return ""
		}},
		{name: "result cap of 4 events", refuse: func(method string, params json.RawMessage) string {
			if from, to, ok := rpcproxy.LogRange(params); method == "eth_getLogs" && ok && eventsIn(from, to) > 4 {
				return "query returned more than 4 results"
			}
			return ""
		}},
		{name: "event dropped from ranges", lie: func(method string, params, result json.RawMessage) json.RawMessage {
			if !rpcproxy.RangedLogs(method, params) {
				return result
			}
			return rpcproxy.EditLogs(result, func(l map[string]any) []map[string]any {
				if isTx(l, target) {
					return nil
				}
				return []map[string]any{l}
			})
		}},
		{name: "events added to ranges", lie: func(method string, params, result json.RawMessage) json.RawMessage {
			if !rpcproxy.RangedLogs(method, params) {
				return result
			}
			return rpcproxy.EditLogs(result, func(l map[string]any) []map[string]any {
				out := []map[string]any{l}
				if isTx(l, target) || isTx(l, 3) {
					// a second event at the same block and seq with another digest, and one
					// that claims the same seq one block later
					fake, moved := map[string]any{}, map[string]any{}
					for k, v := range l {
						fake[k], moved[k] = v, v
					}
					fake["data"] = flipDigestWord(l["data"].(string))
					fake["logIndex"] = "0x9"
					n, _ := hexutil.DecodeUint64(l["blockNumber"].(string))
					moved["blockNumber"] = hexutil.EncodeUint64(n + 1)
					out = append(out, fake, moved)
				}
				return out
			})
		}},
		{name: "event dropped everywhere", reason: fmt.Sprintf("no Epoch event for seq %d", target),
			lie: onMethod("eth_getLogs", func(r json.RawMessage) json.RawMessage {
				return rpcproxy.EditLogs(r, func(l map[string]any) []map[string]any {
					if isTx(l, target) {
						return nil
					}
					return []map[string]any{l}
				})
			})},
	}
	for _, tc := range cases {
		b := newMachine(t, dc, "ranged")
		b.useRPC(proxy.URL)
		b.connect("ranged restore passphrase")
		proxy.ResetStats()
		proxy.SetRewrite(tc.lie)
		proxy.SetRefuse(tc.refuse)
		out, errs, code := b.run("", "pull", "--json")
		st := proxy.Stats()
		var mirror any
		if tc.reason != "" {
			// status refreshes first: through the same lie, so that it shows what the pull left
			mirror = b.statusJSON()["mirror"].(map[string]any)["seq"]
		}
		proxy.SetRewrite(nil)
		proxy.SetRefuse(nil)
		t.Logf("%s: exit %d, %d requests (%d eth_getLogs, %d refused)", tc.name, code, st.Requests, st.Seen["eth_getLogs"], st.Faults["refused"])
		recordFigure(t, "ranged restore: "+tc.name, "exit %d, %d requests for %d epochs (%d eth_getLogs, %d refused)",
			code, st.Requests, epochs, st.Seen["eth_getLogs"], st.Faults["refused"])
		if tc.reason != "" {
			if code != 6 || !strings.Contains(errs, tc.reason) {
				t.Errorf("%s: exit %d, want 6 naming %q\nstderr: %s", tc.name, code, tc.reason, errs)
			}
			if mirror != float64(0) {
				t.Errorf("%s: the refused pull applied something: mirror at seq %v", tc.name, mirror)
			}
			continue
		}
		if code != 0 {
			t.Errorf("%s: pull exited %d\nstdout: %s\nstderr: %s", tc.name, code, out, errs)
			continue
		}
		var rep pullReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: pull --json printed %q", tc.name, out)
		}
		if rep.Applied != epochs || rep.Mirror.Seq != epochs {
			t.Errorf("%s: %+v, want all %d epochs applied", tc.name, rep, epochs)
		}
		if got, want := mirrorOf(b.statusJSON()), mirrorOf(ma.status()); got != want {
			t.Errorf("%s: B's mirror %s, A's %s", tc.name, got, want)
		}
		if tc.name == "honest" && st.Seen["eth_getLogs"] > 2 {
			t.Errorf("honest: %d eth_getLogs for %d epochs, want at most 2", st.Seen["eth_getLogs"], epochs)
		}
	}
	ma.checkNoPanic()
}

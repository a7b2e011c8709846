package integration

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"kintfs/chain"
	"kintfs/contracts"
)

// TestColdStartTwoRPCs: off the dev chain id, a machine with no watermark trusts no single
// RPC: init and the first pull ask a second one for the head. The chain runs under Base's id
// 8453 (kintfs devchain --chain-id), so the rule applies as on Base.
func TestColdStartTwoRPCs(t *testing.T) {
	dc := startDevchain(t, "--chain-id", "8453")
	if dc.info.ChainID != 8453 {
		t.Fatalf("devchain --chain-id 8453 serves chain %d", dc.info.ChainID)
	}
	a := newMachine(t, dc, "coldstart")
	a.connect("pass coldstart") // an empty chain: nothing to check yet
	ma := a.mount()
	writeFile(t, ma.path("state/x"), "anchored under chain id 8453")
	ma.mustCtl("flush")
	head := chainHead(t, dc.client(t), a)

	same := newMachine(t, dc, "coldstart")
	same.extra = append(same.extra, "KINT_RPC_URL_2="+dc.info.RPC+"/")
	_, errs, code := same.run("pass coldstart\n", "init", "--owner", same.owner(), "--passphrase-stdin")
	if code != 5 || !strings.Contains(errs, "resolves to the same endpoint") || !strings.Contains(errs, "KINT_ALLOW_SINGLE_RPC=1") {
		t.Fatalf("init with the second RPC the same as the first: exit %d: %s", code, errs)
	}
	same.extra = append(same.extra, "KINT_ALLOW_SINGLE_RPC=1")
	same.mustRun("pass coldstart\n", "init", "--owner", same.owner(), "--passphrase-stdin")
	if rep := same.pull(); rep.Mirror.Seq != head.Seq {
		t.Fatalf("pull with KINT_ALLOW_SINGLE_RPC=1: mirror %d, head %d", rep.Mirror.Seq, head.Seq)
	}

	proxy := startRPCProxy(t, dc.info.RPC)
	honest := newMachine(t, dc, "coldstart")
	honest.extra = append(honest.extra, "KINT_RPC_URL_2="+proxy.URL)
	honest.mustRun("pass coldstart\n", "init", "--owner", honest.owner(), "--passphrase-stdin")
	if rep := honest.pull(); rep.Mirror.Seq != head.Seq {
		t.Fatalf("pull with two agreeing RPCs: mirror %d, head %d", rep.Mirror.Seq, head.Seq)
	}
	if got := honest.mustRun("", "history", "state", "x", "--block", "1000000"); got != "anchored under chain id 8453" {
		t.Fatalf("the row read on the second machine: %q", got)
	}

	lying := newMachine(t, dc, "coldstart")
	lying.extra = append(lying.extra, "KINT_RPC_URL_2="+proxy.URL)
	headCall := strings.ToLower(hex.EncodeToString(contracts.NewEpochAnchor().PackHead(a.ownerAddr(), a.space())))
	proxy.SetRewrite(func(method string, params, result json.RawMessage) json.RawMessage {
		if method == "eth_call" && strings.Contains(strings.ToLower(string(params)), headCall) {
			return encodeHead(chain.Head{Seq: head.Seq + 1, Digest: head.Digest, Block: head.Block})
		}
		return result
	})
	_, errs, code = lying.run("pass coldstart\n", "init", "--owner", lying.owner(), "--passphrase-stdin")
	if code != 6 || !strings.Contains(errs, "the two RPCs disagree on the head") {
		t.Fatalf("init with a second RPC that disagrees: exit %d: %s", code, errs)
	}
}

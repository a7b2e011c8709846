package integration

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"kintfs/chain"
	"kintfs/chain/rpcproxy"
	"kintfs/contracts"
	"kintfs/seal"
)

// TestFaultyRPC puts a proxy that drops, resets, errors, loses the answers of and delays 20% of
// the round trips (KINTFS_FAULT_PERCENT) between kintfs and the node. Flushes from a mount,
// init, authorize and pull on a second machine, and a flush back from it all complete; the
// proxy counts the calls made and retried.
func TestFaultyRPC(t *testing.T) {
	requireFUSE(t)
	percent := envCount("KINTFS_FAULT_PERCENT", 20)
	dc := startDevchain(t)
	c := dc.client(t)
	proxy := startRPCProxy(t, dc.info.RPC)
	a := newMachine(t, dc, "faulty")
	a.connect("faulty rpc passphrase")
	a.useRPC(proxy.URL)
	proxy.SetFaults(float64(percent) / 100)
	ma := a.mount()
	// besides the random faults, the node always runs the first push transaction and its
	// answer is lost: the retry must count as sent, never as a second epoch
	proxy.FaultNext("eth_sendRawTransaction", rpcproxy.Lost, 1)

	// pushes: rounds of writes, each flushed through the faulty RPC
	rounds, rows := 4, 8
	var slowest time.Duration
	for r := 0; r < rounds; r++ {
		for i := 0; i < rows; i++ {
			writeFile(t, ma.path(fmt.Sprintf("entity/round%d/row%d", r, i)), fmt.Sprintf(`{"round":%d,"row":%d}`, r, i))
		}
		start := time.Now()
		ma.mustCtl("flush")
		slowest = max(slowest, time.Since(start))
	}
	push := proxy.Stats()
	if h := chainHead(t, c, a); h.Seq != uint64(rounds) {
		t.Fatalf("chain head seq %d after %d flushes", h.Seq, rounds)
	}

	// a second machine connects and pulls through the same faults
	proxy.ResetStats()
	b := newMachine(t, dc, "faulty")
	b.useRPC(proxy.URL)
	b.connect("faulty rpc passphrase")
	out, errs, code := b.run("", "pull", "--json")
	if code != 0 {
		t.Fatalf("pull through a faulty RPC: exit %d\n%s\n%s\nthe proxy's last round trips:\n%s", code, out, errs, proxy.Recent())
	}
	var rep struct {
		Mirror headJSON `json:"mirror"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("pull --json printed %q: %v", out, err)
	}
	if rep.Mirror.Seq != uint64(rounds) {
		t.Fatalf("pull reached seq %d, want %d", rep.Mirror.Seq, rounds)
	}
	pull := proxy.Stats()

	// and pushes back; the first machine sees it through its faulty polls
	proxy.ResetStats()
	mb := b.mount()
	proxy.FaultNext("eth_sendRawTransaction", rpcproxy.Lost, 1)
	for i := 0; i < rows; i++ {
		writeFile(t, mb.path(fmt.Sprintf("state/from-b-%d", i)), fmt.Sprintf("b wrote %d", i))
	}
	mb.mustCtl("flush")
	sta := waitIdle(t, c, a, ma, 90*time.Second)
	stb := waitIdle(t, c, b, mb, 90*time.Second)
	if sta.Mirror.Digest != stb.Mirror.Digest {
		t.Fatalf("mirrors differ: %s and %s", sta.Mirror.Digest, stb.Mirror.Digest)
	}
	for i := 0; i < rows; i++ {
		if got := readFile(t, ma.path(fmt.Sprintf("state/from-b-%d", i))); got != fmt.Sprintf("b wrote %d", i) {
			t.Fatalf("machine A reads state/from-b-%d = %q", i, got)
		}
	}
	for _, st := range []*mountStatus{sta, stb} {
		if len(st.Gaps) != 0 || len(st.Conflicts) != 0 || st.StagedRows != 0 {
			t.Fatalf("after the faulty run: gaps %v, conflicts %v, %d staged", st.Gaps, st.Conflicts, st.StagedRows)
		}
	}
	ma.checkNoPanic()
	mb.checkNoPanic()
	both := proxy.Stats()

	for _, ph := range []struct {
		name string
		s    rpcproxy.Stats
	}{{"push (4 flushes from a mount)", push}, {"connect + pull (second machine)", pull}, {"push back + poll", both}} {
		line := fmt.Sprintf("%d round trips (%d calls, %d batches), faults %d (%s), retried %d, longest fault streak %d",
			ph.s.Requests, ph.s.Calls, ph.s.Batches, ph.s.FaultTotal(), ph.s.FaultString(), ph.s.Retries, ph.s.LongestStreak)
		fmt.Printf("faulty RPC at %d%%: %s: %s\n", percent, ph.name, line)
		recordFigure(t, ph.name+" at "+strconv.Itoa(percent)+"% faults", "%s", line)
	}
	recordFigure(t, "slowest flush under faults", "%s", slowest.Round(time.Millisecond))
}

// lieCase is one way TestLyingRPC's proxy lies, and the refusal kintfs must answer with.
type lieCase struct {
	name   string
	lie    func(method string, params, result json.RawMessage) json.RawMessage
	reason string // in stderr
	detail string // also in stderr, when set
}

// TestLyingRPC runs kintfs pull through a proxy that lies: it alters calldata, withholds a
// log, points an Epoch event at a transaction to another address or at a real push with
// another owner, space or prev, alters the event's digest, and serves a head older than the
// one this machine has seen. Each pull is refused by name with exit code 6 (a stale or lying
// RPC), and nothing is applied: the mirror is unchanged, no gap is recorded. An honest pull
// afterwards completes.
func TestLyingRPC(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	c := dc.client(t)
	proxy := startRPCProxy(t, dc.info.RPC)
	a := newMachine(t, dc, "lying")
	a.connect("lying rpc passphrase")
	ma := a.mount()
	writeFile(t, ma.path("state/one"), "epoch one")
	ma.mustCtl("flush")
	first := chainHead(t, c, a)

	b := newMachine(t, dc, "lying")
	b.useRPC(proxy.URL)
	b.connect("lying rpc passphrase")
	// B's mount answers B's commands (the CLI forwards them to it) and never polls on its
	// own here: every pull through the proxy is the test's
	mb := b.mount("--poll", "1h")
	b.mustRun("", "pull")

	writeFile(t, ma.path("state/two"), "epoch two")
	ma.mustCtl("flush")
	second := chainHead(t, c, a)
	writeFile(t, ma.path("state/three"), "epoch three")
	ma.mustCtl("flush")
	third := chainHead(t, c, a)

	// real transactions for the event to point at: a plain transfer, and pushes for another
	// owner and another space
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	transfer := sendTransfer(t, dc, 2)
	otherOwnerKey, _ := crypto.HexToECDSA(strings.TrimPrefix(dc.info.Accounts[1].PrivateKey, "0x"))
	ownerKey, _ := crypto.HexToECDSA(strings.TrimPrefix(dc.ownerKeyHex(), "0x"))
	junk := []byte("not an epoch, but a push all the same")
	rcOwner, err := c.SendRawBlob(ctx, otherOwnerKey, crypto.PubkeyToAddress(otherOwnerKey.PublicKey), a.space(), common.Hash{}, junk)
	if err != nil {
		t.Fatal(err)
	}
	rcSpace, err := c.SendRawBlob(ctx, ownerKey, a.ownerAddr(), seal.SpaceID("lying-elsewhere"), common.Hash{}, junk)
	if err != nil {
		t.Fatal(err)
	}
	ev1, err := c.EpochAt(ctx, a.ownerAddr(), a.space(), first.Block, first.Seq)
	if err != nil {
		t.Fatal(err)
	}

	offlineStatus := func() *mountStatus { return mb.mustStatus() } // .kint/status reads, it does not pull
	before := offlineStatus()
	if before.Mirror.Seq != 1 {
		t.Fatalf("machine B's mirror is at seq %d, want 1", before.Mirror.Seq)
	}
	headCall := strings.ToLower(hex.EncodeToString(contracts.NewEpochAnchor().PackHead(a.ownerAddr(), a.space())))
	cases := []lieCase{
		{name: "calldata altered", reason: chain.ErrTxMismatch.Error(),
			lie: onMethod("eth_getTransactionByHash", func(r json.RawMessage) json.RawMessage { return editJSON(r, "input", flipHex) })},
		{name: "log withheld", reason: "no Epoch event for seq 3",
			lie: onMethod("eth_getLogs", func(json.RawMessage) json.RawMessage { return json.RawMessage("[]") })},
		{name: "event points at a transaction to another address", reason: chain.ErrWrongContract.Error(),
			lie: onMethod("eth_getLogs", redirectLogs(transfer))},
		{name: "event points at a push of another owner", reason: chain.ErrCalldataMismatch.Error(), detail: "owner",
			lie: onMethod("eth_getLogs", redirectLogs(rcOwner.TxHash))},
		{name: "event points at a push to another space", reason: chain.ErrCalldataMismatch.Error(), detail: "space",
			lie: onMethod("eth_getLogs", redirectLogs(rcSpace.TxHash))},
		{name: "event points at a push with another prev", reason: chain.ErrCalldataMismatch.Error(), detail: "prev",
			lie: onMethod("eth_getLogs", redirectLogs(ev1.TxHash))},
		{name: "event digest altered", reason: chain.ErrDigestMismatch.Error(),
			lie: onMethod("eth_getLogs", func(r json.RawMessage) json.RawMessage {
				if !strings.Contains(string(r), fmt.Sprintf(`"blockNumber":"0x%x"`, third.Block)) {
					return r // only the newest event: an older one altered too would break the prev links first
				}
				return editLogs(r, "data", flipDigestWord)
			})},
		{name: "stale head (older than the watermark)", reason: "stale or lying RPC", detail: fmt.Sprintf("head is seq %d", second.Seq),
			lie: func(method string, params, result json.RawMessage) json.RawMessage {
				if method == "eth_call" && strings.Contains(strings.ToLower(string(params)), headCall) {
					return encodeHead(second)
				}
				return result
			}},
	}
	for _, lc := range cases {
		proxy.SetRewrite(lc.lie)
		out, errs, code := b.run("", "pull", "--json")
		proxy.SetRewrite(nil)
		var rep struct {
			Mirror headJSON `json:"mirror"`
		}
		_ = json.Unmarshal([]byte(out), &rep)
		t.Logf("%s: exit %d: %s", lc.name, code, strings.TrimSpace(errs))
		switch {
		case code != 6:
			t.Errorf("%s: pull exited %d, want 6 (stale or lying RPC)\nstdout: %s\nstderr: %s", lc.name, code, out, errs)
		case !strings.Contains(errs, lc.reason) || !strings.Contains(errs, lc.detail):
			t.Errorf("%s: stderr does not name %q (%q): %s", lc.name, lc.reason, lc.detail, errs)
		case rep.Mirror.Seq != 0 && rep.Mirror != before.Mirror: // a refused head reports no mirror
			t.Errorf("%s: the pull moved the mirror to %+v (was %+v)", lc.name, rep.Mirror, before.Mirror)
		}
		recordFigure(t, lc.name, "refused, exit %d: %s", code, strings.TrimSpace(lc.reason+" "+lc.detail))
	}
	if after := offlineStatus(); after.Mirror != before.Mirror || len(after.Gaps) != 0 {
		t.Errorf("the lies applied something: mirror %+v (was %+v), gaps %v", after.Mirror, before.Mirror, after.Gaps)
	}
	// the truth still gets through, and nothing the lies brought stayed in the cache
	out, errs, code := b.run("", "pull", "--json")
	if code != 0 {
		t.Fatalf("honest pull after the lies: exit %d\n%s\n%s", code, out, errs)
	}
	if st := offlineStatus(); st.Mirror.Seq != 3 || !strings.EqualFold(st.Mirror.Digest, chainHead(t, c, a).Digest.Hex()) {
		t.Fatalf("after an honest pull machine B's mirror is %+v", st.Mirror)
	}
	ma.checkNoPanic()
	mb.checkNoPanic()
}

// onMethod applies f to the results of one method only.
func onMethod(method string, f func(json.RawMessage) json.RawMessage) func(string, json.RawMessage, json.RawMessage) json.RawMessage {
	return func(m string, params, result json.RawMessage) json.RawMessage {
		if m != method || string(result) == "null" {
			return result
		}
		return f(result)
	}
}

// editJSON rewrites one string field of a JSON object.
func editJSON(obj json.RawMessage, field string, f func(string) string) json.RawMessage {
	var m map[string]any
	if err := json.Unmarshal(obj, &m); err != nil {
		return obj
	}
	if s, ok := m[field].(string); ok {
		m[field] = f(s)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return obj
	}
	return b
}

// editLogs rewrites one string field of every log in an eth_getLogs answer.
func editLogs(logs json.RawMessage, field string, f func(string) string) json.RawMessage {
	var all []json.RawMessage
	if err := json.Unmarshal(logs, &all); err != nil {
		return logs
	}
	for i := range all {
		all[i] = editJSON(all[i], field, f)
	}
	b, err := json.Marshal(all)
	if err != nil {
		return logs
	}
	return b
}

func redirectLogs(tx common.Hash) func(json.RawMessage) json.RawMessage {
	return func(r json.RawMessage) json.RawMessage {
		return editLogs(r, "transactionHash", func(string) string { return tx.Hex() })
	}
}

// flipHex changes one hex digit in the middle of a 0x string.
func flipHex(s string) string {
	if len(s) < 8 {
		return s
	}
	i := len(s) / 2
	c := byte('0')
	if s[i] == '0' {
		c = '1'
	}
	return s[:i] + string(c) + s[i+1:]
}

// flipDigestWord changes the digest word of an Epoch event's data (seq, prev, digest, prevBlock).
func flipDigestWord(s string) string {
	i := 2 + 2*64 + 10
	if len(s) < 2+4*64 {
		return s
	}
	c := byte('0')
	if s[i] == '0' {
		c = '1'
	}
	return s[:i] + string(c) + s[i+1:]
}

// encodeHead is the eth_call answer of head(owner, space): digest, seq, blockNumber.
func encodeHead(h chain.Head) json.RawMessage {
	word := func(n uint64) []byte { return common.LeftPadBytes(new(big.Int).SetUint64(n).Bytes(), 32) }
	b := append(append(h.Digest.Bytes(), word(h.Seq)...), word(h.Block)...)
	out, _ := json.Marshal("0x" + hex.EncodeToString(b))
	return out
}

// sendTransfer sends 1 wei from dev account i to a fresh address and returns the mined
// transaction's hash: a real transaction that is not a push.
func sendTransfer(t *testing.T, dc *devChain, i int) common.Hash {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ec, err := ethclient.DialContext(ctx, dc.info.RPC)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	key, err := crypto.HexToECDSA(strings.TrimPrefix(dc.info.Accounts[i].PrivateKey, "0x"))
	if err != nil {
		t.Fatal(err)
	}
	nonce, err := ec.PendingNonceAt(ctx, crypto.PubkeyToAddress(key.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	head, err := ec.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tip := big.NewInt(1_000_000_000)
	to := common.BytesToAddress(crypto.Keccak256([]byte(fmt.Sprint("somewhere else ", time.Now().UnixNano())))[:20])
	tx := types.NewTx(&types.DynamicFeeTx{ChainID: new(big.Int).SetUint64(dc.info.ChainID), Nonce: nonce, GasTipCap: tip,
		GasFeeCap: new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip), Gas: 21000, To: &to, Value: big.NewInt(1)})
	signed, err := types.SignTx(tx, types.LatestSignerForChainID(new(big.Int).SetUint64(dc.info.ChainID)), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := ec.SendTransaction(ctx, signed); err != nil {
		t.Fatal(err)
	}
	for {
		if r, err := ec.TransactionReceipt(ctx, signed.Hash()); err == nil && r != nil {
			return signed.Hash()
		}
		select {
		case <-ctx.Done():
			t.Fatal("the transfer was not mined")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

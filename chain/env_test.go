package chain_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"

	"kintfs/chain"
	"kintfs/chain/devchain"
)

// One dev chain serves the tests of this package; each test writes to spaces of its own.
var (
	shared     *devchain.DevChain
	sharedDir  string
	sharedOnce sync.Once
	sharedErr  error
)

func TestMain(m *testing.M) {
	chain.SessionKeyScryptN, chain.SessionKeyScryptP = 1<<10, 1 // keystore tests stay fast
	code := m.Run()
	if shared != nil {
		shared.Close()
		os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

func sharedChain(t *testing.T) *devchain.DevChain {
	t.Helper()
	sharedOnce.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "kintfs-chain-test-")
		if sharedErr == nil {
			shared, sharedErr = devchain.Start(devchain.Config{DataDir: sharedDir})
		}
	})
	if sharedErr != nil {
		t.Fatalf("dev chain: %v", sharedErr)
	}
	return shared
}

var testOpts = chain.Options{CallTimeout: 5 * time.Second, Backoff: 10 * time.Millisecond, PollInterval: 10 * time.Millisecond}

func dial(t *testing.T, url string, contract common.Address, opt chain.Options) *chain.Client {
	t.Helper()
	c, err := chain.Dial(context.Background(), url, contract, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// env is a client on the shared dev chain with the owner (dev account 0) and a fresh
// space.
type env struct {
	t     *testing.T
	ctx   context.Context
	dev   *devchain.DevChain
	c     *chain.Client
	key   *ecdsa.PrivateKey
	owner common.Address
	space common.Hash
}

var spaceCounter atomic.Uint64

func newEnv(t *testing.T) *env {
	d := sharedChain(t)
	e := &env{t: t, ctx: context.Background(), dev: d, key: d.Keys()[0]}
	e.owner = crypto.PubkeyToAddress(e.key.PublicKey)
	e.space = crypto.Keccak256Hash([]byte("kint-space-v1"), []byte(fmt.Sprintf("%s-%d", t.Name(), spaceCounter.Add(1))))
	e.c = dial(t, d.Info().RPC, d.Contract(), testOpts)
	return e
}

// push anchors ct on top of prev from the owner key, with one confirmation.
func (e *env) push(prev common.Hash, ct []byte) *chain.PushReceipt {
	e.t.Helper()
	r, err := e.c.SendRawBlob(e.ctx, e.key, e.owner, e.space, prev, ct)
	if err != nil {
		e.t.Fatalf("push: %v", err)
	}
	return r
}

// pushN anchors n epochs of distinct content and returns their ciphertexts, oldest first.
func (e *env) pushN(n int) [][]byte {
	e.t.Helper()
	var cts [][]byte
	prev := common.Hash{}
	for i := 0; i < n; i++ {
		ct := bytes.Repeat([]byte{byte(i + 1)}, 100+i)
		r := e.push(prev, ct)
		prev = r.Digest
		cts = append(cts, ct)
	}
	return cts
}

func (e *env) head() chain.Head {
	e.t.Helper()
	h, err := e.c.Head(e.ctx, e.owner, e.space)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

func (e *env) newKey(funded bool) (*ecdsa.PrivateKey, common.Address) {
	e.t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		e.t.Fatal(err)
	}
	a := crypto.PubkeyToAddress(k.PublicKey)
	if funded {
		if err := e.c.Fund(e.ctx, e.key, a, big.NewInt(params.Ether)); err != nil {
			e.t.Fatal(err)
		}
	}
	return k, a
}

// rpcProxy sits between a client and the dev chain to inject transport failures and to
// rewrite answers, as a flaky or lying RPC would.
type rpcProxy struct {
	target string
	srv    *httptest.Server

	mu       sync.Mutex
	dropNext int           // close the connection without answering
	fail502  int           // answer 502
	slowNext int           // answer after delay
	delay    time.Duration // for slowNext
	rewrite  func(method string, params, result json.RawMessage) json.RawMessage
	// refuse answers a single call with a JSON-RPC error carrying its message, when it
	// returns one
	refuse   func(method string, params json.RawMessage) string
	requests []string // methods seen, batch elements included
}

type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func newProxy(t *testing.T, target string) *rpcProxy {
	p := &rpcProxy{target: target}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *rpcProxy) URL() string { return p.srv.URL }

func (p *rpcProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	batch := len(bytes.TrimSpace(body)) > 0 && bytes.TrimSpace(body)[0] == '['
	var reqs []rpcMsg
	if batch {
		json.Unmarshal(body, &reqs)
	} else {
		var m rpcMsg
		json.Unmarshal(body, &m)
		reqs = []rpcMsg{m}
	}

	p.mu.Lock()
	for _, m := range reqs {
		p.requests = append(p.requests, m.Method)
	}
	drop, fail, slow := p.dropNext > 0, p.fail502 > 0 && p.dropNext == 0, p.slowNext > 0 && p.dropNext == 0 && p.fail502 == 0
	switch {
	case drop:
		p.dropNext--
	case fail:
		p.fail502--
	case slow:
		p.slowNext--
	}
	delay, rewrite, refuse := p.delay, p.rewrite, p.refuse
	p.mu.Unlock()

	if refuse != nil && !batch {
		if msg := refuse(reqs[0].Method, reqs[0].Params); msg != "" {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": reqs[0].ID,
				"error": map[string]any{"code": -32005, "message": msg}})
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
			return
		}
	}

	if drop {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	if fail {
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	}
	if slow {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}

	resp, err := http.Post(p.target, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if rewrite != nil {
		out = p.rewriteBody(out, reqs, batch, rewrite)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

func (p *rpcProxy) rewriteBody(out []byte, reqs []rpcMsg, batch bool, rewrite func(string, json.RawMessage, json.RawMessage) json.RawMessage) []byte {
	var resps []rpcMsg
	if batch {
		if json.Unmarshal(out, &resps) != nil {
			return out
		}
	} else {
		var m rpcMsg
		if json.Unmarshal(out, &m) != nil {
			return out
		}
		resps = []rpcMsg{m}
	}
	byID := map[string]rpcMsg{}
	for _, q := range reqs {
		byID[string(q.ID)] = q
	}
	for i, r := range resps {
		q := byID[string(r.ID)]
		if r.Error == nil {
			resps[i].Result = rewrite(q.Method, q.Params, r.Result)
		}
	}
	var b []byte
	if batch {
		b, _ = json.Marshal(resps)
	} else {
		b, _ = json.Marshal(resps[0])
	}
	return b
}

func (p *rpcProxy) set(f func(p *rpcProxy)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// rpcCall makes one raw JSON-RPC call, bypassing the client under test.
func rpcCall(url string, result any, method string, args ...any) error {
	c, err := rpc.Dial(url)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Call(result, method, args...)
}

// fundTx sends 1 wei from the owner to to and returns the mined transaction's hash.
func fundTx(t *testing.T, e *env, to common.Address) common.Hash {
	t.Helper()
	ec, err := ethclient.Dial(e.dev.Info().RPC)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	nonce, err := ec.PendingNonceAt(e.ctx, e.owner)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := types.SignNewTx(e.key, types.LatestSignerForChainID(big.NewInt(int64(e.c.ChainID()))), &types.DynamicFeeTx{
		ChainID: big.NewInt(int64(e.c.ChainID())), Nonce: nonce, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(100 * params.GWei),
		Gas: 21000, To: &to, Value: big.NewInt(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ec.SendTransaction(e.ctx, tx); err != nil {
		t.Fatal(err)
	}
	if _, err := bind.WaitMined(e.ctx, ec, tx.Hash()); err != nil {
		t.Fatal(err)
	}
	return tx.Hash()
}

// contractCallTx sends a call to the contract that is not push and returns its hash.
func contractCallTx(t *testing.T, e *env) common.Hash {
	t.Helper()
	_, k := e.newKey(false)
	r, err := e.c.SetSessionKey(e.ctx, e.key, k, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r.TxHash
}

// resign signs p's transaction again with another nonce.
func resign(e *env, p *chain.PreparedPush, nonce uint64) (*types.Transaction, error) {
	return resignTx(e, p, nonce, p.Tx.Gas())
}

// resignWithGas signs p's transaction again with another gas limit.
func resignWithGas(e *env, p *chain.PreparedPush, gas uint64) (*types.Transaction, error) {
	return resignTx(e, p, p.Nonce, gas)
}

func resignTx(e *env, p *chain.PreparedPush, nonce, gas uint64) (*types.Transaction, error) {
	id := big.NewInt(int64(e.c.ChainID()))
	return types.SignNewTx(e.key, types.LatestSignerForChainID(id), &types.DynamicFeeTx{
		ChainID: id, Nonce: nonce, GasTipCap: p.Tx.GasTipCap(), GasFeeCap: p.Tx.GasFeeCap(),
		Gas: gas, To: p.Tx.To(), Data: p.Tx.Data(),
	})
}

func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}

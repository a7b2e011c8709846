package chain_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"
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
	"kintfs/chain/rpcproxy"
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

// newProxy is a JSON-RPC proxy between a client and the dev chain, to inject transport
// failures and rewrite answers as a flaky or lying RPC would; closed with the test.
func newProxy(t *testing.T, target string) *rpcproxy.Proxy {
	t.Helper()
	p, err := rpcproxy.Start(target, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
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

package replica

import (
	"context"
	"crypto/ecdsa"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/chain/devchain"
)

// chainEnv is a real development chain in this process with one vault on it; each machine
// it opens is a KINT_HOME of its own, as another computer of the same owner would be.
type chainEnv struct {
	t        testing.TB
	dc       *devchain.DevChain
	owner    *ecdsa.PrivateKey
	contract common.Address
	rpc      string
	tenant   string
}

const chainEnvPassphrase = "sealing test passphrase"

func newChainEnv(t testing.TB) *chainEnv {
	t.Helper()
	dc, err := devchain.Start(devchain.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close() })
	return &chainEnv{t: t, dc: dc, owner: devchain.AccountKey(0), contract: dc.Contract(), rpc: dc.Info().RPC, tenant: "sealing"}
}

func (e *chainEnv) dial() *chain.Client {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := chain.Dial(ctx, e.rpc, e.contract, chain.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(c.Close)
	return c
}

// machine connects a fresh home to the vault (creating it on first use) with a funded,
// authorized session key, and opens its replica, logging to the test.
func (e *chainEnv) machine() *Replica { return e.machineWith(e.t.Logf) }

// machineWith is machine with its own log.
func (e *chainEnv) machineWith(logf func(string, ...any)) *Replica {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := e.dial()
	home := Home(e.t.TempDir())
	pass := chainEnvPassphrase
	owner := crypto.PubkeyToAddress(e.owner.PublicKey)
	res, err := Init(ctx, InitOptions{Home: home, Owner: owner, Tenant: e.tenant, RPC: e.rpc, Contract: e.contract, Client: c, Passphrase: &pass})
	if err != nil {
		e.t.Fatal(err)
	}
	key, err := crypto.GenerateKey()
	if err != nil {
		e.t.Fatal(err)
	}
	addr := crypto.PubkeyToAddress(key.PublicKey)
	if err := c.Fund(ctx, e.owner, addr, new(big.Int).Exp(big.NewInt(10), big.NewInt(19), nil)); err != nil {
		e.t.Fatal(err)
	}
	if _, err := c.SetSessionKey(ctx, e.owner, addr, uint64(time.Now().Add(24*time.Hour).Unix())); err != nil {
		e.t.Fatal(err)
	}
	dek, err := home.LoadDEK(res.Vault.Space)
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := Open(Options{Home: home, Vault: res.Vault, DEK: dek, Client: c, SessionKey: key, Logf: logf})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { r.Close() })
	return r
}

// reopen closes r and opens its home again, as a remount or a restart after kill -9 would.
func (e *chainEnv) reopen(r *Replica) *Replica {
	e.t.Helper()
	r.Close()
	n, err := Open(r.opt)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { n.Close() })
	return n
}

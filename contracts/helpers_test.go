package contracts_test

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"

	"kintfs/chain"
	"kintfs/chain/devchain"
	"kintfs/contracts"
)

// fixture is a simulated chain with EpochAnchor deployed and a few funded keys.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	sim     *simulated.Backend
	client  simulated.Client
	chainID *big.Int
	anchor  *contracts.EpochAnchor
	inst    *bind.BoundContract
	addr    common.Address

	owner, key, other *ecdsa.PrivateKey
}

func testKey(name string) *ecdsa.PrivateKey {
	k, err := crypto.ToECDSA(crypto.Keccak256([]byte("kintfs-contract-test-" + name)))
	if err != nil {
		panic(err)
	}
	return k
}

func addrOf(k *ecdsa.PrivateKey) common.Address { return crypto.PubkeyToAddress(k.PublicKey) }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		t:     t,
		ctx:   context.Background(),
		owner: testKey("owner"),
		key:   testKey("session"),
		other: testKey("other"),
	}
	funds := new(big.Int).Mul(big.NewInt(1000), big.NewInt(params.Ether))
	alloc := types.GenesisAlloc{}
	for _, k := range []*ecdsa.PrivateKey{f.owner, f.key, f.other} {
		alloc[addrOf(k)] = types.Account{Balance: funds}
	}
	f.sim = simulated.NewBackend(alloc, func(_ *node.Config, ec *ethconfig.Config) {
		ec.Genesis.Config = devchain.ChainConfig()
	})
	t.Cleanup(func() { f.sim.Close() })
	f.client = f.sim.Client()

	id, err := f.client.ChainID(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.chainID = id
	f.anchor = contracts.NewEpochAnchor()

	addr, tx, err := contracts.DeployEpochAnchor(f.opts(f.owner), f.client)
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	f.sim.Commit()
	if _, err := bind.WaitDeployed(f.ctx, f.client, tx.Hash()); err != nil {
		t.Fatalf("deploy: %v", err)
	}
	f.addr = addr
	f.inst = f.anchor.Instance(f.client, addr)
	return f
}

func (f *fixture) opts(k *ecdsa.PrivateKey) *bind.TransactOpts {
	o := bind.NewKeyedTransactor(k, f.chainID)
	o.Context = f.ctx
	return o
}

// send estimates, signs and sends a call to the anchor from k, mines it and returns the
// receipt. An estimate that reverts comes back as the error.
func (f *fixture) send(k *ecdsa.PrivateKey, data []byte) (*types.Receipt, error) {
	f.t.Helper()
	return f.sendTo(k, f.addr, data)
}

func (f *fixture) sendTo(k *ecdsa.PrivateKey, to common.Address, data []byte) (*types.Receipt, error) {
	f.t.Helper()
	inst := bind.NewBoundContract(to, f.anchor.GetABI(), f.client, f.client, f.client)
	tx, err := bind.Transact(inst, f.opts(k), data)
	if err != nil {
		return nil, err
	}
	return f.mine(tx)
}

// sendRaw sends without estimating, with a fixed gas limit, so that a transaction that
// reverts is mined and its receipt (status 0) is returned.
func (f *fixture) sendRaw(k *ecdsa.PrivateKey, data []byte, gas uint64) *types.Receipt {
	f.t.Helper()
	o := f.opts(k)
	o.GasLimit = gas
	tx, err := bind.Transact(f.inst, o, data)
	if err != nil {
		f.t.Fatalf("send: %v", err)
	}
	r, err := f.mine(tx)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) mine(tx *types.Transaction) (*types.Receipt, error) {
	f.t.Helper()
	f.sim.Commit()
	r, err := f.client.TransactionReceipt(f.ctx, tx.Hash())
	if err != nil {
		return nil, fmt.Errorf("receipt of %s: %w", tx.Hash(), err)
	}
	return r, nil
}

func (f *fixture) mustSend(k *ecdsa.PrivateKey, data []byte) *types.Receipt {
	f.t.Helper()
	r, err := f.send(k, data)
	if err != nil {
		f.t.Fatalf("send: %v", err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		f.t.Fatalf("transaction %s failed", r.TxHash)
	}
	return r
}

// call runs data against the latest block as from.
func (f *fixture) call(from common.Address, data []byte) ([]byte, error) {
	return f.client.CallContract(f.ctx, ethereum.CallMsg{From: from, To: &f.addr, Data: data}, nil)
}

func (f *fixture) head(owner common.Address, space common.Hash) contracts.HeadOutput {
	f.t.Helper()
	out, err := bind.Call(f.inst, nil, f.anchor.PackHead(owner, space), f.anchor.UnpackHead)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *fixture) canWrite(owner, writer common.Address) bool {
	f.t.Helper()
	ok, err := bind.Call(f.inst, nil, f.anchor.PackCanWrite(owner, writer), f.anchor.UnpackCanWrite)
	if err != nil {
		f.t.Fatal(err)
	}
	return ok
}

func (f *fixture) expiry(owner, key common.Address) uint64 {
	f.t.Helper()
	v, err := bind.Call(f.inst, nil, f.anchor.PackSessionKeyExpiry(owner, key), f.anchor.UnpackSessionKeyExpiry)
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

func (f *fixture) nonce(owner common.Address) uint64 {
	f.t.Helper()
	v, err := bind.Call(f.inst, nil, f.anchor.PackAuthNonce(owner), f.anchor.UnpackAuthNonce)
	if err != nil {
		f.t.Fatal(err)
	}
	return v.Uint64()
}

func (f *fixture) latestTime() uint64 {
	f.t.Helper()
	h, err := f.client.HeaderByNumber(f.ctx, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return h.Time
}

// setTime seals an empty block whose timestamp is exactly ts (which must be ahead of the
// latest block).
func (f *fixture) setTime(ts uint64) {
	f.t.Helper()
	now := f.latestTime()
	if ts <= now {
		f.t.Fatalf("setTime(%d): latest block is already at %d", ts, now)
	}
	// The simulated backend refuses while its pending block still holds a transaction,
	// which it may for a moment after the commit that mined it, on a loaded machine.
	var err error
	for try := 0; try < 100; try++ {
		if err = f.sim.AdjustTime(time.Duration(ts-now) * time.Second); err == nil || !strings.Contains(err.Error(), "non-empty block") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		f.t.Fatal(err)
	}
	if got := f.latestTime(); got != ts {
		f.t.Fatalf("block time %d, want %d", got, ts)
	}
}

// revert decodes the EpochAnchor custom error carried by err (an eth_call or gas estimate
// failure): its name and the arguments.
func (f *fixture) revert(err error) (string, []any) {
	f.t.Helper()
	if err == nil {
		f.t.Fatal("expected a revert, got success")
	}
	var de rpc.DataError
	if !errors.As(err, &de) {
		f.t.Fatalf("error without revert data: %v", err)
	}
	s, _ := de.ErrorData().(string)
	data, derr := hexutil.Decode(s)
	if derr != nil || len(data) < 4 {
		f.t.Fatalf("revert data %q: %v", s, err)
	}
	rev := chain.DecodeRevert(data)
	if rev.Name == "" {
		f.t.Fatalf("unknown revert data %x", data)
	}
	return rev.Name, rev.Args
}

func (f *fixture) wantRevert(err error, want string) []any {
	f.t.Helper()
	got, args := f.revert(err)
	if got != want {
		f.t.Fatalf("reverted with %s%v, want %s", got, args, want)
	}
	return args
}

// signAuthorization signs the EIP-712 digest the contract computes for the owner's
// current nonce, as a 65-byte r||s||v with v in {27, 28}.
func (f *fixture) signAuthorization(signer *ecdsa.PrivateKey, owner, key common.Address, expiry uint64, deadline *big.Int) []byte {
	f.t.Helper()
	nonce := new(big.Int).SetUint64(f.nonce(owner))
	digest, err := bind.Call(f.inst, nil, f.anchor.PackAuthorizationDigest(owner, key, expiry, nonce, deadline), f.anchor.UnpackAuthorizationDigest)
	if err != nil {
		f.t.Fatal(err)
	}
	sig, err := crypto.Sign(digest[:], signer)
	if err != nil {
		f.t.Fatal(err)
	}
	sig[64] += 27
	return sig
}

func randomBytes(seed int64, n int) []byte {
	// A small deterministic generator keeps the gas numbers reproducible run to run.
	out := make([]byte, n)
	x := uint64(seed)*0x9e3779b97f4a7c15 + 1
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out[i] = byte(x)
	}
	return out
}

func spaceOf(name string) common.Hash {
	return crypto.Keccak256Hash([]byte("kint-space-v1"), []byte(name))
}

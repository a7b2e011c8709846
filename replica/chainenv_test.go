package replica

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
	"log/slog"
	"math/big"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/chain/devchain"
	"kintfs/replica/memchain"
	"kintfs/seal"
)

var _ Chain = (*memchain.Conn)(nil)

// chainEnv is one vault on a chain in this process; each machine it opens is a KINT_HOME of
// its own, as another computer of the same owner would be. The chain is memchain unless the
// test asks for a real development chain (a go-ethereum node) with newDevChainEnv.
type chainEnv struct {
	t        testing.TB
	mem      *memchain.Chain
	dc       *devchain.DevChain
	owner    *ecdsa.PrivateKey
	contract common.Address
	rpc      string
	tenant   string
	dialOpt  chain.Options // how conn dials rpc
}

const chainEnvPassphrase = "sealing test passphrase"

// envKEKs are the keys chainEnvPassphrase derives for the env's owner, by tenant: derived
// once per test process (under envKEKsMu, so parallel tests wait for the first rather than
// derive it again), since scrypt would otherwise be most of the time of these tests.
var (
	envKEKsMu sync.Mutex
	envKEKs   = map[string]*[32]byte{}
)

func (e *chainEnv) kek() *[32]byte {
	e.t.Helper()
	envKEKsMu.Lock()
	defer envKEKsMu.Unlock()
	if k, ok := envKEKs[e.tenant]; ok {
		return k
	}
	k, err := seal.KEKFromPassphrase(chainEnvPassphrase, crypto.PubkeyToAddress(e.owner.PublicKey), seal.SpaceID(e.tenant))
	if err != nil {
		e.t.Fatal(err)
	}
	envKEKs[e.tenant] = &k
	return &k
}

func newChainEnv(t testing.TB) *chainEnv {
	mem := memchain.New()
	return &chainEnv{t: t, mem: mem, owner: devchain.AccountKey(0), contract: mem.Contract(), rpc: "memchain", tenant: "sealing"}
}

func newDevChainEnv(t testing.TB) *chainEnv {
	t.Helper()
	dc, err := devchain.Start(devchain.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close() })
	return &chainEnv{t: t, dc: dc, owner: devchain.AccountKey(0), contract: dc.Contract(), rpc: dc.Info().RPC, tenant: "sealing"}
}

// benchChainEnv is the dev chain make bench started for this test (scripts/benchtool, step
// bucket), when it named the chain's devchain.json in the environment variable variable; nil
// otherwise. Its vaults belong to the chain's second account, under a tenant of their own, so
// that they meet nothing of the bench's own vault.
func benchChainEnv(t testing.TB, variable string) *chainEnv {
	t.Helper()
	path := os.Getenv(variable)
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", variable, err)
	}
	var info devchain.Info
	if err := json.Unmarshal(data, &info); err != nil || info.RPC == "" || !common.IsHexAddress(info.Contract) {
		t.Fatalf("%s: %s is not a devchain.json (%v)", variable, path, err)
	}
	return &chainEnv{t: t, owner: devchain.AccountKey(1), contract: common.HexToAddress(info.Contract), rpc: info.RPC,
		tenant: fmt.Sprintf("bench%d", time.Now().UnixNano()%1e9)}
}

// conn is a new connection to the chain: a memchain.Conn, or an RPC client of the dev chain.
func (e *chainEnv) conn() Chain {
	e.t.Helper()
	if e.mem != nil {
		return e.mem.Conn()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := chain.Dial(ctx, e.rpc, e.contract, e.dialOpt)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(c.Close)
	return c
}

// authorize lets a new session key push for the owner (funded on a dev chain).
func (e *chainEnv) authorize(ctx context.Context, c Chain) *ecdsa.PrivateKey {
	e.t.Helper()
	key, err := crypto.GenerateKey()
	if err != nil {
		e.t.Fatal(err)
	}
	addr := crypto.PubkeyToAddress(key.PublicKey)
	expiry := time.Now().Add(24 * time.Hour)
	if e.mem != nil {
		e.mem.Authorize(crypto.PubkeyToAddress(e.owner.PublicKey), addr, expiry)
		return key
	}
	rpc := c.(*chain.Client)
	if err := rpc.Fund(ctx, e.owner, addr, new(big.Int).Exp(big.NewInt(10), big.NewInt(19), nil)); err != nil {
		e.t.Fatal(err)
	}
	if _, err := rpc.SetSessionKey(ctx, e.owner, addr, uint64(expiry.Unix())); err != nil {
		e.t.Fatal(err)
	}
	return key
}

// machine connects a fresh home to the vault (creating it on first use) with an authorized
// session key, and opens its replica, logging to the test.
func (e *chainEnv) machine() *Replica { return e.machineWith(e.t.Logf) }

// machineWith is machine with its own log.
func (e *chainEnv) machineWith(logf func(string, ...any)) *Replica {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := e.conn()
	home := homedir.Home{Dir: e.t.TempDir()}
	pass := chainEnvPassphrase
	owner := crypto.PubkeyToAddress(e.owner.PublicKey)
	res, err := Init(ctx, InitOptions{Home: home, Owner: owner, Tenant: e.tenant, RPC: e.rpc, Contract: e.contract, Client: c, Passphrase: &pass, KEK: e.kek(), NewVault: true})
	if err != nil {
		e.t.Fatal(err)
	}
	key := e.authorize(ctx, c)
	dek, err := home.LoadDEK(res.Vault.Space)
	if err != nil {
		e.t.Fatal(err)
	}
	// The engine's tests change rows in every shape the wire format has (status and meta on
	// any tier, deletions of any tier): the full model. kint's model has tests of its own
	// (replica/store's shapes_test.go, integration's shapes_test.go).
	res.Vault.Model = vault.ModelFull
	r, err := Open(Options{Home: home, Vault: res.Vault, DEK: dek, Client: c, SessionKey: key, Log: lineLog(logf)})
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

// sendRaw anchors ct as r's next epoch without sealing it: what a broken or hostile writer
// would push.
func sendRaw(t testing.TB, r *Replica, prev common.Hash, ct []byte) *chain.PushReceipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := r.Client()
	p, err := c.PreparePush(ctx, r.opt.SessionKey, r.vault.Owner, r.vault.Space, prev, ct)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, p); err != nil {
		t.Fatal(err)
	}
	rc, err := c.WaitPush(ctx, p, r.vault.Owner, r.vault.Space, 1)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// strp is a pointer to s, for rows' optional fields.
func strp(s string) *string { return &s }

// lineLog hands each line of the engine's log to logf as the mount's log writes it: "warn: "
// and "debug: " in front of those levels.
func lineLog(logf func(string, ...any)) *slog.Logger {
	return slog.New(lineHandler{logf})
}

type lineHandler struct{ logf func(string, ...any) }

func (lineHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h lineHandler) Handle(_ context.Context, r slog.Record) error {
	prefix := map[slog.Level]string{slog.LevelDebug: "debug: ", slog.LevelWarn: "warn: ", slog.LevelError: "error: "}[r.Level]
	h.logf("%s%s", prefix, r.Message)
	return nil
}
func (h lineHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h lineHandler) WithGroup(string) slog.Handler      { return h }

// testLog is a log whose lines go to t.Logf, every level.
func testLog(t testing.TB) *slog.Logger { return lineLog(t.Logf) }

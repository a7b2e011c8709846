package devchain_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"

	"kintfs/chain"
	"kintfs/chain/devchain"
)

func start(t *testing.T, cfg devchain.Config) *devchain.DevChain {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	d, err := devchain.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestStartWritesInfo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	d := start(t, devchain.Config{DataDir: dir})
	info := d.Info()

	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir mode %v, %v", fi.Mode().Perm(), err)
	}
	path := filepath.Join(dir, devchain.InfoFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: mode %v, %v", path, fi.Mode().Perm(), err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"rpc", "chain_id", "contract", "accounts"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("devchain.json has no %q", k)
		}
	}
	if acc := fields["accounts"].([]any)[0].(map[string]any); acc["address"] == nil || acc["private_key"] == nil {
		t.Errorf("account fields: %v", acc)
	}
	var onDisk devchain.Info
	json.Unmarshal(raw, &onDisk)
	if fmt.Sprint(onDisk) != fmt.Sprint(info) {
		t.Fatalf("devchain.json %+v, Info() %+v", onDisk, info)
	}

	if !strings.HasPrefix(info.RPC, "http://127.0.0.1:") || strings.HasSuffix(info.RPC, ":0") {
		t.Fatalf("rpc %q", info.RPC)
	}
	if info.ChainID != 1337 || len(info.Accounts) != 4 {
		t.Fatalf("info %+v", info)
	}
	ctx := context.Background()
	ec, err := ethclient.Dial(info.RPC)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	if id, err := ec.ChainID(ctx); err != nil || id.Uint64() != 1337 {
		t.Fatalf("chain id %v, %v", id, err)
	}
	if code, err := ec.CodeAt(ctx, common.HexToAddress(info.Contract), nil); err != nil || len(code) == 0 {
		t.Fatalf("no code at %s: %v", info.Contract, err)
	}
	for i, a := range info.Accounts {
		k := devchain.AccountKey(i)
		if a.Address != crypto.PubkeyToAddress(k.PublicKey).Hex() || a.PrivateKey != "0x"+common.Bytes2Hex(crypto.FromECDSA(k)) {
			t.Fatalf("account %d: %+v", i, a)
		}
		bal, err := ec.BalanceAt(ctx, common.HexToAddress(a.Address), nil)
		if err != nil || bal.Cmp(new(big.Int).Mul(big.NewInt(900_000), big.NewInt(params.Ether))) < 0 {
			t.Fatalf("account %d balance %v, %v", i, bal, err)
		}
	}
	// Deterministic: the first account's key is keccak256("kintfs-dev-account-0").
	if got := crypto.FromECDSA(devchain.AccountKey(0)); common.BytesToHash(got) != crypto.Keccak256Hash([]byte("kintfs-dev-account-0")) {
		t.Fatal("account 0 key is not keccak256(\"kintfs-dev-account-0\")")
	}

	// The same data directory cannot serve two chains at once.
	if d2, err := devchain.Start(devchain.Config{DataDir: dir}); err == nil {
		d2.Close()
		t.Fatal("second dev chain on one data directory started")
	}
	if _, err := ec.BlockNumber(ctx); err != nil {
		t.Fatalf("first chain broken by the second start: %v", err)
	}
}

func TestChainConfig(t *testing.T) {
	cfg := devchain.ChainConfig()
	g := devchain.Genesis(1)
	zero := new(big.Int)
	if !cfg.IsPrague(zero, 0) || !cfg.IsOsaka(zero, 0) || cfg.IsAmsterdam(zero, 0) || cfg.BogotaTime != nil {
		t.Fatalf("forks: %v", cfg)
	}
	if g.Config.ChainID.Uint64() != devchain.ChainID || g.GasLimit != 60_000_000 {
		t.Fatalf("genesis %v %d", g.Config.ChainID, g.GasLimit)
	}
	if g.ToBlock().Hash() != devchain.Genesis(1).ToBlock().Hash() {
		t.Fatal("genesis is not deterministic")
	}
}

func TestRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:8545", "example.com:8545", "127.0.0.1"} {
		if d, err := devchain.Start(devchain.Config{DataDir: t.TempDir(), HTTPAddr: addr}); err == nil {
			d.Close()
			t.Errorf("%s accepted", addr)
		}
	}
}

func TestFixedPortAndAccounts(t *testing.T) {
	d := start(t, devchain.Config{HTTPAddr: "localhost:0", Accounts: 2})
	if n := len(d.Info().Accounts); n != 2 || len(d.Keys()) != 2 {
		t.Fatalf("%d accounts", n)
	}
	if !strings.HasPrefix(d.Info().RPC, "http://127.0.0.1:") {
		t.Fatalf("rpc %s", d.Info().RPC)
	}
}

// A period: blocks come without transactions, and a push reaches two confirmations.
func TestPeriod(t *testing.T) {
	d := start(t, devchain.Config{Period: 1})
	ctx := context.Background()
	c, err := chain.Dial(ctx, d.Info().RPC, d.Contract(), chain.Options{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n0, err := c.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	key := d.Keys()[0]
	owner := crypto.PubkeyToAddress(key.PublicKey)
	p, err := c.PreparePush(ctx, key, owner, common.Hash{1}, common.Hash{}, []byte("periodic"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, p); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	r, err := c.WaitPush(wctx, p, owner, common.Hash{1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	n1, _ := c.BlockNumber(ctx)
	if n1 < r.Block+1 || n1 <= n0 {
		t.Fatalf("blocks %d -> %d, push in %d", n0, n1, r.Block)
	}
}

// Funding an account and spending from it right after the receipt must not trip over the
// transaction pool lagging the chain head.
func TestFundThenSpendAtOnce(t *testing.T) {
	d := start(t, devchain.Config{})
	ctx := context.Background()
	c, err := chain.Dial(ctx, d.Info().RPC, d.Contract(), chain.Options{PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 10; i++ {
		k, err := crypto.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Fund(ctx, d.Keys()[0], crypto.PubkeyToAddress(k.PublicKey), big.NewInt(params.Ether)); err != nil {
			t.Fatal(err)
		}
		if err := c.Fund(ctx, k, crypto.PubkeyToAddress(d.Keys()[1].PublicKey), big.NewInt(1)); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
}

// A dev chain killed without Close restarts with what it had.
func TestKilledChainRestarts(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var line [256]byte
	deadline := time.Now().Add(30 * time.Second)
	got := ""
	for !strings.Contains(got, "pushed\n") && time.Now().Before(deadline) {
		n, err := out.Read(line[:])
		got += string(line[:n])
		if err != nil {
			break
		}
	}
	if !strings.Contains(got, "pushed\n") {
		t.Fatalf("child did not push: %q", got)
	}
	cmd.Process.Kill() // SIGKILL: no Close, no flush
	cmd.Wait()

	d := start(t, devchain.Config{DataDir: dir})
	ctx := context.Background()
	c, err := chain.Dial(ctx, d.Info().RPC, d.Contract(), chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := d.Keys()[0]
	h, err := c.Head(ctx, crypto.PubkeyToAddress(key.PublicKey), common.Hash{9})
	if err != nil || h.Seq != 2 {
		t.Fatalf("head after kill and restart: %+v, %v", h, err)
	}
}

const childEnv = "KINTFS_DEVCHAIN_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(runChild(dir))
	}
	os.Exit(m.Run())
}

// runChild is the test binary re-run by TestKilledChainRestarts: it starts a dev chain in
// dir, pushes two epochs (two confirmations each), says so and waits to be killed.
func runChild(dir string) int {
	d, err := devchain.Start(devchain.Config{DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	c, err := chain.Dial(ctx, d.Info().RPC, d.Contract(), chain.Options{PollInterval: 5 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	key := d.Keys()[0]
	owner := crypto.PubkeyToAddress(key.PublicKey)
	prev := common.Hash{}
	for i := 0; i < 2; i++ {
		p, err := c.PreparePush(ctx, key, owner, common.Hash{9}, prev, []byte{byte(i + 1)})
		if err == nil {
			err = c.Send(ctx, p)
		}
		if err == nil {
			// Confirmed by a later block: the dev chain has written it through.
			_, err = c.WaitPush(ctx, p, owner, common.Hash{9}, 2)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		prev = p.Digest
	}
	fmt.Println("pushed")
	time.Sleep(time.Minute)
	return 1 // not reached: the parent kills this process
}

// TestBlockTimesFollowWallClock: with MaxLead, a run of blocks sealed as fast as they are
// asked for never takes a time more than MaxLead ahead of the wall clock, and the chain's
// clock ends near the wall clock (the tolerances allow for a loaded machine).
func TestBlockTimesFollowWallClock(t *testing.T) {
	d := start(t, devchain.Config{MaxLead: devchain.DefaultMaxLead})
	ec, err := ethclient.Dial(d.Info().RPC)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	ctx := context.Background()
	lead := int64(devchain.DefaultMaxLead / time.Second)
	const blocks = 8
	start := time.Now()
	for i := 0; i < blocks; i++ {
		if err := d.Commit(); err != nil {
			t.Fatal(err)
		}
		h, err := ec.HeaderByNumber(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ahead := int64(h.Time) - time.Now().Unix(); ahead > lead+1 {
			t.Fatalf("block %d has time %d, %d s ahead of the wall clock (MaxLead %v)", h.Number, h.Time, ahead, devchain.DefaultMaxLead)
		}
	}
	// eight blocks take about six seconds (the first few within the lead): the chain waited
	if took := time.Since(start); took < time.Duration(blocks-int(lead)-2)*time.Second {
		t.Fatalf("%d blocks in %v: the chain did not wait for the wall clock", blocks, took)
	}
	h, err := ec.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if skew := int64(h.Time) - time.Now().Unix(); skew < -30 || skew > lead+1 {
		t.Fatalf("head time %d is %d s from the wall clock", h.Time, skew)
	}
}

// TestSlowWatcherStillSealsTheDeploy: a first start deploys the contract right after it
// starts the goroutine that turns new transactions into blocks. When that goroutine runs late
// (a loaded machine), the deploy must still be sealed: its subscription is made before the
// deploy is sent, not on the goroutine.
func TestSlowWatcherStillSealsTheDeploy(t *testing.T) {
	devchain.SetWatchStarting(func() { time.Sleep(2 * time.Second) })
	defer devchain.SetWatchStarting(nil)
	t0 := time.Now()
	d := start(t, devchain.Config{})
	if took := time.Since(t0); took > 30*time.Second {
		t.Fatalf("the first start took %s", took)
	}
	if d.Contract() == (common.Address{}) {
		t.Fatal("no contract deployed")
	}
}

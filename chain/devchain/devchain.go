// Package devchain runs a real go-ethereum node in-process as a local development chain:
// dev-mode genesis (every fork through Osaka, so EIP-7623's calldata floor applies), a
// simulated beacon producing the blocks, JSON-RPC (eth, net, web3) over HTTP and websocket
// (one port) on loopback only, a few deterministic funded accounts and EpochAnchor deployed. Everything persists
// under DataDir: a restart, even after a kill, keeps the chain and the contract.
//
// Blocks: with Period > 0 a block is sealed every Period seconds, transactions or not.
// With Period 0 (the default) a block is sealed as soon as a transaction arrives, then
// Confirmations-1 empty blocks right after the last block that carried any, so that a push
// waiting for up to Confirmations confirmations (default 3; kint's default is 2) is answered
// at once instead of waiting for the next transaction. Waiting for more needs Commit (which
// seals an empty block on demand), other traffic, or a Period.
//
// Block timestamps are whole seconds and must increase, so a burst of blocks runs the
// chain's clock ahead of the wall clock by a second per block. With MaxLead set (the kintfs
// commands set it), sealing waits for the wall clock whenever the next block would run more
// than MaxLead ahead of it, so that block times follow the wall clock and @<time> means what
// the clock says; without it the lead grows under load and shrinks when the chain is idle.
// Deadlines meant for the contract are safest taken from the latest block's timestamp.
package devchain

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/catalyst"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/eth/filters"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/event"
	"github.com/ethereum/go-ethereum/log"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/p2p"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"

	"kintfs/chain/atomicfile"
	"kintfs/chain/devchain/devinfo"
	"kintfs/contracts"
)

// Config configures a dev chain.
type Config struct {
	DataDir  string // required; created 0700
	HTTPAddr string // loopback host:port; "" or port 0 picks a free port
	Period   uint64 // seconds between blocks; 0 = a block per burst of transactions
	Accounts int    // funded dev accounts on first start; default 4 (a restart keeps the recorded number)
	// Confirmations (Period 0 only) is how many confirmations a transaction has as soon
	// as it is mined: its block plus Confirmations-1 empty ones. Default 3; 1 for none.
	Confirmations int
	// ChainID is the chain id the chain runs under; default ChainID (1337). 8453, Base's
	// id, lets tools that bind Base's id into the epoch AAD read a dev vault: the chain is
	// still not Base. It is fixed when the chain is created.
	ChainID uint64
	// MaxLead bounds how far a block's time may run ahead of the wall clock: sealing a block
	// that would be further ahead waits (a second at most per block) for the clock. Zero
	// leaves the lead unbounded, as the tests that seal many blocks in a row want.
	MaxLead time.Duration
}

// What a client needs to know, kept in devinfo so that it can know it without linking the node.
const (
	ChainID        = devinfo.ChainID
	DefaultMaxLead = devinfo.DefaultMaxLead
	InfoFile       = devinfo.InfoFile
)

type (
	Account = devinfo.Account
	Info    = devinfo.Info
)

const (
	defaultAccounts      = 4
	defaultConfirmations = 3
	// devGasLimit is fixed (not taken from go-ethereum's defaults) so the genesis, and so
	// the chain, stays the same across go-ethereum upgrades.
	devGasLimit = 60_000_000
	// maxDrain bounds the blocks one call of sealPending seals before the requests waiting
	// on the sealing goroutine (Commit, a send's pool sync) have their turn.
	maxDrain = 16
	// deployTimeout bounds the wait for the contract deployment on first start.
	deployTimeout = 60 * time.Second
)

// ErrClosed is returned by Commit after Close.
var ErrClosed = errors.New("dev chain is closed")

// DevChain is a running dev chain.
type DevChain struct {
	cfg    Config
	stack  *node.Node
	eth    *eth.Ethereum
	beacon *catalyst.SimulatedBeacon
	keys   []*ecdsa.PrivateKey
	info   Info

	quit      chan struct{}
	wake      chan struct{}
	commitReq chan chan struct{}
	syncReq   chan chan struct{}
	// owed is how many empty blocks the last block with transactions still waits for, to
	// reach Confirmations; only seal touches it.
	owed      int
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// AccountKey returns the private key of dev account i: keccak256("kintfs-dev-account-<i>").
func AccountKey(i int) *ecdsa.PrivateKey {
	k, err := crypto.ToECDSA(crypto.Keccak256([]byte("kintfs-dev-account-" + strconv.Itoa(i))))
	if err != nil {
		panic(fmt.Sprintf("dev account %d: %v", i, err)) // a keccak output outside the curve order: never
	}
	return k
}

// Genesis returns the dev chain's genesis block with n funded accounts.
func Genesis(n int) *core.Genesis { return genesis(n, ChainID) }

func genesis(n int, chainID uint64) *core.Genesis {
	g := core.DeveloperGenesisBlock(devGasLimit, nil)
	g.Config = ChainConfig()
	g.Config.ChainID = new(big.Int).SetUint64(chainID)
	balance := new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(params.Ether))
	for i := 0; i < n; i++ {
		g.Alloc[crypto.PubkeyToAddress(AccountKey(i).PublicKey)] = types.Account{Balance: balance}
	}
	return g
}

// Start starts the node, deploys EpochAnchor on first start (or finds it again), writes
// devchain.json and returns once the chain serves JSON-RPC.
func Start(cfg Config) (*DevChain, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("devchain: no data directory")
	}
	if cfg.Confirmations <= 0 {
		cfg.Confirmations = defaultConfirmations
	}
	if cfg.ChainID == 0 {
		cfg.ChainID = ChainID
	}
	host, port, err := loopbackAddr(cfg.HTTPAddr)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("devchain: %w", err)
	}
	prev, err := readInfo(filepath.Join(cfg.DataDir, InfoFile))
	if err != nil {
		return nil, err
	}
	n := cfg.Accounts
	if prev != nil && len(prev.Accounts) > 0 {
		n = len(prev.Accounts) // the genesis funded these; it must not change
	}
	if n <= 0 {
		n = defaultAccounts
	}
	cfg.Accounts = n

	nodeConf := nodeConfig(cfg.DataDir, host, port)
	stack, err := node.New(&nodeConf)
	if err != nil {
		return nil, fmt.Errorf("devchain: %w", err)
	}
	ethConf := ethConfig(n, cfg.ChainID)
	backend, err := eth.New(stack, &ethConf)
	if err != nil {
		stack.Close()
		return nil, fmt.Errorf("devchain: %w", err)
	}
	d := &DevChain{
		cfg:       cfg,
		stack:     stack,
		eth:       backend,
		quit:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
		commitReq: make(chan chan struct{}),
		syncReq:   make(chan chan struct{}),
	}
	for i := 0; i < n; i++ {
		d.keys = append(d.keys, AccountKey(i))
	}
	fs := filters.NewFilterSystem(backend.APIBackend, filters.Config{})
	stack.RegisterAPIs([]rpc.API{
		{Namespace: "eth", Service: filters.NewFilterAPI(fs)},
		// Registered after go-ethereum's own eth API, so its method replaces theirs.
		{Namespace: "eth", Service: &sendAPI{d: d}},
	})
	if err := stack.Start(); err != nil {
		stack.Close()
		return nil, fmt.Errorf("devchain: %w", err)
	}
	d.beacon, err = catalyst.NewSimulatedBeacon(cfg.Period, common.Address{}, backend)
	if err != nil {
		stack.Close()
		return nil, fmt.Errorf("devchain: %w", err)
	}
	d.wg.Add(1)
	go d.seal()
	if cfg.Period == 0 {
		// subscribed here, before the contract below is sent: a subscription made on the
		// goroutine could come after that transaction, and nothing would ever seal it
		ch := make(chan core.NewTxsEvent, 64)
		sub := d.eth.TxPool().SubscribeTransactions(ch, true)
		d.wg.Add(1)
		go d.watchTxs(ch, sub)
	}

	contract, err := d.ensureContract(prev)
	if err != nil {
		d.Close()
		return nil, err
	}
	d.info = Info{RPC: stack.HTTPEndpoint(), WS: stack.WSEndpoint(), ChainID: d.cfg.ChainID, Contract: contract.Hex()}
	for _, k := range d.keys {
		d.info.Accounts = append(d.info.Accounts, Account{
			Address:    crypto.PubkeyToAddress(k.PublicKey).Hex(),
			PrivateKey: hexutil.Encode(crypto.FromECDSA(k)),
		})
	}
	if err := writeInfo(filepath.Join(cfg.DataDir, InfoFile), &d.info); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// nodeConfig: no peers, no IPC, JSON-RPC (eth, net, web3) over HTTP and websocket on one
// loopback address.
func nodeConfig(dataDir, host string, port int) node.Config {
	c := node.DefaultConfig
	c.Name = "kintfs-devchain"
	c.DataDir = dataDir
	c.IPCPath = ""
	c.HTTPHost = host
	c.HTTPPort = port
	c.HTTPModules = []string{"eth", "net", "web3"}
	c.HTTPVirtualHosts = []string{"localhost"}
	// websocket on the same listener as HTTP (one port), for subscriptions
	c.WSHost = host
	c.WSPort = port
	c.WSModules = []string{"eth", "net", "web3"}
	c.AuthPort = 0
	c.P2P = p2p.Config{MaxPeers: 0, NoDiscovery: true, NoDial: true, ListenAddr: ""}
	c.UseLightweightKDF = true
	return c
}

// ethConfig: the dev genesis with n funded accounts, full sync, small caches.
func ethConfig(n int, chainID uint64) ethconfig.Config {
	c := ethconfig.Defaults
	c.NetworkId = chainID
	c.Genesis = genesis(n, chainID)
	c.SyncMode = ethconfig.FullSync
	c.Miner.GasCeil = devGasLimit
	// Archive on the hash scheme: every block's state is written as it is sealed, so a
	// dev chain that is killed rather than closed restarts where it was.
	c.StateScheme = rawdb.HashScheme
	c.NoPruning = true
	c.TransactionHistory = 0 // index every transaction: the calldata is the store
	c.LogNoHistory = true    // only exact-block log queries: no index needed
	c.DatabaseCache = 64
	c.TrieCleanCache = 32
	c.TrieDirtyCache = 32
	c.SnapshotCache = 16
	return c
}

// loopbackAddr parses host:port and refuses anything but a loopback host.
func loopbackAddr(addr string) (string, int, error) {
	if addr == "" {
		return "127.0.0.1", 0, nil
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("devchain: HTTP address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("devchain: HTTP address %q: bad port", addr)
	}
	if host == "localhost" {
		return "127.0.0.1", port, nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", 0, fmt.Errorf("devchain: HTTP address %q is not loopback: the dev chain serves on 127.0.0.1 or ::1 only", addr)
	}
	return host, port, nil
}

// ensureContract returns the EpochAnchor recorded in devchain.json when the chain has its
// code, and deploys it from account 0 otherwise.
func (d *DevChain) ensureContract(prev *Info) (common.Address, error) {
	ctx, cancel := context.WithTimeout(context.Background(), deployTimeout+time.Duration(d.cfg.Period)*time.Second)
	defer cancel()
	client := ethclient.NewClient(d.stack.Attach())
	defer client.Close()

	if prev != nil && common.IsHexAddress(prev.Contract) {
		addr := common.HexToAddress(prev.Contract)
		code, err := client.CodeAt(ctx, addr, nil)
		if err != nil {
			return common.Address{}, fmt.Errorf("devchain: check contract %s: %w", addr, err)
		}
		if len(code) > 0 {
			return addr, nil
		}
	}
	opts := bind.NewKeyedTransactor(d.keys[0], new(big.Int).SetUint64(d.cfg.ChainID))
	opts.Context = ctx
	addr, tx, err := contracts.DeployEpochAnchor(opts, client)
	if err != nil {
		return common.Address{}, fmt.Errorf("devchain: deploy EpochAnchor: %w", err)
	}
	if d.cfg.Period > 0 {
		// Do not wait for the next period.
		if err := d.Commit(); err != nil {
			return common.Address{}, err
		}
	}
	for {
		r, err := client.TransactionReceipt(ctx, tx.Hash())
		if err == nil {
			if r.Status != types.ReceiptStatusSuccessful {
				return common.Address{}, fmt.Errorf("devchain: deploy EpochAnchor: transaction %s failed", tx.Hash())
			}
			return addr, nil
		}
		select {
		case <-ctx.Done():
			return common.Address{}, fmt.Errorf("devchain: deploy EpochAnchor: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Info describes the running chain (as written to devchain.json).
func (d *DevChain) Info() Info {
	info := d.info
	info.Accounts = append([]Account(nil), d.info.Accounts...)
	return info
}

// Keys returns the private keys of the dev accounts, account 0 first.
func (d *DevChain) Keys() []*ecdsa.PrivateKey { return append([]*ecdsa.PrivateKey(nil), d.keys...) }

// Contract is the EpochAnchor address.
func (d *DevChain) Contract() common.Address { return common.HexToAddress(d.info.Contract) }

// Commit seals one block now (empty unless transactions are pending) and returns once it
// is the head.
func (d *DevChain) Commit() error {
	done := make(chan struct{})
	select {
	case d.commitReq <- done:
	case <-d.quit:
		return ErrClosed
	}
	select {
	case <-done:
		return nil
	case <-d.quit:
		return ErrClosed
	}
}

// Close stops block production and the node. The chain stays in DataDir.
func (d *DevChain) Close() error {
	d.closeOnce.Do(func() {
		close(d.quit)
		d.wg.Wait()
		d.beacon.Stop()
		d.closeErr = d.stack.Close()
	})
	return d.closeErr
}

// seal is the only goroutine that seals blocks or syncs the transaction pool: go-ethereum's
// TxPool.Sync must never run twice at once (a second caller replaces the first one's
// waiter, which then waits forever).
func (d *DevChain) seal() {
	defer d.wg.Done()
	var tick <-chan time.Time
	if d.cfg.Period > 0 {
		t := time.NewTicker(time.Duration(d.cfg.Period) * time.Second)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-d.quit:
			return
		case <-d.wake:
			d.sealPending()
		case <-tick:
			d.commit()
		case done := <-d.commitReq:
			d.commit()
			close(done)
		case done := <-d.syncReq:
			d.eth.TxPool().Sync()
			close(done)
		}
	}
}

// commit seals one block, writes it through to disk and lets the pool catch up with it.
func (d *DevChain) commit() {
	d.keepToWallClock()
	d.beacon.Commit()
	d.persist()
	d.eth.TxPool().Sync()
}

// keepToWallClock waits, with MaxLead set, until the next block's time (one second past the
// head's, or now) is at most MaxLead ahead of the wall clock; it waits a second at most, so a
// chain left far ahead by an earlier run seals at the wall clock's pace, neither stalling nor
// running further ahead.
func (d *DevChain) keepToWallClock() {
	if d.cfg.MaxLead <= 0 {
		return
	}
	next := time.Unix(int64(d.eth.BlockChain().CurrentHeader().Time)+1, 0)
	wait := min(time.Until(next.Add(-d.cfg.MaxLead)), time.Second)
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return
		case <-d.quit:
			return
		case done := <-d.syncReq:
			// a transaction sent meanwhile goes in now, and into the block after this wait:
			// held until the whole burst was sealed, each send took a burst of its own
			d.eth.TxPool().Sync()
			close(done)
		}
	}
}

// persist flushes the database to disk. go-ethereum writes asynchronously and leaves the
// flushing to a byte threshold a dev chain rarely reaches, so without this a killed dev
// chain would come back without its last blocks. Once a block is followed by another, it
// is on disk.
func (d *DevChain) persist() {
	if err := d.eth.ChainDb().SyncKeyValue(); err != nil {
		log.Warn("Dev chain failed to flush its database", "err", err)
	}
}

// sealPending seals blocks until no executable transaction is left, then the empty blocks
// that give them their confirmations. A transaction sent while those are sealed (a push
// sends its epochs back to back) goes into the next one, which owes its confirmations again.
// A burst longer than maxDrain blocks goes on after the requests waiting on seal.
func (d *DevChain) sealPending() {
	pool := d.eth.TxPool()
	if err := pool.Sync(); err != nil { // promote what just arrived
		return
	}
	executable := func() bool { n, _ := pool.Stats(); return n > 0 }
	for sealed := 0; executable() || d.owed > 0; sealed++ {
		if sealed == maxDrain {
			d.rewake() // the rest of the burst, after the requests waiting on this goroutine
			return
		}
		select {
		case <-d.quit:
			return
		default:
		}
		d.commit()
		if d.eth.BlockChain().CurrentBlock().TxHash != types.EmptyTxsHash {
			d.owed = d.cfg.Confirmations - 1 // the empty blocks that confirm it
		} else if d.owed > 0 {
			d.owed--
		}
	}
}

// rewake has seal call sealPending again.
func (d *DevChain) rewake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// watchStarting, when set (by tests), runs as watchTxs starts: a goroutine the scheduler is
// slow to run.
var watchStarting func()

// watchTxs turns the pool's new-transaction events (ch, from sub) into a wake-up of seal. It
// never blocks the pool.
func (d *DevChain) watchTxs(ch <-chan core.NewTxsEvent, sub event.Subscription) {
	defer d.wg.Done()
	defer sub.Unsubscribe()
	if watchStarting != nil {
		watchStarting()
	}
	for {
		select {
		case <-d.quit:
			return
		case <-sub.Err():
			return
		case <-ch:
			select {
			case d.wake <- struct{}{}:
			default:
			}
		}
	}
}

func readInfo(path string) (*Info, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("devchain: %w", err)
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("devchain: %s: %w", path, err)
	}
	return &info, nil
}

// writeInfo replaces path atomically with a 0600 file.
func writeInfo(path string, info *Info) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return fmt.Errorf("devchain: %w", err)
	}
	if err := atomicfile.Write(path, append(b, '\n')); err != nil {
		return fmt.Errorf("devchain: write %s: %w", path, err)
	}
	return nil
}

// sendAPI replaces eth_sendRawTransaction on the dev chain. Blocks come quickly one after
// the other here, and go-ethereum's pool validates a transaction against the state of the
// last head it has caught up with, which may lag the head a receipt was just read from:
// an account funded one block ago could be refused for "insufficient funds". Letting the
// pool catch up first makes "wait for the receipt, then spend" reliable.
type sendAPI struct{ d *DevChain }

// SendRawTransaction adds a signed transaction to the pool once it has caught up with
// the chain head.
func (a *sendAPI) SendRawTransaction(ctx context.Context, input hexutil.Bytes) (common.Hash, error) {
	tx := new(types.Transaction)
	if err := tx.UnmarshalBinary(input); err != nil {
		return common.Hash{}, err
	}
	if err := a.d.syncPool(ctx); err != nil {
		return common.Hash{}, err
	}
	if err := a.d.eth.APIBackend.SendTx(ctx, tx); err != nil {
		return common.Hash{}, err
	}
	return tx.Hash(), nil
}

// syncPool has the sealing goroutine sync the pool and waits for it.
func (d *DevChain) syncPool(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case d.syncReq <- done:
	case <-d.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-d.quit:
		return ErrClosed
	}
}

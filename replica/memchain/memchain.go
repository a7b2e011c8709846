// Package memchain is an EpochAnchor kept in memory, with the node around it: heads, Epoch
// events and signed push transactions as the contract and a node keep them, blocks mined on
// demand, and the faults a test switches on per connection (latency, an unreachable RPC, a
// refused send, a lost receipt, a stale head, withheld, extra or altered events and
// calldata) or on the whole chain (a reorg of the newest block, a sender without funds).
//
// A Conn serves the sync engine's Chain interface (replica.Chain), so the engine is tested
// without a chain process. memchain imports chain for its types and its checks of what an
// RPC serves, so a lie here is caught by the same code that catches it on a real RPC; it
// imports nothing of the engine.
package memchain

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
)

// ChainID is the chain id a Chain reports, the dev chain's.
const ChainID = 1337

type vaultKey struct {
	owner common.Address
	space common.Hash
}

type writerKey struct{ owner, writer common.Address }

// block is one mined block and the contract's state after it.
type block struct {
	number uint64
	time   uint64
	txs    []common.Hash
	events []*chain.EpochEvent
	heads  map[vaultKey]chain.Head
	nonces map[common.Address]uint64
}

// txRec is a transaction the node knows: pending (block 0) or mined, succeeded or reverted.
type txRec struct {
	tx     *types.Transaction
	from   common.Address
	block  uint64
	failed error
	event  *chain.EpochEvent
}

// Chain is the shared chain; Conn is one machine's connection to it.
type Chain struct {
	mu       sync.Mutex
	contract common.Address
	signer   types.Signer
	blocks   []*block // blocks[0] is genesis
	pool     []common.Hash
	txs      map[common.Hash]*txRec
	writers  map[writerKey]uint64        // session key expiry, unix seconds
	balances map[common.Address]*big.Int // set by SetBalance; any other sender pays from unlimited funds
	autoMine bool
	mined    chan struct{} // closed when a block is mined or dropped
}

// New is an empty chain at block 0 that mines a block for each transaction sent.
func New() *Chain {
	genesis := &block{time: uint64(time.Now().Unix()), heads: map[vaultKey]chain.Head{}, nonces: map[common.Address]uint64{}}
	return &Chain{
		contract: common.HexToAddress("0x00000000000000000000000000000000000a4c40"),
		signer:   types.LatestSignerForChainID(big.NewInt(ChainID)),
		blocks:   []*block{genesis},
		txs:      map[common.Hash]*txRec{},
		writers:  map[writerKey]uint64{},
		balances: map[common.Address]*big.Int{},
		autoMine: true,
		mined:    make(chan struct{}),
	}
}

// Contract is the address the pushes go to.
func (c *Chain) Contract() common.Address { return c.contract }

// SetAutoMine turns mining on each send on or off; off, blocks come only from Mine.
func (c *Chain) SetAutoMine(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.autoMine = on
}

// Authorize lets key push for owner until expiry, as setSessionKey would.
func (c *Chain) Authorize(owner, key common.Address, expiry time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writers[writerKey{owner, key}] = uint64(expiry.Unix())
}

// SetBalance gives addr wei to pay for its transactions with: the node then refuses a
// transaction that may cost more than addr holds, and each mined one is paid from it. An
// address never given a balance pays for anything.
func (c *Chain) SetBalance(addr common.Address, wei *big.Int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.balances[addr] = new(big.Int).Set(wei)
}

// BlockNumber is the newest block.
func (c *Chain) BlockNumber() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tip().number
}

// Pending counts the transactions sent and not mined.
func (c *Chain) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pool)
}

// Mine mines one block with every pending transaction that can go in.
func (c *Chain) Mine() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mineLocked()
}

// Reorg replaces the newest depth blocks with empty ones, as a reorg to a chain without
// their transactions would. With requeue the node re-includes those transactions in the
// next block (mined at once when the chain auto-mines); without, they are lost.
func (c *Chain) Reorg(depth int, requeue bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	depth = min(depth, len(c.blocks)-1)
	dropped := c.blocks[len(c.blocks)-depth:]
	c.blocks = c.blocks[:len(c.blocks)-depth]
	for _, b := range dropped {
		for _, h := range b.txs {
			rec := c.txs[h]
			c.pay(rec.from, fee(rec.tx), +1) // the block that charged it is gone
			rec.block, rec.failed, rec.event = 0, nil, nil
			if requeue {
				c.pool = append(c.pool, h)
			} else {
				delete(c.txs, h)
			}
		}
		base := c.tip()
		c.blocks = append(c.blocks, &block{number: b.number, time: b.time, heads: maps.Clone(base.heads), nonces: maps.Clone(base.nonces)})
	}
	if requeue && c.autoMine && len(c.pool) > 0 {
		c.mineLocked()
	}
	c.wake()
}

func (c *Chain) tip() *block { return c.blocks[len(c.blocks)-1] }

func (c *Chain) wake() {
	close(c.mined)
	c.mined = make(chan struct{})
}

func (c *Chain) mineLocked() uint64 {
	prev := c.tip()
	b := &block{number: prev.number + 1, time: max(prev.time+1, uint64(time.Now().Unix())),
		heads: maps.Clone(prev.heads), nonces: maps.Clone(prev.nonces)}
	var left []common.Hash
	for progress := true; progress; {
		progress = false
		left = left[:0]
		for _, h := range c.pool {
			rec := c.txs[h]
			switch n := rec.tx.Nonce(); {
			case n < b.nonces[rec.from]:
				delete(c.txs, h) // replaced by another transaction of that nonce
			case n > b.nonces[rec.from]:
				left = append(left, h)
			default:
				b.nonces[rec.from]++
				c.execute(b, h, rec)
				progress = true
			}
		}
		c.pool = append([]common.Hash(nil), left...)
	}
	c.blocks = append(c.blocks, b)
	c.wake()
	return b.number
}

// execute runs a mined push against the state of b: the contract's checks in its order.
func (c *Chain) execute(b *block, h common.Hash, rec *txRec) {
	b.txs = append(b.txs, h)
	rec.block = b.number
	c.pay(rec.from, fee(rec.tx), -1)
	owner, space, prev, ct, err := chain.DecodePushCalldata(rec.tx.Data())
	if to := rec.tx.To(); to == nil || *to != c.contract || err != nil {
		rec.failed = fmt.Errorf("%w: reverted in block %d", chain.ErrTxFailed, b.number)
		return
	}
	if c.check(b, rec.from, owner, space, prev, ct) != nil {
		// a receipt has a status, not the revert's reason
		rec.failed = fmt.Errorf("%w: reverted in block %d", chain.ErrTxFailed, b.number)
		return
	}
	k := vaultKey{owner, space}
	head := b.heads[k]
	ev := &chain.EpochEvent{Owner: owner, Space: space, Writer: rec.from, Seq: head.Seq + 1, Prev: prev,
		Digest: crypto.Keccak256Hash(ct), PrevBlock: head.Block, Block: b.number, TxHash: h}
	b.heads[k] = chain.Head{Digest: ev.Digest, Seq: ev.Seq, Block: b.number}
	b.events = append(b.events, ev)
	rec.event = ev
}

// gasPrice is what each gas of a mined transaction costs.
var gasPrice = big.NewInt(1e9)

// fee is what tx costs once mined: the gas a push uses at gasPrice.
func fee(tx *types.Transaction) *big.Int {
	return new(big.Int).Mul(gasPrice, new(big.Int).SetUint64(pushGas(tx.Data())))
}

// pay adds sign*wei to the balance of addr, when it has one.
func (c *Chain) pay(addr common.Address, wei *big.Int, sign int) {
	if bal, ok := c.balances[addr]; ok {
		c.balances[addr] = new(big.Int).Add(bal, new(big.Int).Mul(wei, big.NewInt(int64(sign))))
	}
}

// check is push's require list: the writer may write for owner, ct is not empty, prev is the head.
func (c *Chain) check(b *block, from, owner common.Address, space, prev common.Hash, ct []byte) error {
	if from != owner && c.writers[writerKey{owner, from}] <= b.time {
		return &chain.RevertError{Name: "NotAuthorized"}
	}
	if len(ct) == 0 {
		return &chain.RevertError{Name: "EmptyCiphertext"}
	}
	if cur := b.heads[vaultKey{owner, space}].Digest; prev != cur {
		return &chain.RevertError{Name: "StaleHead", Args: []any{[32]byte(cur), [32]byte(prev)}, ArgNames: []string{"expected", "got"}}
	}
	return nil
}

// Faults are what one connection's RPC gets wrong. Counts are used up one per call.
type Faults struct {
	Latency       time.Duration   // added to every call
	Down          bool            // every call fails as unreachable
	RefuseSends   int             // the next sends fail as unreachable (nothing is sent)
	LoseReceipts  int             // the next waits fail as unreachable once their transaction is mined
	StaleBy       int             // Head answers as of this many blocks before the newest
	Withhold      map[uint64]bool // seqs whose Epoch event is never returned
	Extra         []*chain.EpochEvent
	WrongCalldata map[uint64]bool // seqs whose transaction is served with other calldata
	NoTx          map[uint64]bool // seqs whose transaction the node says it does not know
}

// Conn is one machine's RPC connection to the chain.
type Conn struct {
	c      *Chain
	mu     sync.Mutex
	faults Faults
	calls  map[string]uint64
	total  uint64
}

// Conn opens a connection with no faults.
func (c *Chain) Conn() *Conn { return &Conn{c: c, calls: map[string]uint64{}} }

// Fault changes the connection's faults.
func (n *Conn) Fault(fn func(f *Faults)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fn(&n.faults)
}

var errRefused = errors.New("memchain: connection refused")

// call counts one request (one round trip, as a batch of the given JSON-RPC methods is on
// an RPC) and applies latency and an outage; it returns the faults in force.
func (n *Conn) call(ctx context.Context, methods ...string) (Faults, error) {
	n.mu.Lock()
	n.total++
	for _, m := range methods {
		n.calls[m]++
	}
	f := n.faults
	n.mu.Unlock()
	if f.Latency > 0 {
		t := time.NewTimer(f.Latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return f, ctx.Err()
		case <-t.C:
		}
	}
	if f.Down {
		return f, &chain.UnreachableError{Err: errRefused}
	}
	return f, ctx.Err()
}

// use takes one from a fault counter; it reports whether one was left.
func (n *Conn) use(counter *int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if *counter == 0 {
		return false
	}
	*counter--
	return true
}

// ChainID is the chain's id.
func (n *Conn) ChainID() uint64 { return ChainID }

// Stats counts the requests made on this connection.
func (n *Conn) Stats() chain.Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return chain.Stats{Calls: n.total, Methods: maps.Clone(n.calls)}
}

// Head is head(owner, space) at the newest block (or StaleBy blocks before it).
func (n *Conn) Head(ctx context.Context, owner common.Address, space common.Hash) (chain.Head, error) {
	f, err := n.call(ctx, "eth_call")
	if err != nil {
		return chain.Head{}, err
	}
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	b := n.c.blocks[max(0, len(n.c.blocks)-1-f.StaleBy)]
	return b.heads[vaultKey{owner, space}], nil
}

// EpochAt is the exact-block log query: the Epoch event of seq in block. A block not mined
// yet is refused, as the node refuses a log range beyond its head.
func (n *Conn) EpochAt(ctx context.Context, owner common.Address, space common.Hash, blockNum, seq uint64) (*chain.EpochEvent, error) {
	f, err := n.call(ctx, "eth_getLogs")
	if err != nil {
		return nil, err
	}
	var evs []*chain.EpochEvent
	n.c.mu.Lock()
	if blockNum >= uint64(len(n.c.blocks)) {
		n.c.mu.Unlock()
		return nil, fmt.Errorf("read Epoch logs at block %d: block range extends beyond current head block", blockNum)
	}
	for _, ev := range n.c.blocks[blockNum].events {
		if ev.Owner == owner && ev.Space == space && !f.Withhold[ev.Seq] {
			e := *ev
			evs = append(evs, &e)
		}
	}
	n.c.mu.Unlock()
	for _, ev := range f.Extra {
		if ev.Block == blockNum && ev.Owner == owner && ev.Space == space {
			e := *ev
			evs = append(evs, &e)
		}
	}
	return chain.PickSeq(evs, blockNum, seq)
}

// finder walks by exact-block queries, as Discovery does on an RPC without ranged logs.
type finder struct {
	n     *Conn
	owner common.Address
	space common.Hash
	mu    sync.Mutex
	stats chain.DiscoveryStats
}

// NewDiscovery finds events one exact block at a time.
func (n *Conn) NewDiscovery(_ context.Context, owner common.Address, space common.Hash, _ uint64) chain.EventFinder {
	return &finder{n: n, owner: owner, space: space}
}

func (d *finder) Next(ctx context.Context, block, seq uint64, _ common.Hash) (*chain.EpochEvent, error) {
	d.mu.Lock()
	d.stats.Exact++
	d.mu.Unlock()
	return d.n.EpochAt(ctx, d.owner, d.space, block, seq)
}

func (d *finder) Stats() chain.DiscoveryStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

func (d *finder) Close() {}

// FetchBlobs serves each event's push transaction and checks it as the RPC client does.
func (n *Conn) FetchBlobs(ctx context.Context, evs []*chain.EpochEvent) ([][]byte, error) {
	f, err := n.call(ctx, slices.Repeat([]string{"eth_getTransactionByHash"}, len(evs))...)
	if err != nil {
		return nil, fmt.Errorf("fetch push transactions: %w", err)
	}
	out := make([][]byte, len(evs))
	for i, ev := range evs {
		n.c.mu.Lock()
		rec := n.c.txs[ev.TxHash]
		n.c.mu.Unlock()
		if rec == nil || f.NoTx[ev.Seq] {
			return nil, fmt.Errorf("epoch %d (tx %s): %w", ev.Seq, ev.TxHash, chain.ErrTxNotFound)
		}
		tx := rec.tx
		if f.WrongCalldata[ev.Seq] {
			tx = altered(tx)
		}
		if out[i], err = chain.PushCiphertext(n.c.contract, ev, tx); err != nil {
			return nil, fmt.Errorf("epoch %d (tx %s): %w", ev.Seq, ev.TxHash, err)
		}
	}
	return out, nil
}

// altered is tx with one byte of its calldata flipped, as a lying node would serve it.
func altered(tx *types.Transaction) *types.Transaction {
	data := append([]byte(nil), tx.Data()...)
	data[len(data)-1] ^= 1
	return types.NewTx(&types.DynamicFeeTx{ChainID: tx.ChainId(), Nonce: tx.Nonce(), GasTipCap: tx.GasTipCap(),
		GasFeeCap: tx.GasFeeCap(), Gas: tx.Gas(), To: tx.To(), Value: tx.Value(), Data: data})
}

// BlockTimes are the timestamps of blocks, unix seconds; a block not mined yet is an error,
// as the node's null header is to the RPC client.
func (n *Conn) BlockTimes(ctx context.Context, blocks []uint64) (map[uint64]uint64, error) {
	if _, err := n.call(ctx, slices.Repeat([]string{"eth_getBlockByNumber"}, len(blocks))...); err != nil {
		return nil, fmt.Errorf("read block times: %w", err)
	}
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	out := map[uint64]uint64{}
	for _, b := range blocks {
		if b >= uint64(len(n.c.blocks)) {
			return nil, fmt.Errorf("block %d: the node has no such block", b)
		}
		out[b] = n.c.blocks[b].time
	}
	return out, nil
}

// PreparePush estimates (refusing a push that would revert, as eth_estimateGas does) and
// signs push(owner, space, prev, ct) with the pending nonce of key.
func (n *Conn) PreparePush(ctx context.Context, key *ecdsa.PrivateKey, owner common.Address, space, prev common.Hash, ct []byte) (*chain.PreparedPush, error) {
	if _, err := n.call(ctx, "eth_estimateGas", "eth_getBlockByNumber", "eth_maxPriorityFeePerGas", "eth_getTransactionCount"); err != nil {
		return nil, fmt.Errorf("prepare push: estimate gas, read fees and nonce: %w", err)
	}
	from := crypto.PubkeyToAddress(key.PublicKey)
	n.c.mu.Lock()
	b := n.c.tip()
	err := n.c.check(b, from, owner, space, prev, ct)
	nonce := b.nonces[from]
	for _, h := range n.c.pool {
		if rec := n.c.txs[h]; rec.from == from && rec.tx.Nonce() >= nonce {
			nonce = rec.tx.Nonce() + 1
		}
	}
	n.c.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", chain.ErrWouldRevert, err)
	}
	data := chain.EncodePushCalldata(owner, space, prev, ct)
	tx, err := n.signPush(key, nonce, big.NewInt(1e9), big.NewInt(3e9), withMargin(pushGas(data)), data)
	if err != nil {
		return nil, err
	}
	return &chain.PreparedPush{Tx: tx, Hash: tx.Hash(), Digest: crypto.Keccak256Hash(ct), Nonce: nonce, GasPrice: chain.QuotedPrice(tx)}, nil
}

// PrepareNextPush signs push(owner, space, prev, ct) with the nonce after after's, its fees
// and at least its gas, without asking the node, as the RPC client does to keep several
// epochs in flight; what the node makes of it is decided when it is sent and mined.
func (n *Conn) PrepareNextPush(key *ecdsa.PrivateKey, after *chain.PreparedPush, owner common.Address, space, prev common.Hash, ct []byte) (*chain.PreparedPush, error) {
	data := chain.EncodePushCalldata(owner, space, prev, ct)
	tx, err := n.signPush(key, after.Nonce+1, after.Tx.GasTipCap(), after.Tx.GasFeeCap(), max(after.Tx.Gas(), withMargin(pushGas(data))), data)
	if err != nil {
		return nil, err
	}
	return &chain.PreparedPush{Tx: tx, Hash: tx.Hash(), Digest: crypto.Keccak256Hash(ct), Nonce: tx.Nonce(), GasPrice: after.GasPrice}, nil
}

// signPush signs a call of the contract with calldata data.
func (n *Conn) signPush(key *ecdsa.PrivateKey, nonce uint64, tip, feeCap *big.Int, gas uint64, data []byte) (*types.Transaction, error) {
	to := n.c.contract
	tx, err := types.SignNewTx(key, n.c.signer, &types.DynamicFeeTx{ChainID: big.NewInt(ChainID), Nonce: nonce,
		GasTipCap: tip, GasFeeCap: feeCap, Gas: gas, To: &to, Data: data})
	if err != nil {
		return nil, fmt.Errorf("prepare push: sign: %w", err)
	}
	return tx, nil
}

// gasMargin is what the RPC client adds to a gas estimate, in percent.
const gasMargin = 10

// withMargin is gas with gasMargin added.
func withMargin(gas uint64) uint64 { return gas + gas*gasMargin/100 }

// pushExecGas is about what push itself costs on the dev chain: the head record and the event.
const pushExecGas = 49_000

// pushGas is the gas a push with calldata data uses, and so what eth_estimateGas answers:
// the transaction's base cost plus its calldata's and push's own, or EIP-7623's calldata
// floor when that is more (as it is for a ciphertext of a few kilobytes).
func pushGas(data []byte) uint64 {
	std := uint64(21_000 + pushExecGas)
	for _, b := range data {
		if b == 0 {
			std += 4
		} else {
			std += 16
		}
	}
	return max(std, chain.CalldataFloor(data))
}

// Send puts the signed push in the pool (a transaction the node knows already is accepted
// again, as "already known" is) and mines it at once when the chain auto-mines.
func (n *Conn) Send(ctx context.Context, p *chain.PreparedPush) error {
	f, err := n.call(ctx, "eth_sendRawTransaction")
	if err == nil && f.RefuseSends > 0 && n.use(&n.faults.RefuseSends) {
		err = &chain.UnreachableError{Err: errRefused}
	}
	if err != nil {
		return fmt.Errorf("send push %s: %w", p.Hash, err)
	}
	from, err := types.Sender(n.c.signer, p.Tx)
	if err != nil {
		return fmt.Errorf("send push %s: %w", p.Hash, err)
	}
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if _, known := n.c.txs[p.Hash]; known {
		return nil
	}
	if p.Tx.Nonce() < n.c.tip().nonces[from] {
		return fmt.Errorf("send push %s: nonce too low", p.Hash)
	}
	if bal, ok := n.c.balances[from]; ok && bal.Cmp(p.Tx.Cost()) < 0 {
		return fmt.Errorf("send push %s: %w", p.Hash, &chain.FundsError{Address: from, Have: new(big.Int).Set(bal), Want: p.Tx.Cost()})
	}
	n.c.txs[p.Hash] = &txRec{tx: p.Tx, from: from}
	n.c.pool = append(n.c.pool, p.Hash)
	if n.c.autoMine {
		n.c.mineLocked()
	}
	return nil
}

// WaitPush waits for the push to be mined with the given confirmations (mining empty
// blocks for them when the chain auto-mines) and returns its receipt and Epoch event.
func (n *Conn) WaitPush(ctx context.Context, p *chain.PreparedPush, owner common.Address, space common.Hash, confirmations uint64) (*chain.PushReceipt, error) {
	confirmations = max(confirmations, 1)
	for {
		f, err := n.call(ctx, "eth_getTransactionReceipt", "eth_blockNumber")
		if err != nil {
			return nil, fmt.Errorf("push %s: %w", p.Hash, err)
		}
		n.c.mu.Lock()
		rec, tip, wake := n.c.txs[p.Hash], n.c.tip().number, n.c.mined
		if rec != nil && rec.block > 0 && f.LoseReceipts > 0 {
			n.c.mu.Unlock()
			if n.use(&n.faults.LoseReceipts) {
				return nil, fmt.Errorf("push %s: %w", p.Hash, &chain.UnreachableError{Err: errors.New("memchain: receipt lost")})
			}
			continue
		}
		switch {
		case rec != nil && rec.block > 0 && rec.failed != nil:
			n.c.mu.Unlock()
			return nil, fmt.Errorf("push %s: %w", p.Hash, rec.failed)
		case rec != nil && rec.block > 0 && tip+1 >= rec.block+confirmations:
			ev := *rec.event
			n.c.mu.Unlock()
			if ev.Owner != owner || ev.Space != space || ev.Digest != p.Digest {
				return nil, fmt.Errorf("push %s: %w", p.Hash, chain.ErrEventMismatch)
			}
			return &chain.PushReceipt{TxHash: p.Hash, Block: ev.Block, Seq: ev.Seq, Digest: ev.Digest,
				GasUsed: pushGas(rec.tx.Data()), EffectiveGasPrice: new(big.Int).Set(gasPrice), Cost: fee(rec.tx), Event: &ev}, nil
		case rec != nil && rec.block > 0 && n.c.autoMine:
			n.c.mineLocked() // a confirmation
			n.c.mu.Unlock()
			continue
		}
		n.c.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("push %s: wait for the receipt: %w", p.Hash, ctx.Err())
		case <-wake:
		}
	}
}

// TxStatus says whether the node knows the transaction and the block it was mined in.
func (n *Conn) TxStatus(ctx context.Context, hash common.Hash) (found bool, block uint64, err error) {
	if _, err := n.call(ctx, "eth_getTransactionByHash"); err != nil {
		return false, 0, fmt.Errorf("transaction %s: %w", hash, err)
	}
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	rec := n.c.txs[hash]
	if rec == nil {
		return false, 0, nil
	}
	return true, rec.block, nil
}

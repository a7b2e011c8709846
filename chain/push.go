package chain

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"
)

// PreparedPush is a signed push transaction that has not been sent.
type PreparedPush struct {
	Tx     *types.Transaction
	Hash   common.Hash
	Digest common.Hash // keccak256(ct)
	Nonce  uint64
	// GasPrice is the price per gas the transaction was priced at (QuotedPrice): what it pays
	// unless the base fee rises before it lands. nil when the chain did not say.
	GasPrice *big.Int
}

// QuotedPrice is the price per gas a transaction priced by prepareTx pays at the base fee it
// was priced at: its fee cap is twice that base fee plus the tip, so the base fee plus the tip.
func QuotedPrice(tx *types.Transaction) *big.Int {
	if tx.GasFeeCap() == nil || tx.GasTipCap() == nil {
		return nil
	}
	base := new(big.Int).Rsh(new(big.Int).Sub(tx.GasFeeCap(), tx.GasTipCap()), 1)
	return base.Add(base, tx.GasTipCap())
}

// PushReceipt is what a landed push cost and produced.
type PushReceipt struct {
	TxHash            common.Hash
	Block             uint64
	Seq               uint64
	Digest            common.Hash
	GasUsed           uint64
	EffectiveGasPrice *big.Int
	L1Fee             *big.Int // the OP-stack receipt's l1Fee; nil when the receipt has none
	Cost              *big.Int // GasUsed * EffectiveGasPrice + L1Fee
	Event             *EpochEvent
}

// gasMargin is added to every gas estimate, in percent.
const gasMargin = 10

// PreparePush builds and signs push(owner, space, prev, ct) from key: the gas is estimated
// first, so a push that would revert fails here with ErrWouldRevert and a *RevertError
// ("transaction would revert: StaleHead(expected 0x.., got 0x..)"); then EIP-1559 fees
// from the latest base fee and the suggested tip, and the pending nonce of key.
func (c *Client) PreparePush(ctx context.Context, key *ecdsa.PrivateKey, owner common.Address, space, prev common.Hash, ct []byte) (*PreparedPush, error) {
	tx, err := c.prepareTx(ctx, key, c.contract, EncodePushCalldata(owner, space, prev, ct), nil)
	if errors.Is(err, ErrWouldRevert) {
		return nil, err // already says what and why: "transaction would revert: ..."
	}
	if err != nil {
		return nil, fmt.Errorf("prepare push: %w", err)
	}
	return &PreparedPush{Tx: tx, Hash: tx.Hash(), Digest: crypto.Keccak256Hash(ct), Nonce: tx.Nonce(), GasPrice: QuotedPrice(tx)}, nil
}

// prepareTx estimates, prices and signs a dynamic-fee transaction: the gas estimate, the
// latest block (its base fee), the suggested tip and the pending nonce in one round trip.
func (c *Client) prepareTx(ctx context.Context, key *ecdsa.PrivateKey, to common.Address, data []byte, value *big.Int) (*types.Transaction, error) {
	from := address(key)
	var (
		gasHex hexutil.Uint64
		header *types.Header
		tip    hexutil.Big
		nonce  hexutil.Uint64
	)
	elems := []rpc.BatchElem{
		{Method: "eth_estimateGas", Args: []any{toCallArg(from, to, data, value)}, Result: &gasHex},
		{Method: "eth_getBlockByNumber", Args: []any{"latest", false}, Result: &header},
		{Method: "eth_maxPriorityFeePerGas", Result: &tip},
		{Method: "eth_getTransactionCount", Args: []any{from, "pending"}, Result: &nonce},
	}
	if err := c.batch(ctx, elems); err != nil {
		return nil, fmt.Errorf("estimate gas, read fees and nonce: %w", err)
	}
	if err := elems[0].Error; err != nil {
		if rev := revertFromError(err); rev != nil {
			return nil, fmt.Errorf("%w: %w", ErrWouldRevert, rev)
		}
		return nil, fmt.Errorf("estimate gas: %w", err)
	}
	for _, el := range elems[1:] {
		if el.Error != nil {
			return nil, fmt.Errorf("%s: %w", el.Method, el.Error)
		}
	}
	gas := uint64(gasHex)
	gas += gas * gasMargin / 100
	if header == nil || header.BaseFee == nil {
		return nil, errors.New("latest block has no base fee: EIP-1559 is required")
	}
	tipCap := (*big.Int)(&tip)
	feeCap := new(big.Int).Add(new(big.Int).Mul(header.BaseFee, big.NewInt(2)), tipCap)

	tx := types.NewTx(&types.DynamicFeeTx{
		ChainID:   new(big.Int).SetUint64(c.chainID),
		Nonce:     uint64(nonce),
		GasTipCap: tipCap,
		GasFeeCap: feeCap,
		Gas:       gas,
		To:        &to,
		Value:     value,
		Data:      data,
	})
	signed, err := types.SignTx(tx, c.signer, key)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return signed, nil
}

// toCallArg is the transaction object of eth_estimateGas, as ethclient writes it.
func toCallArg(from, to common.Address, data []byte, value *big.Int) map[string]any {
	arg := map[string]any{"from": from, "to": to}
	if len(data) > 0 {
		arg["input"] = hexutil.Bytes(data)
	}
	if value != nil {
		arg["value"] = (*hexutil.Big)(value)
	}
	return arg
}

// Send broadcasts the prepared push. It is idempotent: a node that already has the
// transaction ("already known"), or has mined it ("nonce too low" for this very hash),
// counts as sent.
func (c *Client) Send(ctx context.Context, p *PreparedPush) error {
	if err := c.sendTx(ctx, p.Tx); err != nil {
		return fmt.Errorf("send push %s: %w", p.Hash, err)
	}
	return nil
}

func (c *Client) sendTx(ctx context.Context, tx *types.Transaction) error {
	err := c.do(ctx, func(ctx context.Context) error {
		return c.eth.SendTransaction(ctx, tx)
	}, "eth_sendRawTransaction")
	if err == nil {
		return nil
	}
	msg := strings.ToLower(err.Error())
	if strings.Contains(msg, "already known") || strings.Contains(msg, "known transaction") {
		return nil
	}
	if strings.Contains(msg, "nonce too low") {
		if found, _, serr := c.TxStatus(ctx, tx.Hash()); serr == nil && found {
			return nil
		}
	}
	if strings.Contains(msg, "insufficient funds") {
		return c.fundsError(ctx, tx, err)
	}
	return err
}

// fundsError is the node's refusal of a transaction its sender cannot pay for, told as a
// *FundsError: the address, its balance and the most the transaction may cost.
func (c *Client) fundsError(ctx context.Context, tx *types.Transaction, cause error) error {
	from, err := types.Sender(c.signer, tx)
	if err != nil {
		return cause
	}
	have, err := c.Balance(ctx, from)
	if err != nil {
		have = new(big.Int)
	}
	return &FundsError{Address: from, Have: have, Want: tx.Cost()}
}

// receipt fetches a receipt with the raw JSON kept for chain-specific fields, and the
// latest block number in the same round trip; a nil receipt when the node has none (yet).
func (c *Client) receipt(ctx context.Context, hash common.Hash) (*types.Receipt, *big.Int, uint64, error) {
	var (
		raw  json.RawMessage
		head hexutil.Uint64
	)
	elems := []rpc.BatchElem{
		{Method: "eth_getTransactionReceipt", Args: []any{hash}, Result: &raw},
		{Method: "eth_blockNumber", Result: &head},
	}
	if err := c.batch(ctx, elems); err != nil {
		return nil, nil, 0, fmt.Errorf("receipt of %s: %w", hash, err)
	}
	for _, el := range elems {
		if el.Error != nil {
			return nil, nil, 0, fmt.Errorf("receipt of %s: %s: %w", hash, el.Method, el.Error)
		}
	}
	if isNull(raw) {
		return nil, nil, uint64(head), nil
	}
	r := new(types.Receipt)
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, nil, 0, fmt.Errorf("receipt of %s: %w", hash, err)
	}
	var extra struct {
		L1Fee *hexutil.Big `json:"l1Fee"`
	}
	if err := json.Unmarshal(raw, &extra); err != nil {
		return nil, nil, 0, fmt.Errorf("receipt of %s: %w", hash, err)
	}
	return r, (*big.Int)(extra.L1Fee), uint64(head), nil
}

// firstReceiptPoll is the first wait between receipt polls.
const firstReceiptPoll = 20 * time.Millisecond

// waitReceipt polls for the receipt of hash until it has the given number of
// confirmations (its own block counts as one) and is still in the canonical chain.
func (c *Client) waitReceipt(ctx context.Context, hash common.Hash, confirmations uint64) (*types.Receipt, *big.Int, error) {
	if confirmations == 0 {
		confirmations = 1
	}
	// Polled fast at first, then backing off to PollInterval: a dev chain mines at once, and
	// on a live chain the few early polls cost little next to a block time. With a known
	// block time, one early poll (a chain that mines on demand answers it) and then a few
	// per block: a transaction just sent cannot be in a block yet.
	wait := min(firstReceiptPoll, c.opt.PollInterval)
	bt := c.opt.BlockTime
	if bt > 0 {
		if err := sleepCtx(ctx, firstReceiptPoll); err != nil {
			return nil, nil, fmt.Errorf("wait for the receipt: %w", err)
		}
		wait = max(bt/4, firstReceiptPoll)
	}
	for {
		r, l1Fee, head, err := c.receipt(ctx, hash)
		if err != nil {
			return nil, nil, err
		}
		if r != nil {
			if r.Status != types.ReceiptStatusSuccessful {
				return r, l1Fee, fmt.Errorf("%w: reverted in block %d", ErrTxFailed, r.BlockNumber)
			}
			// The head (read with the receipt) is checked even for one confirmation: a node
			// can serve a receipt a moment before its "latest" block includes it, and the
			// caller's next call (an estimate, a balance) would read the state before it.
			landed := r.BlockNumber.Uint64()
			if head+1 >= landed+confirmations {
				if confirmations == 1 {
					return r, l1Fee, nil
				}
				// Confirmed, unless a reorg moved it meanwhile: look once more.
				again, l1Fee, _, err := c.receipt(ctx, hash)
				if err != nil {
					return nil, nil, err
				}
				if again != nil && again.BlockHash == r.BlockHash {
					return again, l1Fee, nil
				}
				continue
			}
		}
		next := wait
		if bt > 0 && r != nil {
			// mined, short of confirmations: the blocks still to come, less one polled for
			if short := landedShort(r, head, confirmations); short > 1 {
				next = time.Duration(short-1) * bt
			}
		}
		t := time.NewTimer(next)
		if bt <= 0 {
			wait = min(2*wait, c.opt.PollInterval)
		}
		select {
		case <-ctx.Done():
			t.Stop()
			if r == nil {
				return nil, nil, fmt.Errorf("wait for the receipt: %w", ctx.Err())
			}
			return nil, nil, fmt.Errorf("wait for %d confirmations (mined in block %d): %w", confirmations, r.BlockNumber, ctx.Err())
		case <-t.C:
		}
	}
}

// WaitPush waits until the push is mined with the given number of confirmations (1 = its
// own block), and takes its Epoch event from the receipt's logs: the one of this owner and
// space, in this transaction, carrying the digest that was sent.
func (c *Client) WaitPush(ctx context.Context, p *PreparedPush, owner common.Address, space common.Hash, confirmations uint64) (*PushReceipt, error) {
	r, l1Fee, err := c.waitReceipt(ctx, p.Hash, confirmations)
	if err != nil {
		return nil, fmt.Errorf("push %s: %w", p.Hash, err)
	}
	block := r.BlockNumber.Uint64()
	var ev *EpochEvent
	for _, l := range r.Logs {
		if l.Address != c.contract || len(l.Topics) == 0 || l.Topics[0] != epochTopic || l.Removed {
			continue
		}
		e, err := c.decodeEpochLog(l)
		if err == nil && e.Owner == owner && e.Space == space {
			ev = e
			break
		}
	}
	if ev == nil {
		return nil, fmt.Errorf("%w: push %s landed in block %d without an Epoch event for this owner and space", ErrEventMismatch, p.Hash, block)
	}
	seq := ev.Seq
	if ev.TxHash != p.Hash || ev.Digest != p.Digest || ev.Block != block {
		return nil, &namedError{ErrEventMismatch, fmt.Sprintf(
			"epoch %d landed but the Epoch event digest does not match what was sent (event %s in tx %s, sent %s in tx %s)",
			seq, ev.Digest.Hex(), ev.TxHash, p.Digest.Hex(), p.Hash)}
	}

	price := r.EffectiveGasPrice
	if price == nil {
		price = new(big.Int)
	}
	cost := new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), price)
	if l1Fee != nil {
		cost.Add(cost, l1Fee)
	}
	return &PushReceipt{
		TxHash:            p.Hash,
		Block:             block,
		Seq:               seq,
		Digest:            ev.Digest,
		GasUsed:           r.GasUsed,
		EffectiveGasPrice: price,
		L1Fee:             l1Fee,
		Cost:              cost,
		Event:             ev,
	}, nil
}

// SendRawBlob prepares, sends and waits for one push with a single confirmation.
func (c *Client) SendRawBlob(ctx context.Context, key *ecdsa.PrivateKey, owner common.Address, space, prev common.Hash, ct []byte) (*PushReceipt, error) {
	p, err := c.PreparePush(ctx, key, owner, space, prev, ct)
	if err != nil {
		return nil, err
	}
	if err := c.Send(ctx, p); err != nil {
		return nil, err
	}
	return c.WaitPush(ctx, p, owner, space, 1)
}

// transact prepares, sends and waits (one confirmation) for a transaction from key.
func (c *Client) transact(ctx context.Context, key *ecdsa.PrivateKey, to common.Address, data []byte, value *big.Int) (*types.Receipt, error) {
	tx, err := c.prepareTx(ctx, key, to, data, value)
	if err != nil {
		return nil, err
	}
	if err := c.sendTx(ctx, tx); err != nil {
		return nil, fmt.Errorf("send %s: %w", tx.Hash(), err)
	}
	r, _, err := c.waitReceipt(ctx, tx.Hash(), 1)
	if err != nil {
		return r, fmt.Errorf("transaction %s: %w", tx.Hash(), err)
	}
	return r, nil
}

// landedShort is how many blocks a mined receipt still lacks for its confirmations.
func landedShort(r *types.Receipt, head, confirmations uint64) uint64 {
	need := r.BlockNumber.Uint64() + confirmations
	if head+1 >= need {
		return 0
	}
	return need - head - 1
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// PrepareNextPush signs, without asking the chain, the push that follows after from the same
// key: the next nonce, after's fees, and gas for its own calldata (after's limit, or the
// EIP-7623 floor of its calldata with the usual margin when that is more). Its prev is the
// digest of after's epoch, so no node could estimate it before after lands; sent right behind
// after, both can land in one block.
func (c *Client) PrepareNextPush(key *ecdsa.PrivateKey, after *PreparedPush, owner common.Address, space, prev common.Hash, ct []byte) (*PreparedPush, error) {
	data := EncodePushCalldata(owner, space, prev, ct)
	floor := CalldataFloor(data)
	to := c.contract
	tx := types.NewTx(&types.DynamicFeeTx{
		ChainID:   new(big.Int).SetUint64(c.chainID),
		Nonce:     after.Nonce + 1,
		GasTipCap: after.Tx.GasTipCap(),
		GasFeeCap: after.Tx.GasFeeCap(),
		Gas:       max(after.Tx.Gas(), floor+floor*gasMargin/100),
		To:        &to,
		Data:      data,
	})
	signed, err := types.SignTx(tx, c.signer, key)
	if err != nil {
		return nil, fmt.Errorf("prepare push: sign: %w", err)
	}
	return &PreparedPush{Tx: signed, Hash: signed.Hash(), Digest: crypto.Keccak256Hash(ct), Nonce: signed.Nonce(), GasPrice: after.GasPrice}, nil
}

package chain

import (
	"context"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Head is the newest epoch of an (owner, space): the keccak256 of its ciphertext, its
// sequence number (0 for a space nobody wrote to) and the block it landed in.
type Head struct {
	Digest common.Hash
	Seq    uint64
	Block  uint64
}

// EpochEvent is one Epoch event with where it was found.
type EpochEvent struct {
	Owner     common.Address
	Space     common.Hash
	Writer    common.Address
	Seq       uint64
	Prev      common.Hash
	Digest    common.Hash
	PrevBlock uint64
	Block     uint64
	TxHash    common.Hash
}

// Head reads head(owner, space) at the latest block.
func (c *Client) Head(ctx context.Context, owner common.Address, space common.Hash) (Head, error) {
	// callers say "read head"; the error says what failed
	out, err := c.ethCall(ctx, anchor.PackHead(owner, space))
	if err != nil {
		return Head{}, err
	}
	h, err := anchor.UnpackHead(out)
	if err != nil {
		return Head{}, fmt.Errorf("decode head: %w", err)
	}
	return Head{Digest: h.Digest, Seq: h.Seq, Block: h.BlockNumber}, nil
}

// epochLogs runs the one log query the package makes: eth_getLogs with fromBlock = toBlock
// = block, filtered by the contract, the Epoch topic, owner and space. Logs that do not
// decode or do not match the filter are refused, not skipped: the RPC is lying.
func (c *Client) epochLogs(ctx context.Context, owner common.Address, space common.Hash, block uint64) ([]*EpochEvent, error) {
	q := c.epochFilter(owner, space, block, block)
	var logs []types.Log
	err := c.do(ctx, func(ctx context.Context) (err error) {
		logs, err = c.eth.FilterLogs(ctx, q)
		return err
	}, "eth_getLogs")
	if err != nil {
		return nil, fmt.Errorf("read Epoch logs at block %d: %w", block, err)
	}
	evs := make([]*EpochEvent, 0, len(logs))
	for i := range logs {
		l := &logs[i]
		if l.Removed {
			continue
		}
		ev, err := c.decodeEpochLog(l)
		if err != nil {
			return nil, fmt.Errorf("read Epoch logs at block %d: %w", block, err)
		}
		if ev.Owner != owner || ev.Space != space || ev.Block != block {
			return nil, fmt.Errorf("read Epoch logs at block %d: the RPC returned an event outside the filter (owner %s, space %s, block %d)",
				block, ev.Owner, ev.Space.Hex(), ev.Block)
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// epochFilter selects the Epoch events of (owner, space) from the contract in blocks from..to.
func (c *Client) epochFilter(owner common.Address, space common.Hash, from, to uint64) ethereum.FilterQuery {
	return ethereum.FilterQuery{
		FromBlock: new(big.Int).SetUint64(from),
		ToBlock:   new(big.Int).SetUint64(to),
		Addresses: []common.Address{c.contract},
		Topics:    [][]common.Hash{{epochTopic}, {common.BytesToHash(owner.Bytes())}, {space}},
	}
}

func (c *Client) decodeEpochLog(l *types.Log) (*EpochEvent, error) {
	if l.Address != c.contract {
		return nil, fmt.Errorf("log from %s, not the contract %s", l.Address, c.contract)
	}
	e, err := anchor.UnpackEpochEvent(l)
	if err != nil {
		return nil, fmt.Errorf("decode Epoch event: %w", err)
	}
	return &EpochEvent{
		Owner:     e.Owner,
		Space:     e.Space,
		Writer:    e.Writer,
		Seq:       e.Seq,
		Prev:      e.Prev,
		Digest:    e.Digest,
		PrevBlock: e.PrevBlock,
		Block:     l.BlockNumber,
		TxHash:    l.TxHash,
	}, nil
}

// EpochAt returns the Epoch event of (owner, space) with the given seq in exactly block,
// or a *NoEventError ("no Epoch event for seq N at block B").
func (c *Client) EpochAt(ctx context.Context, owner common.Address, space common.Hash, block, seq uint64) (*EpochEvent, error) {
	evs, err := c.epochLogs(ctx, owner, space, block)
	if err != nil {
		return nil, err
	}
	return PickSeq(evs, block, seq)
}

// PickSeq returns the one event of seq among the events of block, or a *NoEventError.
func PickSeq(evs []*EpochEvent, block, seq uint64) (*EpochEvent, error) {
	var found *EpochEvent
	for _, ev := range evs {
		if ev.Seq != seq {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("two Epoch events for seq %d at block %d (tx %s and %s)", seq, block, found.TxHash, ev.TxHash)
		}
		found = ev
	}
	if found == nil {
		return nil, &NoEventError{Seq: seq, Block: block}
	}
	return found, nil
}

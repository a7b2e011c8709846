package chain

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"
)

var pushMethod = anchorABI.Methods["push"]

// EncodePushCalldata returns the calldata of push(owner, space, prev, ct).
func EncodePushCalldata(owner common.Address, space, prev common.Hash, ct []byte) []byte {
	return anchor.PackPush(owner, space, prev, ct)
}

// DecodePushCalldata decodes the calldata of a push call. Anything else is ErrNotPush.
func DecodePushCalldata(data []byte) (owner common.Address, space, prev common.Hash, ct []byte, err error) {
	if len(data) < 4 || !bytes.Equal(data[:4], pushMethod.ID) {
		return owner, space, prev, nil, fmt.Errorf("%w: calldata does not start with the push selector", ErrNotPush)
	}
	vals, err := pushMethod.Inputs.Unpack(data[4:])
	if err != nil {
		return owner, space, prev, nil, fmt.Errorf("%w: %v", ErrNotPush, err)
	}
	owner = vals[0].(common.Address)
	space = vals[1].([32]byte)
	prev = vals[2].([32]byte)
	ct = vals[3].([]byte)
	return owner, space, prev, ct, nil
}

// FetchBlobs returns the ciphertext of each event, in the same order, read from the
// calldata of its push transaction (eth_getTransactionByHash, in JSON-RPC batches). Each
// transaction must be the one asked for, addressed to the contract, a push with the
// event's owner, space and prev, and carry a ciphertext whose keccak256 is the event's
// digest (ErrWrongContract, ErrNotPush, ErrCalldataMismatch, ErrDigestMismatch). A
// transaction the RPC answers null for (ErrTxNotFound: a pruned node) is asked of the second
// RPC when SetSecondary gave one, and checked the same way.
func (c *Client) FetchBlobs(ctx context.Context, evs []*EpochEvent) ([][]byte, error) {
	out := make([][]byte, len(evs))
	for start := 0; start < len(evs); start += blobBatchSize {
		end := min(start+blobBatchSize, len(evs))
		raws := make([]json.RawMessage, end-start)
		elems := make([]rpc.BatchElem, end-start)
		for i := range elems {
			elems[i] = rpc.BatchElem{
				Method: "eth_getTransactionByHash",
				Args:   []any{evs[start+i].TxHash},
				Result: &raws[i],
			}
		}
		if err := c.batch(ctx, elems); err != nil {
			return nil, fmt.Errorf("fetch push transactions: %w", err)
		}
		var pruned []int // answered null: asked of the second RPC, when there is one
		for i, el := range elems {
			ev := evs[start+i]
			if el.Error != nil {
				return nil, fmt.Errorf("epoch %d: transaction %s: %w", ev.Seq, ev.TxHash, el.Error)
			}
			if isNull(raws[i]) && c.second.configured() {
				pruned = append(pruned, start+i)
				continue
			}
			ct, err := c.blobFromTx(ev, raws[i])
			if err != nil {
				return nil, fmt.Errorf("epoch %d (tx %s): %w", ev.Seq, ev.TxHash, err)
			}
			out[start+i] = ct
		}
		if len(pruned) > 0 {
			need := make([]*EpochEvent, len(pruned))
			for j, i := range pruned {
				need[j] = evs[i]
			}
			first := need[0]
			why := fmt.Errorf("epoch %d (tx %s): %w", first.Seq, first.TxHash, ErrTxNotFound)
			blobs, err := c.fetchFromSecondary(ctx, need, why)
			if err != nil {
				return nil, err
			}
			for j, i := range pruned {
				out[i] = blobs[j]
			}
		}
	}
	return out, nil
}

func (c *Client) blobFromTx(ev *EpochEvent, raw json.RawMessage) ([]byte, error) {
	if isNull(raw) {
		return nil, ErrTxNotFound
	}
	tx := new(types.Transaction)
	if err := json.Unmarshal(raw, tx); err != nil {
		return nil, fmt.Errorf("decode transaction: %w", err)
	}
	return PushCiphertext(c.contract, ev, tx)
}

// PushCiphertext returns the ciphertext tx carries for ev after checking that tx is the
// transaction the event names, a push to contract with the event's owner, space and prev,
// and that the ciphertext's keccak256 is the event's digest.
func PushCiphertext(contract common.Address, ev *EpochEvent, tx *types.Transaction) ([]byte, error) {
	if tx.Hash() != ev.TxHash {
		return nil, fmt.Errorf("%w: got %s", ErrTxMismatch, tx.Hash())
	}
	if to := tx.To(); to == nil || *to != contract {
		return nil, fmt.Errorf("%w: sent to %v", ErrWrongContract, tx.To())
	}
	owner, space, prev, ct, err := DecodePushCalldata(tx.Data())
	if err != nil {
		return nil, err
	}
	switch {
	case owner != ev.Owner:
		return nil, fmt.Errorf("%w: owner %s, event %s", ErrCalldataMismatch, owner, ev.Owner)
	case space != ev.Space:
		return nil, fmt.Errorf("%w: space %s, event %s", ErrCalldataMismatch, space.Hex(), ev.Space.Hex())
	case prev != ev.Prev:
		return nil, fmt.Errorf("%w: prev %s, event %s", ErrCalldataMismatch, prev.Hex(), ev.Prev.Hex())
	}
	if d := crypto.Keccak256Hash(ct); d != ev.Digest {
		return nil, fmt.Errorf("%w: keccak256(ct) %s, event %s", ErrDigestMismatch, d.Hex(), ev.Digest.Hex())
	}
	return ct, nil
}

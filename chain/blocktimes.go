package chain

import (
	"context"
	"fmt"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"
)

// blockTimeBatch is how many block headers one batch asks for.
const blockTimeBatch = 100

// BlockTimes returns the timestamp (unix seconds) of each block, a batch of headers per call.
func (c *Client) BlockTimes(ctx context.Context, blocks []uint64) (map[uint64]uint64, error) {
	out := make(map[uint64]uint64, len(blocks))
	for start := 0; start < len(blocks); start += blockTimeBatch {
		end := min(start+blockTimeBatch, len(blocks))
		heads := make([]struct {
			Time *hexutil.Uint64 `json:"timestamp"`
		}, end-start)
		elems := make([]rpc.BatchElem, end-start)
		for i := range elems {
			elems[i] = rpc.BatchElem{Method: "eth_getBlockByNumber", Args: []any{hexutil.Uint64(blocks[start+i]), false}, Result: &heads[i]}
		}
		if err := c.batch(ctx, elems); err != nil {
			return nil, fmt.Errorf("read block times: %w", err)
		}
		for i, el := range elems {
			b := blocks[start+i]
			if el.Error != nil {
				return nil, fmt.Errorf("block %d: %w", b, el.Error)
			}
			if heads[i].Time == nil {
				return nil, fmt.Errorf("block %d: the node has no such block", b)
			}
			out[b] = uint64(*heads[i].Time)
		}
	}
	return out, nil
}

package replica

import (
	"context"

	"github.com/ethereum/go-ethereum/common"
)

// HeadDekID is the data key id in the header of the head epoch (or of the newest one within
// maxHeaderWalk before it whose header parses), and that epoch's seq; seq 0 when the vault
// has no epoch yet.
func HeadDekID(ctx context.Context, c Chain, owner common.Address, space common.Hash) ([8]byte, uint64, error) {
	head, err := c.Head(ctx, owner, space)
	if err != nil || head.Seq == 0 {
		return [8]byte{}, 0, err
	}
	h, seq, _, err := headHeader(ctx, c, owner, space, head)
	if err != nil {
		return [8]byte{}, 0, err
	}
	return h.DekID, seq, nil
}

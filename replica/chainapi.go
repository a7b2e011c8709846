package replica

import (
	"context"
	"crypto/ecdsa"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
)

// NextPreparer is a Chain that signs the push after another without asking the node (the RPC
// client, memchain); without it a push sends its epochs one at a time.
type NextPreparer interface {
	PrepareNextPush(key *ecdsa.PrivateKey, after *chain.PreparedPush, owner common.Address, space, prev common.Hash, ct []byte) (*chain.PreparedPush, error)
}

// Chain is what the engine asks of the chain: the head, the Epoch events and their calldata,
// block times, and a push prepared, sent and waited for in separate steps so that the push
// journal can stand between them. *chain.Client serves it over JSON-RPC; replica/memchain
// keeps a chain in memory for the engine's own tests.
type Chain interface {
	Head(ctx context.Context, owner common.Address, space common.Hash) (chain.Head, error)
	EpochAt(ctx context.Context, owner common.Address, space common.Hash, block, seq uint64) (*chain.EpochEvent, error)
	NewDiscovery(ctx context.Context, owner common.Address, space common.Hash, floor uint64) chain.EventFinder
	FetchBlobs(ctx context.Context, evs []*chain.EpochEvent) ([][]byte, error)
	BlockTimes(ctx context.Context, blocks []uint64) (map[uint64]uint64, error)

	PreparePush(ctx context.Context, key *ecdsa.PrivateKey, owner common.Address, space, prev common.Hash, ct []byte) (*chain.PreparedPush, error)
	Send(ctx context.Context, p *chain.PreparedPush) error
	WaitPush(ctx context.Context, p *chain.PreparedPush, owner common.Address, space common.Hash, confirmations uint64) (*chain.PushReceipt, error)
	TxStatus(ctx context.Context, hash common.Hash) (found bool, block uint64, err error)

	ChainID() uint64
	Stats() chain.Stats // requests made so far, for reports
}

var _ Chain = (*chain.Client)(nil)

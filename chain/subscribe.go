package chain

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
)

// IsWebsocketURL reports whether u is a ws:// or wss:// URL.
func IsWebsocketURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	s := strings.ToLower(p.Scheme)
	return s == "ws" || s == "wss"
}

// EpochSubscription is a websocket subscription to the Epoch logs of one (owner, space). It
// only says that a block carried one: what it carried is read and checked by a pull, so a
// lying or confused websocket can cost a pull, never an epoch.
type EpochSubscription struct {
	rc     *rpc.Client
	sub    ethereum.Subscription
	logs   chan types.Log
	blocks chan uint64
	errc   chan error
	quit   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

// ErrSubscriptionClosed ends a subscription that Close stopped.
var ErrSubscriptionClosed = errors.New("subscription closed")

// SubscribeEpochs dials wsURL, checks that it serves chainID, and subscribes to the Epoch logs
// of the contract filtered by owner and space.
func SubscribeEpochs(ctx context.Context, wsURL string, chainID uint64, contract, owner common.Address, space common.Hash) (*EpochSubscription, error) {
	if !IsWebsocketURL(wsURL) {
		return nil, fmt.Errorf("subscribe: %q is not a ws:// or wss:// URL", wsURL)
	}
	rc, err := rpc.DialContext(ctx, wsURL)
	if err != nil {
		return nil, fmt.Errorf("dial websocket: %w", err)
	}
	eth := ethclient.NewClient(rc)
	id, err := eth.ChainID(ctx)
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("websocket: read chain id: %w", err)
	}
	if !id.IsUint64() || id.Uint64() != chainID {
		rc.Close()
		return nil, fmt.Errorf("websocket serves chain %s, the vault lives on chain %d", id, chainID)
	}
	s := &EpochSubscription{rc: rc, logs: make(chan types.Log, 64), blocks: make(chan uint64, 16),
		errc: make(chan error, 1), quit: make(chan struct{})}
	q := ethereum.FilterQuery{
		Addresses: []common.Address{contract},
		Topics:    [][]common.Hash{{epochTopic}, {common.BytesToHash(owner.Bytes())}, {space}},
	}
	s.sub, err = eth.SubscribeFilterLogs(ctx, q, s.logs)
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("subscribe to Epoch logs: %w", err)
	}
	s.wg.Add(1)
	go s.run(contract)
	return s, nil
}

// run forwards the block of each log and ends with the subscription's error.
func (s *EpochSubscription) run(contract common.Address) {
	defer s.wg.Done()
	fail := func(err error) {
		if err == nil {
			err = errors.New("the websocket ended the subscription")
		}
		s.errc <- err
	}
	for {
		select {
		case <-s.quit:
			fail(ErrSubscriptionClosed)
			return
		case err := <-s.sub.Err():
			fail(err)
			return
		case l := <-s.logs:
			if l.Removed || l.Address != contract {
				continue
			}
			select {
			case s.blocks <- l.BlockNumber:
			default: // a pull is already due: one wake-up covers them all
			}
		}
	}
}

// Blocks delivers the block number of each new Epoch event (some may be folded into one).
func (s *EpochSubscription) Blocks() <-chan uint64 { return s.blocks }

// Err delivers the one error that ends the subscription: the socket dropped, or Close.
func (s *EpochSubscription) Err() <-chan error { return s.errc }

// Close ends the subscription and its connection.
func (s *EpochSubscription) Close() {
	s.once.Do(func() {
		close(s.quit)
		s.sub.Unsubscribe()
		s.wg.Wait()
		s.rc.Close()
	})
}

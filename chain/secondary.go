package chain

import (
	"context"
	"fmt"
	"sync"
)

// secondary is a second RPC (kint's KINT_RPC_URL_2) asked for the calldata the primary cannot
// serve: a pruned node answers null for an old transaction. It is dialed on first need. What
// it serves is checked exactly as the primary's answer would be.
type secondary struct {
	mu     sync.Mutex
	dial   func(ctx context.Context) (*Client, error)
	client *Client
}

// SetSecondary gives c a second RPC for calldata the primary answers null for; dial is called
// on first need, and again after a failed dial. The second client must serve the same chain.
func (c *Client) SetSecondary(dial func(ctx context.Context) (*Client, error)) {
	c.second.mu.Lock()
	c.second.dial = dial
	c.second.mu.Unlock()
}

func (s *secondary) get(ctx context.Context, chainID uint64) (*Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		return s.client, nil
	}
	if s.dial == nil {
		return nil, nil
	}
	sc, err := s.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("dial the second RPC: %w", err)
	}
	if sc.ChainID() != chainID {
		sc.Close()
		return nil, fmt.Errorf("the second RPC serves chain %d, not %d", sc.ChainID(), chainID)
	}
	s.client = sc
	return sc, nil
}

func (s *secondary) configured() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dial != nil
}

func (s *secondary) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
}

// fetchFromSecondary fetches the blobs of evs from the second RPC, checked as FetchBlobs
// checks them; why is the primary's refusal, kept in the error when there is no second RPC.
func (c *Client) fetchFromSecondary(ctx context.Context, evs []*EpochEvent, why error) ([][]byte, error) {
	sc, err := c.second.get(ctx, c.chainID)
	if err != nil {
		return nil, fmt.Errorf("%w; %v", why, err)
	}
	if sc == nil {
		return nil, why
	}
	if sc.contract != c.contract {
		return nil, fmt.Errorf("%w; the second RPC client names contract %s, not %s", why, sc.contract, c.contract)
	}
	blobs, err := sc.FetchBlobs(ctx, evs)
	if err != nil {
		return nil, fmt.Errorf("%w; from the second RPC: %w", why, err)
	}
	c.stats.secondary.Add(uint64(len(evs)))
	return blobs, nil
}

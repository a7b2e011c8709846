// Package chain reads and writes EpochAnchor over JSON-RPC: the head of a space, the
// Epoch events (found by ranged log queries, each checked against the chain of digests and
// prevBlocks, with one exact-block query per epoch as the fallback), the ciphertexts
// carried in push calldata, and the push transactions themselves.
//
// Every RPC goes through one place that bounds it with a per-attempt timeout and retries
// transport failures (never a JSON-RPC error such as a revert or "nonce too low") with
// exponential backoff, and counts calls and retries for Stats.
package chain

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"kintfs/contracts"
)

// Options tune the RPC behaviour. Zero values take the defaults.
type Options struct {
	CallTimeout  time.Duration // per attempt; default 15s
	Retries      int           // extra attempts after a transport failure; default 7, negative for none
	Backoff      time.Duration // first retry delay, doubled each time; default 200ms
	PollInterval time.Duration // receipt and confirmation polling in WaitPush; default 500ms
	// BlockTime is the chain's block interval when it has a steady one (Base: 2s); receipt
	// polls are then paced to it instead of PollInterval. 0: unknown or on demand (the dev
	// chain), polled from 20ms up to PollInterval.
	BlockTime time.Duration
	// DeadBudget bounds how long one call keeps retrying an RPC that refuses connections
	// (nothing listens: the node is down), from its first attempt; default 1s. Other
	// transport failures (a dropped answer, a 502) take the full Retries.
	DeadBudget time.Duration
	// HangBudget bounds how long one call waits on an RPC that takes requests and never
	// answers (a black hole, as a dead load balancer is): no attempt runs past it, counted
	// from the first, and an attempt that timed out is not tried again after it; default 8s.
	HangBudget time.Duration
}

const (
	defaultCallTimeout  = 15 * time.Second
	defaultRetries      = 7 // at a 20% fault rate, 1 call in ~400,000 still fails
	defaultBackoff      = 200 * time.Millisecond
	defaultPollInterval = 500 * time.Millisecond
	maxBackoff          = 10 * time.Second
	defaultDeadBudget   = time.Second
	defaultHangBudget   = 8 * time.Second
	dialRetries         = 3 // about 1.4 s of backoff before a dial gives up
	// blobBatchSize bounds one eth_getTransactionByHash batch (a push carries up to ~100 KB).
	blobBatchSize = 100
)

func (o Options) withDefaults() Options {
	if o.CallTimeout <= 0 {
		o.CallTimeout = defaultCallTimeout
	}
	if o.Retries == 0 {
		o.Retries = defaultRetries
	} else if o.Retries < 0 {
		o.Retries = 0
	}
	if o.Backoff <= 0 {
		o.Backoff = defaultBackoff
	}
	if o.PollInterval <= 0 {
		o.PollInterval = defaultPollInterval
	}
	if o.DeadBudget <= 0 {
		o.DeadBudget = defaultDeadBudget
	}
	if o.HangBudget <= 0 {
		o.HangBudget = defaultHangBudget
	}
	return o
}

// Stats counts the RPC traffic of a Client.
type Stats struct {
	Calls   uint64            // round trips asked for (a batch is one), retries not included
	Retries uint64            // extra attempts after a transport failure or timeout
	Methods map[string]uint64 // requests per JSON-RPC method; each element of a batch counts
	// FromSecondary counts the transactions the primary answered null for that the second
	// RPC served (their requests are the second client's, not counted here)
	FromSecondary uint64
}

type counters struct {
	calls     atomic.Uint64
	retries   atomic.Uint64
	secondary atomic.Uint64
	mu        sync.Mutex
	methods   map[string]uint64
}

func (s *counters) record(methods ...string) {
	s.calls.Add(1)
	s.mu.Lock()
	if s.methods == nil {
		s.methods = make(map[string]uint64)
	}
	for _, m := range methods {
		s.methods[m]++
	}
	s.mu.Unlock()
}

// Client talks to one EpochAnchor deployment on one chain. It is safe for concurrent use.
type Client struct {
	rpc      *rpc.Client
	eth      *ethclient.Client
	contract common.Address
	chainID  uint64
	signer   types.Signer
	opt      Options
	stats    counters
	logWin   logWindow // the width of ranged log queries, learnt from the RPC's refusals
	second   secondary // calldata the primary answers null for
	endpoint string    // the RPC as scheme://host, for messages
}

// The EpochAnchor binding, its ABI and the Epoch topic, parsed once.
var (
	anchor     = contracts.NewEpochAnchor()
	anchorABI  = anchor.GetABI()
	epochTopic = anchorABI.Events["Epoch"].ID
)

// Dial connects to rpcURL and reads the chain id (once; it is not read again).
func Dial(ctx context.Context, rpcURL string, contract common.Address, opt Options) (*Client, error) {
	rc, err := rpc.DialContext(ctx, rpcURL)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", rpcURL, err)
	}
	c := &Client{
		rpc:      rc,
		eth:      ethclient.NewClient(rc),
		contract: contract,
		opt:      opt.withDefaults(),
		endpoint: Endpoint(rpcURL),
	}
	// A dial is a probe, retried briefly: an unreachable RPC means offline, and a mount
	// dials again at its next poll.
	var id *big.Int
	err = c.doRetrying(ctx, min(c.opt.Retries, dialRetries), func(ctx context.Context) (err error) {
		id, err = c.eth.ChainID(ctx)
		return err
	}, "eth_chainId")
	if errors.Is(err, ErrUnreachable) {
		rc.Close()
		return nil, err // names the endpoint
	}
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("read chain id from %s: %w", c.endpoint, err)
	}
	if !id.IsUint64() {
		rc.Close()
		return nil, fmt.Errorf("chain id %s out of range", id)
	}
	c.chainID = id.Uint64()
	c.signer = types.LatestSignerForChainID(id)
	return c, nil
}

// SetBlockTime sets Options.BlockTime once the chain id is known; call it before the client
// is shared.
func (c *Client) SetBlockTime(d time.Duration) { c.opt.BlockTime = d }

// Close closes the connection.
func (c *Client) Close() {
	c.second.close()
	c.rpc.Close()
}

// ChainID is the chain id read at Dial.
func (c *Client) ChainID() uint64 { return c.chainID }

// Contract is the EpochAnchor address.
func (c *Client) Contract() common.Address { return c.contract }

// Stats returns a snapshot of the counters.
func (c *Client) Stats() Stats {
	c.stats.mu.Lock()
	m := maps.Clone(c.stats.methods)
	c.stats.mu.Unlock()
	return Stats{Calls: c.stats.calls.Load(), Retries: c.stats.retries.Load(), Methods: m, FromSecondary: c.stats.secondary.Load()}
}

// do runs one logical RPC round trip (fn) under a per-attempt timeout, retrying
// transport failures with exponential backoff.
func (c *Client) do(ctx context.Context, fn func(ctx context.Context) error, methods ...string) error {
	return c.doRetrying(ctx, c.opt.Retries, fn, methods...)
}

// doRetrying is do with its own bound on retries. A transport failure that outlasts them is
// returned as an *UnreachableError (errors.Is(err, ErrUnreachable)).
func (c *Client) doRetrying(ctx context.Context, retries int, fn func(ctx context.Context) error, methods ...string) error {
	c.stats.record(methods...)
	delay := c.opt.Backoff
	start := time.Now()
	for attempt := 0; ; attempt++ {
		// an attempt may not wait past the hang budget, counted from the first (at least a
		// second, so that a retry still has time to be answered)
		timeout := min(c.opt.CallTimeout, max(c.opt.HangBudget-time.Since(start), time.Second))
		actx, cancel := context.WithTimeout(ctx, timeout)
		err := fn(actx)
		attemptTimedOut := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		behind := behindHead(err)
		transport := attemptTimedOut || retryable(err)
		if ctx.Err() != nil || !(transport || behind) {
			return err
		}
		// a refused connection is a node that is down: retried for DeadBudget only, so that
		// a dead RPC is reported in about a second, not after the whole backoff
		dead := refused(err) && time.Since(start)+delay > c.opt.DeadBudget
		hung := attemptTimedOut && time.Since(start)+delay >= c.opt.HangBudget
		if attempt >= retries || dead || hung {
			if behind {
				return err // the node answers, but never caught up
			}
			return &UnreachableError{Err: err, Endpoint: c.endpoint}
		}
		c.stats.retries.Add(1)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, maxBackoff)
	}
}

// refused reports whether err is a connection the RPC's host refused or could not route.
func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// retryable reports whether err is a transport failure: the request may not have reached
// the node, or its answer was lost. A JSON-RPC error answer never is.
func retryable(err error) bool {
	var rpcErr rpc.Error
	if errors.As(err, &rpcErr) {
		return false
	}
	var httpErr rpc.HTTPError
	if errors.As(err, &httpErr) {
		return httpErr.StatusCode >= 500 || httpErr.StatusCode == http.StatusTooManyRequests
	}
	var netErr net.Error
	switch {
	case errors.As(err, &netErr),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}

// behindHead reports whether err is a node's answer that the block asked about lies past its
// head ("block range extends beyond current head block"): a node behind the one that gave a
// receipt for that block, as a load-balanced RPC can be, or one whose head has not moved to the
// block it has just mined. It answers once it has caught up, so the call is asked again.
func behindHead(err error) bool {
	var rpcErr rpc.Error
	return errors.As(err, &rpcErr) && strings.Contains(rpcErr.Error(), "beyond current head")
}

// call runs one JSON-RPC method with retries.
func (c *Client) call(ctx context.Context, result any, method string, args ...any) error {
	return c.do(ctx, func(ctx context.Context) error {
		return c.rpc.CallContext(ctx, result, method, args...)
	}, method)
}

// batch sends elems as one JSON-RPC batch with retries. Per-element errors are left in
// the elements.
func (c *Client) batch(ctx context.Context, elems []rpc.BatchElem) error {
	methods := make([]string, len(elems))
	for i, e := range elems {
		methods[i] = e.Method
	}
	return c.do(ctx, func(ctx context.Context) error {
		for i := range elems {
			elems[i].Error = nil
		}
		return c.rpc.BatchCallContext(ctx, elems)
	}, methods...)
}

// BlockNumber returns the latest block number.
func (c *Client) BlockNumber(ctx context.Context) (uint64, error) {
	var n hexutil.Uint64
	if err := c.call(ctx, &n, "eth_blockNumber"); err != nil {
		return 0, fmt.Errorf("block number: %w", err)
	}
	return uint64(n), nil
}

// Balance returns the balance of addr at the latest block.
func (c *Client) Balance(ctx context.Context, addr common.Address) (*big.Int, error) {
	var b hexutil.Big
	if err := c.call(ctx, &b, "eth_getBalance", addr, "latest"); err != nil {
		return nil, fmt.Errorf("balance of %s: %w", addr, err)
	}
	return (*big.Int)(&b), nil
}

// TxStatus reports whether the node knows the transaction and, once it is mined, its
// block (0 while it is pending).
func (c *Client) TxStatus(ctx context.Context, hash common.Hash) (found bool, block uint64, err error) {
	var raw json.RawMessage
	if err := c.call(ctx, &raw, "eth_getTransactionByHash", hash); err != nil {
		return false, 0, fmt.Errorf("transaction %s: %w", hash, err)
	}
	if isNull(raw) {
		return false, 0, nil
	}
	var tx struct {
		BlockNumber *hexutil.Uint64 `json:"blockNumber"`
	}
	if err := json.Unmarshal(raw, &tx); err != nil {
		return false, 0, fmt.Errorf("transaction %s: %w", hash, err)
	}
	if tx.BlockNumber == nil {
		return true, 0, nil
	}
	return true, uint64(*tx.BlockNumber), nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// ethCall runs a view of the contract at the latest block.
func (c *Client) ethCall(ctx context.Context, data []byte) ([]byte, error) {
	var out []byte
	err := c.do(ctx, func(ctx context.Context) (err error) {
		out, err = c.eth.CallContract(ctx, ethereum.CallMsg{To: &c.contract, Data: data}, nil)
		return err
	}, "eth_call")
	if err != nil {
		if rev := revertFromError(err); rev != nil {
			return nil, fmt.Errorf("eth_call: %w", rev)
		}
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s on chain %d", ErrNoContract, c.contract, c.chainID)
	}
	return out, nil
}

func address(key *ecdsa.PrivateKey) common.Address { return crypto.PubkeyToAddress(key.PublicKey) }

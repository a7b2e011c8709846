package chain

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"
)

// Discovery finds the Epoch events of one (owner, space) with eth_getLogs over block ranges
// instead of one exact-block query per epoch, and trusts none of what a range returns: an
// event from a range is only a hint. Next hands out the hint for (block, seq) when it is the
// only one there and its digest is the one the caller expects (the digest the newer epoch
// names as prev, or the head's); otherwise, or when the range left it out, it asks the exact
// block (EpochAt), and that answer is what the caller checks. A lying range can
// therefore cost requests, never an epoch: a dropped event is found at its block, an added one
// is never asked for, an altered one is asked for again.
//
// Ranges are read from the block asked for downwards, a window at a time. The window is the
// Client's, shared by every discovery on it: it starts wide, halves on any refusal (a range
// too large, too many results, a timeout, HTTP 413) and widens again after successes. While
// the events keep coming, further ranges below are read ahead, a bounded number at once.
//
// An RPC that serves no ranged logs at all (method not found, or refusals down to the
// smallest window) costs one exact-block query per epoch, no more.
type Discovery struct {
	c     *Client
	owner common.Address
	space common.Hash
	floor uint64 // no range reaches below this block

	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{} // ranges in flight

	mu     sync.Mutex
	hints  map[hintKey][]*EpochEvent
	ranges []*logRange // every range issued
	batch  []*logRange // the ranges of the latest read-ahead
	depth  int         // how many ranges a read-ahead issues
	stats  DiscoveryStats
}

// DiscoveryStats says how the events were found.
type DiscoveryStats struct {
	Ranges    int // ranged eth_getLogs answered
	Refusals  int // ranged eth_getLogs refused (and retried narrower)
	FromRange int // events taken from a range
	Exact     int // exact-block queries (the fallback)
}

type hintKey struct{ block, seq uint64 }

// logRange is blocks lo..hi, read (or being read) by one goroutine.
type logRange struct {
	lo, hi uint64
	done   chan struct{}
	err    error // the range could not be read, even narrowed
	used   bool  // Next asked for a block in it
}

const (
	windowStart = 50_000    // blocks: about a day of Base
	windowMax   = 2_000_000 // blocks
	windowMin   = 2         // a refusal of this few blocks is not about the range's size
	widenAfter  = 2         // successes at the full window before it doubles
	// maxRangesInFlight bounds the ranged queries one discovery has open at once.
	maxRangesInFlight = 4
	// rangeRetries bounds the transport retries of one ranged query: a failure narrows the
	// window instead.
	rangeRetries = 1
)

// logWindow is the adaptive width of ranged log queries.
type logWindow struct {
	mu     sync.Mutex
	size   uint64
	streak int  // successes at the full window in a row
	off    bool // the RPC serves no ranged logs
}

func (w *logWindow) get() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.size == 0 {
		w.size = windowStart
	}
	return w.size
}

// refused narrows the window below a range of tried blocks that was refused, and reports
// whether there is a narrower one left to try.
func (w *logWindow) refused(tried uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.size == 0 {
		w.size = windowStart
	}
	w.streak = 0
	if tried <= windowMin {
		return false
	}
	w.size = max(min(w.size, tried/2), windowMin)
	return true
}

// succeeded widens the window after widenAfter successes at its full width.
func (w *logWindow) succeeded(tried uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.size == 0 {
		w.size = windowStart
	}
	if tried < w.size {
		return
	}
	if w.streak++; w.streak >= widenAfter {
		w.size = min(2*w.size, windowMax)
		w.streak = 0
	}
}

func (w *logWindow) disable() {
	w.mu.Lock()
	w.off = true
	w.mu.Unlock()
}

func (w *logWindow) disabled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.off
}

// EventFinder hands out the Epoch events of one (owner, space) one at a time, newest first,
// each at the block and seq the newer one names. Discovery is the RPC's; a test chain may
// keep its own.
type EventFinder interface {
	Next(ctx context.Context, block, seq uint64, want common.Hash) (*EpochEvent, error)
	Stats() DiscoveryStats
	Close()
}

// NewDiscovery starts a discovery of the events of (owner, space) at or above block floor.
// Close ends the queries it still has in flight.
func (c *Client) NewDiscovery(ctx context.Context, owner common.Address, space common.Hash, floor uint64) EventFinder {
	ctx, cancel := context.WithCancel(ctx)
	return &Discovery{c: c, owner: owner, space: space, floor: floor, ctx: ctx, cancel: cancel,
		sem: make(chan struct{}, maxRangesInFlight), hints: map[hintKey][]*EpochEvent{}, depth: 2}
}

// Close cancels the ranges in flight.
func (d *Discovery) Close() { d.cancel() }

// Stats says how the events so far were found.
func (d *Discovery) Stats() DiscoveryStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Next returns the Epoch event of seq in exactly block. want is the digest the caller expects
// it to have (zero: any); a range's event with another digest is not taken, and the exact
// block is asked instead. The exact answer is returned as it is, for the caller to check:
// Next never decides that the chain is broken, it only avoids asking when a range has already
// answered consistently. Errors are EpochAt's.
func (d *Discovery) Next(ctx context.Context, block, seq uint64, want common.Hash) (*EpochEvent, error) {
	if ev := d.hint(ctx, block, seq, want); ev != nil {
		return ev, nil
	}
	d.mu.Lock()
	d.stats.Exact++
	d.mu.Unlock()
	return d.c.EpochAt(ctx, d.owner, d.space, block, seq)
}

// hint waits for the range that covers block and returns its event for seq when it is the
// only one there and has the wanted digest.
func (d *Discovery) hint(ctx context.Context, block, seq uint64, want common.Hash) *EpochEvent {
	if block < d.floor || d.c.logWin.disabled() {
		return nil
	}
	d.mu.Lock()
	r := d.rangeFor(block)
	if r == nil {
		r = d.readAhead(block)
	}
	r.used = true
	d.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	evs := d.hints[hintKey{block, seq}]
	if len(evs) != 1 || (want != (common.Hash{}) && evs[0].Digest != want) {
		return nil
	}
	d.stats.FromRange++
	ev := *evs[0]
	return &ev
}

// rangeFor is the issued range that covers block (nil when none does). d.mu is held.
func (d *Discovery) rangeFor(block uint64) *logRange {
	for _, r := range d.ranges {
		if r.lo <= block && block <= r.hi {
			return r
		}
	}
	return nil
}

// readAhead issues the ranges from top downwards, one window each, and returns the first.
// It issues more of them when every range of the previous read-ahead was used (the events
// are dense), fewer when one was not (the walk jumped over it). d.mu is held.
func (d *Discovery) readAhead(top uint64) *logRange {
	if len(d.batch) > 0 {
		all := true
		for _, r := range d.batch {
			all = all && r.used
		}
		if all {
			d.depth = min(2*d.depth, maxRangesInFlight)
		} else {
			d.depth = max(d.depth/2, 1)
		}
	}
	d.batch = d.batch[:0:0]
	w := d.c.logWin.get()
	hi := top
	for i := 0; i < d.depth; i++ {
		lo := d.floor
		if hi-d.floor+1 > w {
			lo = hi - w + 1
		}
		if r := d.rangeFor(lo); r != nil && i > 0 {
			break // already read below
		}
		r := &logRange{lo: lo, hi: hi, done: make(chan struct{})}
		d.ranges = append(d.ranges, r)
		d.batch = append(d.batch, r)
		go d.scan(r)
		if lo == d.floor {
			break
		}
		hi = lo - 1
	}
	return d.batch[0]
}

// scan reads r from its top down, in windows of the current width, narrowing on a refusal.
func (d *Discovery) scan(r *logRange) {
	defer close(r.done)
	select {
	case d.sem <- struct{}{}:
	case <-d.ctx.Done():
		r.err = d.ctx.Err()
		return
	}
	defer func() { <-d.sem }()
	win := &d.c.logWin
	cur := r.hi
	for {
		size := min(win.get(), cur-r.lo+1)
		lo := cur - size + 1
		evs, err := d.c.rangeLogs(d.ctx, d.owner, d.space, lo, cur)
		if err != nil {
			if d.ctx.Err() != nil {
				r.err = err
				return
			}
			d.mu.Lock()
			d.stats.Refusals++
			d.mu.Unlock()
			if noRangedLogs(err) {
				win.disable()
				r.err = err
				return
			}
			if !win.refused(size) {
				// refused even at the smallest window: an answer, not a lost request, means
				// this RPC serves no ranged logs; the exact-block walk is all there is
				if answered(err) {
					win.disable()
				}
				r.err = err
				return
			}
			continue
		}
		win.succeeded(size)
		d.mu.Lock()
		d.stats.Ranges++
		for _, ev := range evs {
			d.addHint(ev)
		}
		d.mu.Unlock()
		if lo == r.lo {
			return
		}
		cur = lo - 1
	}
}

// addHint keeps ev, once: overlapping ranges return the same event twice. d.mu is held.
func (d *Discovery) addHint(ev *EpochEvent) {
	k := hintKey{ev.Block, ev.Seq}
	for _, h := range d.hints[k] {
		if *h == *ev {
			return
		}
	}
	d.hints[k] = append(d.hints[k], ev)
}

// answered reports whether err is an answer of the RPC (a JSON-RPC error, an HTTP status),
// not a transport failure.
func answered(err error) bool {
	var re rpc.Error
	var he rpc.HTTPError
	return errors.As(err, &re) || errors.As(err, &he)
}

// noRangedLogs reports whether err says the RPC has no eth_getLogs at all.
func noRangedLogs(err error) bool {
	var re rpc.Error
	return errors.As(err, &re) && re.ErrorCode() == -32601
}

// rangeLogs is eth_getLogs over blocks from..to, filtered by the contract, the Epoch topic,
// owner and space, with few transport retries: a range that fails is narrowed, not waited
// for. Logs that do not decode or fall outside the filter are dropped: a range's events are
// hints, checked by Next.
func (c *Client) rangeLogs(ctx context.Context, owner common.Address, space common.Hash, from, to uint64) ([]*EpochEvent, error) {
	q := c.epochFilter(owner, space, from, to)
	var logs []types.Log
	err := c.doRetrying(ctx, min(c.opt.Retries, rangeRetries), func(ctx context.Context) (err error) {
		logs, err = c.eth.FilterLogs(ctx, q)
		return err
	}, "eth_getLogs")
	if err != nil {
		return nil, fmt.Errorf("read Epoch logs of blocks %d to %d: %w", from, to, err)
	}
	evs := make([]*EpochEvent, 0, len(logs))
	for i := range logs {
		l := &logs[i]
		if l.Removed {
			continue
		}
		ev, err := c.decodeEpochLog(l)
		if err != nil || ev.Owner != owner || ev.Space != space || ev.Block < from || ev.Block > to {
			continue
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

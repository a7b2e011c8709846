package replica

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/replica/store"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// PushOptions say what a push anchors.
type PushOptions struct {
	DryRun   bool
	Snapshot bool // one epoch with the whole state (compact, rekey)
	// OverSkipped lets a snapshot go on top of the chain head past epochs this machine's last
	// pull could not apply (kint's --over-skipped); without it such a snapshot is refused.
	OverSkipped bool
	// Confirmations is how many blocks to wait for after each transaction (kint's
	// --confirmations); 0: Options.Confirmations.
	Confirmations uint64
	// knownHead is the chain head as a poll just read it (nil: read it): a stale one costs a
	// reverted estimate (ErrChainMoved), never a wrong push
	knownHead *chain.Head
}

// EpochReceipt is one anchored epoch of a push, with what it cost.
type EpochReceipt struct {
	Seq               uint64 `json:"seq"`
	Block             uint64 `json:"block"`
	Tx                string `json:"tx"`
	Bucket            int    `json:"bucket"`
	Rows              int    `json:"rows"`
	Deleted           int    `json:"deleted"`
	CalldataBytes     int    `json:"calldata_bytes"`
	GasUsed           uint64 `json:"gas_used"`
	FloorGas          uint64 `json:"floor_gas"` // the EIP-7623 calldata floor of the transaction
	EffectiveGasPrice string `json:"effective_gas_price"`
	L1Fee             string `json:"l1_fee,omitempty"` // wei
	Cost              string `json:"cost_wei"`         // gas used at the effective price, plus the L1 fee
	L1FeeETH          string `json:"l1_fee_eth,omitempty"`
	CostETH           string `json:"cost_eth"`
	// ChainSeconds is the time spent in the chain's calls for this epoch: signing's nonce and
	// gas reads, the send, and the wait for its receipt and confirmations.
	ChainSeconds float64 `json:"chain_seconds"`
}

// PushReport says what a push did or, on a dry run, would do.
type PushReport struct {
	DryRun  bool            `json:"dry_run"`
	Rows    int             `json:"rows"`
	Deleted int             `json:"deleted"`
	Chunks  int             `json:"epochs"`
	Epochs  []EpochReceipt  `json:"anchored"`
	Held    []vault.HeldRow `json:"held,omitempty"`
	// Policy is the bucket policy the push followed; Raised the epochs that raised the vault's
	// bucket, and why.
	Policy string        `json:"bucket_policy"`
	Raised []BucketRaise `json:"bucket_raised,omitempty"`
	// Plan is a dry run's epochs, with their cost at GasPrice (wei; PriceNote says why there is
	// none). Gas, CostWei and L1FeeWei are totals: planned on a dry run, from the receipts after
	// a push. L1Note says why there is no L1 fee, where the chain reports none.
	Plan      []PlannedEpoch `json:"plan,omitempty"`
	GasPrice  string         `json:"gas_price_wei,omitempty"`
	PriceNote string         `json:"price_note,omitempty"`
	L1Note    string         `json:"l1_fee_note,omitempty"`
	Gas       uint64         `json:"gas"`
	CostWei   string         `json:"cost_wei"`
	CostETH   string         `json:"cost_eth"`
	L1FeeWei  string         `json:"l1_fee_wei,omitempty"`
	L1FeeETH  string         `json:"l1_fee_eth,omitempty"`
	// Seconds is the push's wall time, and ChainSeconds the part of it spent waiting on the
	// chain (the epochs' ChainSeconds): the rest is this machine's own work that sealing
	// ahead did not hide.
	Seconds      float64 `json:"seconds"`
	ChainSeconds float64 `json:"chain_seconds"`
}

// PushStage is a point in the sealing of one epoch where a test hook may act.
type PushStage int

const (
	StageSealed  PushStage = iota + 1 // sealed, not yet journaled or sent
	StageSent                         // journaled and sent, no receipt yet
	StageReceipt                      // the receipt is in; the epoch is not applied yet
	StageApplied                      // applied as this machine's own
)

func (s PushStage) String() string {
	return [...]string{"?", "sealed", "sent", "receipt", "applied"}[s]
}

// SetPushHook installs fn, called at each stage of each epoch a push seals; an error from it
// fails the push at that point, as a network error or a crash there would. For tests; nil
// removes it.
func (r *Replica) SetPushHook(fn func(stage PushStage, seq uint64) error) { r.pushHook = fn }

func (r *Replica) atStage(stage PushStage, seq uint64) error {
	if r.pushHook == nil {
		return nil
	}
	if err := r.pushHook(stage, seq); err != nil {
		return fmt.Errorf("epoch %d at %s: %w", seq, stage, err)
	}
	return nil
}

// Push anchors the staged rows.
func (r *Replica) Push(ctx context.Context, opt PushOptions) (*PushReport, error) {
	if err := r.refuseChange(); err != nil && !opt.DryRun {
		return nil, err
	}
	r.pushMu.Lock()
	defer r.pushMu.Unlock()
	return r.pushLocked(ctx, opt)
}

// pushLocked is Push with pushMu held by the caller.
func (r *Replica) pushLocked(ctx context.Context, opt PushOptions) (*PushReport, error) {
	if !opt.DryRun {
		task := "push"
		if opt.Snapshot {
			task = "compact"
		}
		ctx = withTracker(ctx, newTracker(ctx, task, 0))
	}
	r.pushing.Store(true)
	defer r.pushing.Store(false)
	start := time.Now()
	rep, err := r.push(ctx, opt)
	if !opt.DryRun && rep != nil && len(rep.Epochs) > 0 {
		if terr := r.recordBlockTimes(ctx); err == nil && terr != nil {
			err = fmt.Errorf("record block times: %w", terr)
		}
	}
	if !opt.DryRun {
		// the rows this push sealed and did not anchor stay staged; those it anchored, or that
		// changed back to what is anchored, are settled against the mirror
		if serr := r.store.EndSealing(); err == nil {
			err = serr
		}
	}
	if !opt.DryRun {
		if rep != nil {
			rep.Seconds = time.Since(start).Seconds()
			for _, e := range rep.Epochs {
				rep.ChainSeconds += e.ChainSeconds
			}
			rep.sumReceipts()
		}
		r.status.notePush(rep, err)
	} else {
		r.status.noteDryRun(rep, err)
	}
	return rep, err
}

func (r *Replica) push(ctx context.Context, opt PushOptions) (rep *PushReport, err error) {
	rep = &PushReport{DryRun: opt.DryRun, Policy: r.BucketPolicy(), CostWei: "0", CostETH: "0"}
	var c Chain
	if !opt.DryRun {
		if c, err = r.connect(ctx); err != nil {
			return rep, err
		}
		if err := r.recoverPending(ctx); err != nil {
			return rep, err
		}
	}
	gaps, err := r.store.Gaps()
	if err != nil {
		return rep, err
	}
	if g := openGaps(gaps, 0, 0); len(g) > 0 && !opt.Snapshot {
		return rep, fmt.Errorf("%w: epoch %d (%s); if it will never open, kintfs compact --over-skipped anchors a snapshot over it", ErrGapOpen, g[0].Seq, g[0].Reason)
	}
	if !opt.DryRun && !opt.Snapshot {
		r.awaitSettled(ctx)
	}
	feed, err := r.planPush(ctx, opt, rep)
	if err != nil || opt.DryRun {
		return rep, err
	}
	defer feed.close()
	head, err := r.pushBase(ctx, c, opt, gaps)
	if err != nil {
		return rep, err
	}
	if r.opt.SessionKey == nil {
		return rep, fmt.Errorf("%w: no session key on this machine (kintfs session-key create)", ErrNotAuthorized)
	}
	prevBucket, err := r.Bucket()
	if err != nil {
		return rep, err
	}
	first, ok, err := feed.next()
	if !ok {
		if err == nil {
			err = ErrNothingToPush
		}
		return rep, err
	}
	// Epochs are sealed in the background, each on top of the ones before it, while those
	// before them are sent (and the change set is still being split): an epoch's prev, bucket
	// floor and rows_root follow from the sealed epochs before it alone. The epochs sealed by
	// the time the last batch was journaled are signed and journaled together, in one synced
	// commit; each is then sent as soon as the window (how many may be in flight) has room,
	// and they land (wait for the receipt, apply as this machine's own) in order. An error
	// stops the push where it is, as a crash there would: what is journaled stays in the push
	// journal, and the next push's recovery lands, sends or drops each entry, in order.
	window := r.sendWindow(c, opt)
	own := r.newOwnCache()
	defer func() {
		if cerr := own.commit(); err == nil {
			err = cerr
		}
	}()
	var landed atomic.Uint64 // the newest epoch of this push applied
	seals := r.sealAhead(feed, first, head, prevBucket, opt.Snapshot, window, &landed)
	defer seals.stop()
	var (
		queue []*inFlight
		last  *chain.PreparedPush // the last epoch journaled, the one the next is signed after
	)
	land := func(keep int) error {
		for len(queue) > keep {
			if err := r.landFirst(ctx, c, rep, &queue, opt.Confirmations, own); err != nil {
				return err
			}
			landed.Store(rep.Epochs[len(rep.Epochs)-1].Seq)
		}
		return nil
	}
	for {
		if window == 1 {
			// a chain that cannot sign ahead signs an epoch only once the one before it landed
			if err := land(0); err != nil {
				return rep, err
			}
		}
		batch, end, endErr := seals.take(window)
		var sealErr error
		for i, se := range batch {
			if se.err != nil {
				batch, sealErr = batch[:i], se.err
				break
			}
			rep.Chunks++
			r.noteRaise(rep, se, prevBucket, rep.Policy)
			prevBucket = max(prevBucket, se.sealed.Bucket)
		}
		ready, err := r.journalBatch(ctx, c, batch, last, window, own)
		if len(ready) > 0 {
			last = ready[len(ready)-1].prep
		}
		// each goes out as soon as the window has room for it
		for i := 0; i < len(ready); i++ {
			serr := land(window - 1)
			if serr == nil {
				var sent bool
				sent, serr = r.sendJournaled(ctx, c, ready[i:])
				if sent {
					queue = append(queue, ready[i])
				}
			}
			if serr != nil {
				err = serr
				break
			}
		}
		if err == nil {
			err = sealErr
		}
		if err == nil && end {
			err = land(0)
		}
		if err != nil || end {
			if err == nil {
				err = endErr
			}
			return rep, err
		}
	}
}

// sealer seals a push's chunks one after another in the background (sealAhead), each on top
// of the epochs sealed before it, and hands them out in order.
type sealer struct {
	out  chan nextEpoch
	quit chan struct{}
	done chan struct{}
	feed *chunkFeed
	once sync.Once
}

// sealAhead starts sealing first, on head above prevBucket (one epoch of the whole state when
// snapshot), then every chunk feed cuts after it; up to depth sealed epochs wait to be taken.
// landed is the newest epoch of the push applied: the roots of those up to it are let go.
func (r *Replica) sealAhead(feed *chunkFeed, first seal.Chunk, head vault.Head, prevBucket int, snapshot bool, depth int, landed *atomic.Uint64) *sealer {
	s := &sealer{out: make(chan nextEpoch, depth), quit: make(chan struct{}), done: make(chan struct{}), feed: feed}
	go func() {
		defer close(s.done)
		var prior []store.SealedChanges // this push's epochs sealed and not applied yet, for the roots
		roots := r.store.NewRootView()
		c, bucket := first, prevBucket
		for {
			se := r.sealChunk(roots, c, prior, head, bucket, snapshot)
			if !s.put(nextEpoch{sealedEpoch: se}) || se.err != nil {
				return
			}
			prior = append(store.NotApplied(prior, landed.Load()), se.changes)
			head, bucket, snapshot = vault.Head{Seq: se.p.Seq, Digest: se.sealed.Digest}, max(bucket, se.sealed.Bucket), false
			next, ok, err := feed.next()
			if !ok {
				s.put(nextEpoch{end: true, err: err})
				return
			}
			c = next
		}
	}()
	return s
}

func (s *sealer) put(n nextEpoch) bool {
	select {
	case s.out <- n:
		return true
	case <-s.quit:
		return false
	}
}

// take waits for the next sealed epoch, then takes those already waiting behind it, up to n
// in all. end says the push's epochs are all taken; endErr is the splitter's error, if any.
func (s *sealer) take(n int) (batch []sealedEpoch, end bool, endErr error) {
	for len(batch) < n {
		var e nextEpoch
		if len(batch) == 0 {
			e = <-s.out
		} else {
			select {
			case e = <-s.out:
			default:
				return batch, false, nil
			}
		}
		if e.end {
			return batch, true, e.err
		}
		batch = append(batch, e.sealedEpoch)
		if e.sealedEpoch.err != nil {
			break
		}
	}
	return batch, false, nil
}

// stop ends the sealing and the split, and waits for them; it may be called more than once.
func (s *sealer) stop() {
	s.once.Do(func() { close(s.quit) })
	s.feed.close()
	<-s.done
}

// sendAhead bounds how many epochs of one push are in flight at once: sent, not yet landed. A
// node keeps a bounded number of one sender's pending transactions (16 in go-ethereum's pool
// by default), and each is an epoch held in memory here.
const sendAhead = 16

// sendWindow is how many epochs a push keeps in flight: one for a snapshot (a push of one
// epoch) or a chain that cannot sign ahead, else sendAhead (Options.SendAhead when set).
func (r *Replica) sendWindow(c Chain, opt PushOptions) int {
	if _, ok := c.(NextPreparer); !ok || opt.Snapshot {
		return 1
	}
	if r.opt.SendAhead > 0 {
		return r.opt.SendAhead
	}
	return sendAhead
}

// inFlight is an epoch sent and not landed yet.
type inFlight struct {
	se      sealedEpoch
	prep    *chain.PreparedPush
	onChain time.Duration
}

// journalBatch signs sealed epochs in order (each after the one before it, starting after
// last, the epoch this push journaled before them, when window allows more than one in
// flight) and journals them all in one synced commit; own caches their blobs. An error at an
// epoch leaves it and those after it out, and returns the epochs journaled before it.
func (r *Replica) journalBatch(ctx context.Context, c Chain, batch []sealedEpoch, last *chain.PreparedPush, window int, own *ownCache) ([]*inFlight, error) {
	var (
		out    []*inFlight
		pends  []store.PendingPush
		preErr error
	)
	for _, se := range batch {
		f, pend, err := r.prepareSend(ctx, c, se, last, window)
		if err != nil {
			preErr = err
			break
		}
		out, pends, last = append(out, f), append(pends, pend), f.prep
	}
	if len(out) == 0 {
		return nil, preErr
	}
	for _, f := range out {
		own.putBlob(f.se.p.Seq, f.se.sealed.Blob)
	}
	if err := r.store.PutPendingBatch(pends); err != nil {
		return nil, err
	}
	return out, preErr
}

// sendJournaled sends the first of journaled, the journaled epochs not sent yet, and moves its
// entry on to sent once the node took it; sent says the node took it, whatever the error. The
// node refusing it for want of funds clears the entries of all of them: none can land, and
// their rows stay staged.
func (r *Replica) sendJournaled(ctx context.Context, c Chain, journaled []*inFlight) (sent bool, err error) {
	f := journaled[0]
	p := f.se.p
	t := time.Now()
	if err := c.Send(ctx, f.prep); err != nil {
		if errors.Is(err, chain.ErrInsufficientFunds) {
			for _, g := range journaled {
				if derr := r.store.DeletePending(g.se.p.Seq); derr != nil {
					return false, derr
				}
			}
		}
		return false, fmt.Errorf("send epoch %d: %w", p.Seq, err)
	}
	f.onChain += time.Since(t)
	if err := r.atStage(StageSent, p.Seq); err != nil {
		return true, err
	}
	if err := r.store.SetPendingStage(p.Seq, store.JournalSent, 0); err != nil {
		return true, err
	}
	trackerOf(ctx).sentOne(p.Seq, fmt.Sprintf("epoch %d sent as %s", p.Seq, f.prep.Hash.Hex()))
	return true, nil
}

// prepareSend signs a sealed epoch to send after last and makes its journal entry.
func (r *Replica) prepareSend(ctx context.Context, c Chain, se sealedEpoch, last *chain.PreparedPush, window int) (*inFlight, store.PendingPush, error) {
	p, sealed := se.p, se.sealed
	if err := r.atStage(StageSealed, p.Seq); err != nil {
		return nil, store.PendingPush{}, err
	}
	t := time.Now()
	var (
		prep *chain.PreparedPush
		err  error
	)
	if np, ok := c.(NextPreparer); ok && last != nil && window > 1 {
		prep, err = np.PrepareNextPush(r.opt.SessionKey, last, r.vault.Owner, r.vault.Space, p.Prev, sealed.Blob)
	} else {
		prep, err = r.preparePush(ctx, c, p, sealed)
	}
	onChain := time.Since(t)
	if err == nil {
		err = r.checkGasPrice(prep)
	}
	var raw []byte
	if err == nil {
		raw, err = prep.Tx.MarshalBinary()
	}
	if err != nil {
		return nil, store.PendingPush{}, err
	}
	pend := store.PendingPush{Seq: p.Seq, Prev: p.Prev, Digest: sealed.Digest, Tx: prep.Hash, RawTx: raw,
		IDs: se.ids, Bucket: sealed.Bucket, Stage: store.JournalSealed}
	return &inFlight{se: se, prep: prep, onChain: onChain}, pend, nil
}

// checkGasPrice refuses a push priced above Options.MaxGasPrice, before it is journaled or
// sent: the rows stay staged and go out with a flush once the price falls or the cap is raised.
func (r *Replica) checkGasPrice(prep *chain.PreparedPush) error {
	capWei := r.opt.MaxGasPrice
	if capWei == nil || prep.GasPrice == nil || prep.GasPrice.Cmp(capWei) <= 0 {
		return nil
	}
	return fmt.Errorf("%w: the chain's gas price is %s gwei, the cap %s gwei; nothing was sent and the rows stay staged: flush again when the price falls, or raise the cap (KINT_MAX_GAS_PRICE_GWEI, unset for none)",
		ErrGasPriceCap, chain.FormatGwei(prep.GasPrice), chain.FormatGwei(capWei))
}

// landFirst lands the oldest epoch in flight: waits for its receipt and confirmations, applies
// it as this machine's own (own caches it) and adds it to the report.
func (r *Replica) landFirst(ctx context.Context, c Chain, rep *PushReport, queue *[]*inFlight, confirmations uint64, own *ownCache) error {
	f := (*queue)[0]
	er, err := r.landEpoch(ctx, c, f, confirmations, own)
	if err != nil {
		return err
	}
	*queue = (*queue)[1:]
	rep.Epochs = append(rep.Epochs, *er)
	return own.commitIfDue()
}

// planPush reads what the push anchors (marking it sealing unless on a dry run), holds what
// cannot be anchored, and starts cutting the rest into the epochs to seal: one snapshot of the
// whole state, or chunks of the changes. It fills in rep's counts (the number of epochs only
// on a dry run); ErrNothingToPush when there is nothing to anchor.
func (r *Replica) planPush(ctx context.Context, opt PushOptions, rep *PushReport) (*chunkFeed, error) {
	if !opt.Snapshot && !opt.DryRun {
		return r.planChunks(rep)
	}
	rows, dels, held, err := r.store.CollectStaged(!opt.DryRun)
	if err != nil {
		return nil, err
	}
	if rows, held, err = r.holdUnapplicable(rows, held); err != nil {
		return nil, err
	}
	if !opt.Snapshot {
		if rows, held, err = r.holdTooLarge(rows, held); err != nil {
			return nil, err
		}
	}
	rep.Held, rep.Rows, rep.Deleted = held, len(rows), len(dels)
	if !opt.Snapshot && len(rows) == 0 && len(dels) == 0 {
		return nil, ErrNothingToPush
	}
	if opt.Snapshot {
		full, err := r.snapshotRows(rows, dels)
		if err != nil {
			return nil, err
		}
		rep.Chunks = 1
		snap := seal.Chunk{Rows: full, Deleted: dels}
		if opt.DryRun {
			return nil, r.planDryRun(ctx, rep, []seal.Chunk{snap}, true)
		}
		return feedSnapshot(snap), nil
	}
	bucket, headroom, err := r.cutBucket()
	if err != nil {
		return nil, err
	}
	chunks, err := seal.ChunkDiffBucket(rows, dels, bucket, headroom)
	if err != nil {
		return nil, err
	}
	rep.Chunks = len(chunks)
	return nil, r.planDryRun(ctx, rep, chunks, false)
}

// planChunks reads what a push of the changes anchors, the rows that have settled, and starts
// cutting them into epochs, each row's body read only when the cut reaches it: a push holds
// the bodies of the epochs in flight, not of the whole change set.
func (r *Replica) planChunks(rep *PushReport) (*chunkFeed, error) {
	rows, err := r.store.CollectForPush(pushRefusal)
	if err != nil {
		return nil, err
	}
	rep.Held, rep.Rows, rep.Deleted = rows.Held, len(rows.Rows), len(rows.Dels)
	if len(rows.Rows) == 0 && len(rows.Dels) == 0 {
		rows.Close()
		return nil, ErrNothingToPush
	}
	bucket, headroom, err := r.cutBucket()
	if err != nil {
		rows.Close()
		return nil, err
	}
	return feedChunks(rows, bucket, headroom), nil
}

// pushRefusal is why a push holds row, or "": as holdUnapplicable and holdTooLarge do.
func pushRefusal(row *seal.Row) string {
	if why := store.UnapplicableReason(row); why != "" {
		return why
	}
	return tooLarge(row)
}

// settleBound bounds how long a push waits for new state and reference rows to settle.
const settleBound = 4 * time.Second

// awaitSettled waits, a bounded time, until the new state and reference rows staged have
// settled (store.SettleWait): a temporary file sed -i or an editor writes and renames at
// once is then gone before the push reads what to seal, and is never anchored. What is still
// unsettled after it stays staged for the next push.
func (r *Replica) awaitSettled(ctx context.Context) {
	deadline := time.Now().Add(settleBound)
	for {
		w, left := r.store.SettleWait(), time.Until(deadline)
		if w <= 0 || left <= 0 {
			return
		}
		t := time.NewTimer(min(w, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// holdUnapplicable holds the staged rows this code could not apply once anchored, so that
// they block nothing else, and returns the rest.
func (r *Replica) holdUnapplicable(rows []seal.Row, held []vault.HeldRow) ([]seal.Row, []vault.HeldRow, error) {
	return r.holdWhere(rows, held, store.UnapplicableReason)
}

// holdTooLarge holds each row no epoch can carry even alone, before the rest is split, so
// that splitting never stops halfway through a push.
func (r *Replica) holdTooLarge(rows []seal.Row, held []vault.HeldRow) ([]seal.Row, []vault.HeldRow, error) {
	return r.holdWhere(rows, held, tooLarge)
}

// tooLarge is why no epoch can carry row even alone, or "".
func tooLarge(row *seal.Row) string {
	if err := seal.FitsAlone(row); err != nil {
		return err.Error() // a *seal.RowTooLargeError, naming the row and the limit
	}
	return ""
}

// holdWhere holds each row that reason gives a reason for, adding it to held, and returns the
// rest.
func (r *Replica) holdWhere(rows []seal.Row, held []vault.HeldRow, reason func(*seal.Row) string) ([]seal.Row, []vault.HeldRow, error) {
	out := rows[:0]
	for i := range rows {
		row := rows[i]
		why := reason(&row)
		if why == "" {
			out = append(out, row)
			continue
		}
		if err := r.store.Hold(row, why); err != nil {
			return nil, nil, err
		}
		held = append(held, vault.HeldRow{Tier: row.Tier, Category: row.Category, Key: row.Key, Reason: why})
	}
	return out, held, nil
}

// pushBase is the head the push's first epoch goes on: the mirror's, when the chain is still
// there. The owner's snapshot: on a machine whose pull stopped at an epoch it cannot apply, a
// snapshot of this store goes on top of the chain head (with OverSkipped), whatever sits
// between. Otherwise a chain that moved is ErrChainMoved.
func (r *Replica) pushBase(ctx context.Context, c Chain, opt PushOptions, gaps []vault.Gap) (vault.Head, error) {
	mirror, err := r.MirrorHead()
	if err != nil {
		return mirror, err
	}
	var ch chain.Head
	if k := opt.knownHead; k != nil && !opt.Snapshot && k.Seq == mirror.Seq && k.Digest == mirror.Digest {
		ch = *k
	} else if ch, err = c.Head(ctx, r.vault.Owner, r.vault.Space); err != nil {
		return mirror, fmt.Errorf("read head: %w", err)
	}
	if ch.Seq == mirror.Seq && ch.Digest == mirror.Digest {
		return mirror, nil
	}
	open := openGaps(gaps, mirror.Seq, 0)
	if !opt.Snapshot || len(open) == 0 || ch.Seq <= mirror.Seq {
		return mirror, fmt.Errorf("%w: the chain is at seq %d, this machine last saw seq %d; pull first", ErrChainMoved, ch.Seq, mirror.Seq)
	}
	if !opt.OverSkipped {
		return mirror, fmt.Errorf("%w: the last pull stopped at epoch %d, which this machine cannot apply (%s); if it will never open (revoke the key that wrote it first), --over-skipped anchors this snapshot on the chain head past it",
			ErrGapOpen, open[0].Seq, open[0].Reason)
	}
	seqs := make([]uint64, len(open))
	for i, g := range open {
		seqs[i] = g.Seq
	}
	r.warnf("push: OVERRIDE, anchoring a snapshot on top of chain head seq %d (%s) although this machine stopped at seq %d and could not apply epoch(s) %v",
		ch.Seq, ch.Digest.Hex()[2:14], mirror.Seq, seqs)
	return vault.Head{Seq: ch.Seq, Digest: ch.Digest, Block: ch.Block}, nil
}

// snapshotRows is the whole state after the staged changes: the mirror with staged rows
// replacing and staged deletions removing.
func (r *Replica) snapshotRows(staged []seal.Row, dels []seal.Deleted) ([]seal.Row, error) {
	byID := map[string]seal.Row{}
	err := r.MirrorRows(func(row *seal.Row) error {
		byID[row.ID()] = *row
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, d := range dels {
		delete(byID, d.ID())
	}
	for _, row := range staged {
		byID[row.ID()] = row
	}
	out := make([]seal.Row, 0, len(byID))
	for _, row := range byID {
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	p := &seal.Plaintext{Tenant: r.vault.Tenant, Space: r.vault.Space, Rows: out, Deleted: dels, NRows: len(out), Snapshot: true}
	if err := seal.SnapshotFits(p); err != nil {
		return nil, err
	}
	return out, nil
}

// sealedEpoch is a chunk sealed as the epoch after a head, or why it could not be.
type sealedEpoch struct {
	p        *seal.Plaintext
	sealed   *seal.Sealed
	ids      []string // the rows its push journal entry names (store.JournalIDs)
	raisedBy string   // the chunk's RaisedBy: the row its bucket was raised for
	changes  store.SealedChanges
	err      error
}

// nextEpoch is an epoch sealed ahead, or the end of the push's chunks (with the splitter's
// error, if it failed).
type nextEpoch struct {
	sealedEpoch
	end bool
	err error
}

// sealChunk seals chunk as the epoch after head, on the mirror as the anchored epochs up to
// head leave it. The epochs of prior (this push's sealed before it) may not have been applied
// yet: those the mirror does not hold are counted into the root as well (the chunks of one
// push touch distinct rows). It writes nothing, so it may run while the epoch before it is
// being applied.
func (r *Replica) sealChunk(roots *store.RootView, chunk seal.Chunk, prior []store.SealedChanges, head vault.Head, prevBucket int, snapshot bool) sealedEpoch {
	changes := store.ChunkChanges(head.Seq+1, chunk)
	root, nRows, err := roots.RootAfter(changes, prior, snapshot)
	if err != nil {
		return sealedEpoch{err: err}
	}
	p := &seal.Plaintext{Tenant: r.vault.Tenant, Space: r.vault.Space, Seq: head.Seq + 1, Prev: head.Digest,
		Rows: chunk.Rows, Deleted: chunk.Deleted, RowsRoot: root, NRows: nRows,
		CreatedAt: seal.FormatCreatedAt(time.Now()), Snapshot: snapshot}
	if err := store.CheckApplicable(p); err != nil {
		return sealedEpoch{err: fmt.Errorf("refusing to seal epoch %d, this code could not apply it: %w", p.Seq, err)}
	}
	ids := store.JournalIDs(p)
	sealed, err := r.sealEpoch(p, ids, prevBucket)
	return sealedEpoch{p: p, sealed: sealed, ids: ids, raisedBy: chunk.RaisedBy, changes: changes, err: err}
}

// sealEpoch seals p under the vault's data key, on top of the bucket ratchet (prevBucket), and
// checks that its push journal entry, naming ids, fits.
func (r *Replica) sealEpoch(p *seal.Plaintext, ids []string, prevBucket int) (*seal.Sealed, error) {
	wraps, err := r.vault.WrapList()
	if err != nil {
		return nil, err
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	sealed, err := seal.Seal(p, r.epochContext(p.Seq, p.Prev), r.opt.DEK, wraps, prevBucket, nonce)
	if err != nil {
		return nil, fmt.Errorf("seal epoch %d: %w", p.Seq, err)
	}
	if err := store.JournalFits(ids, len(sealed.Blob)); err != nil {
		return nil, fmt.Errorf("refusing to send epoch %d: %w", p.Seq, err)
	}
	return sealed, nil
}

// reverted tells why a sent push reverted: another machine anchored its seq first (the race
// for the next seq is lost: ErrChainMoved, and the rows go out with the next flush), or
// something else (ErrReverted). The journal entry is cleared either way: the transaction is
// mined and can never land.
func (r *Replica) reverted(ctx context.Context, c Chain, p *store.PendingPush, cause error) error {
	if err := r.store.DeletePending(p.Seq); err != nil {
		return err
	}
	head, herr := c.Head(ctx, r.vault.Owner, r.vault.Space)
	if herr == nil && head.Seq >= p.Seq {
		err := fmt.Errorf("%w: another machine anchored seq %d first (this push's transaction %s: %w); its rows stay here and go out with the next flush",
			ErrChainMoved, p.Seq, p.Tx.Hex(), cause)
		r.warnf("push: lost the race for seq %d to another machine; the rows stay here and go out with the next flush", p.Seq)
		return err
	}
	return fmt.Errorf("%w: epoch %d sent as %s: %w; its rows stay staged", ErrReverted, p.Seq, p.Tx.Hex(), cause)
}

// preparePush signs the transaction of a sealed epoch.
func (r *Replica) preparePush(ctx context.Context, c Chain, p *seal.Plaintext, sealed *seal.Sealed) (*chain.PreparedPush, error) {
	prep, err := c.PreparePush(ctx, r.opt.SessionKey, r.vault.Owner, r.vault.Space, p.Prev, sealed.Blob)
	switch {
	case errors.Is(err, chain.ErrStaleHead):
		return nil, fmt.Errorf("%w: %v", ErrChainMoved, err)
	case errors.Is(err, chain.ErrNotAuthorized), errors.Is(err, chain.ErrAuthorizationExpired):
		return nil, fmt.Errorf("%w: session key %s (%v): authorize it with kintfs authorize", ErrNotAuthorized, crypto.PubkeyToAddress(r.opt.SessionKey.PublicKey).Hex(), err)
	}
	return prep, err
}

// landEpoch waits for an epoch in flight and applies it as this machine's own.
func (r *Replica) landEpoch(ctx context.Context, c Chain, f *inFlight, confirmations uint64, own *ownCache) (*EpochReceipt, error) {
	if confirmations == 0 {
		confirmations = r.opt.Confirmations
	}
	p, sealed, prep := f.se.p, f.se.sealed, f.prep
	t := time.Now()
	rc, err := c.WaitPush(ctx, prep, r.vault.Owner, r.vault.Space, confirmations)
	onChain := f.onChain + time.Since(t)
	if errors.Is(err, chain.ErrTxFailed) {
		return nil, r.reverted(ctx, c, &store.PendingPush{Seq: p.Seq, Tx: prep.Hash}, err)
	}
	if err != nil {
		return nil, fmt.Errorf("epoch %d sent as %s: %w", p.Seq, prep.Hash.Hex(), err)
	}
	if err := r.store.SetPendingStage(p.Seq, store.JournalReceipt, rc.Block); err != nil {
		return nil, err
	}
	if err := r.atStage(StageReceipt, p.Seq); err != nil {
		return nil, err
	}
	info := vault.EpochInfo{Seq: p.Seq, Block: rc.Block, Tx: rc.TxHash.Hex(), Digest: sealed.Digest, Prev: p.Prev,
		Bucket: sealed.Bucket, RowsRoot: p.RowsRoot, Writer: rc.Event.Writer, CreatedAt: p.CreatedAt,
		Snapshot: p.Snapshot, NRows: p.NRows, Rows: len(p.Rows), Deleted: len(p.Deleted)}
	if err := r.adopt(&info, rc.Event.PrevBlock, p, sealed.Plaintext, own); err != nil {
		return nil, err
	}
	if err := r.atStage(StageApplied, p.Seq); err != nil {
		return nil, err
	}
	line := fmt.Sprintf("epoch %d anchored in block %d (%d rows, %d deleted, bucket %d, gas %d, tx %s, %s ETH)",
		p.Seq, rc.Block, len(p.Rows), len(p.Deleted), sealed.Bucket, rc.GasUsed, rc.TxHash.Hex(), chain.FormatETH(rc.Cost))
	if t := trackerOf(ctx); t != nil {
		t.landed(p.Seq, int64(len(sealed.Blob)), line) // the caller shows it, once
	} else {
		r.logf("push: %s", line)
	}
	er := epochReceipt(p, sealed, prep, rc)
	er.ChainSeconds = onChain.Seconds()
	return er, nil
}

// epochReceipt is the report of one anchored epoch.
func epochReceipt(p *seal.Plaintext, sealed *seal.Sealed, prep *chain.PreparedPush, rc *chain.PushReceipt) *EpochReceipt {
	er := &EpochReceipt{Seq: p.Seq, Block: rc.Block, Tx: rc.TxHash.Hex(), Bucket: sealed.Bucket, Rows: len(p.Rows),
		Deleted: len(p.Deleted), CalldataBytes: len(prep.Tx.Data()), GasUsed: rc.GasUsed, FloorGas: chain.CalldataFloor(prep.Tx.Data()),
		EffectiveGasPrice: bigString(rc.EffectiveGasPrice), Cost: bigString(rc.Cost), CostETH: chain.FormatETH(rc.Cost)}
	if rc.L1Fee != nil {
		er.L1Fee, er.L1FeeETH = rc.L1Fee.String(), chain.FormatETH(rc.L1Fee)
	}
	return er
}

// adopt applies an epoch this machine sealed and clears its journal entry: at once, or with
// own (a push under way) once own has made its cache files durable.
func (r *Replica) adopt(info *vault.EpochInfo, prevBlock uint64, p *seal.Plaintext, plaintext []byte, own *ownCache) error {
	// The bucket first, so a crash during the apply leaves it raised. Without own (a
	// recovery), the caller cached the epoch first.
	if err := r.raiseBucket(info.Bucket); err != nil {
		return err
	}
	// the apply is made durable by the next synced commit, which comes after it in the logs
	// (the next epoch's journal entry, or the clear of this one): a crash before it leaves the
	// journal entry, and the recovery applies the epoch again
	if _, _, err := r.store.ApplyEpoch(*info, p, store.ApplyOptions{Own: true, NoSync: true}); err != nil {
		return fmt.Errorf("apply own epoch %d: %w", info.Seq, err)
	}
	if info.Snapshot {
		// a snapshot carries the whole state: the gaps under it are stepped over
		gaps, err := r.store.Gaps()
		if err != nil {
			return err
		}
		if err := r.store.SetGaps(openGaps(gaps, info.Seq, 0)); err != nil {
			return err
		}
	}
	if own != nil {
		own.putOpened(info, prevBlock, plaintext)
		return nil
	}
	return r.clearLanded([]uint64{info.Seq}, vault.Head{Seq: info.Seq, Digest: info.Digest, Block: info.Block})
}

// prepared is the journaled transaction, signed as it was first sent, ready to resend or wait
// for: the same bytes, so it can never land twice.
func prepared(p *store.PendingPush) (*chain.PreparedPush, error) {
	var tx types.Transaction
	if err := tx.UnmarshalBinary(p.RawTx); err != nil {
		return nil, fmt.Errorf("push journal entry %d: %w", p.Seq, err)
	}
	return &chain.PreparedPush{Tx: &tx, Hash: tx.Hash(), Digest: p.Digest, Nonce: tx.Nonce()}, nil
}

// recoverPending settles push journal entries left by a crash: an epoch that landed is adopted
// as this machine's own, one still pending is waited for or resent (the same signed
// transaction, so it can never land twice), and one whose seq another machine took is dropped
// (its rows are still staged).
func (r *Replica) recoverPending(ctx context.Context) error {
	pend, err := r.PendingPushes()
	if err != nil || len(pend) == 0 {
		return err
	}
	c := r.Client()
	for i := range pend {
		if err := r.recoverOne(ctx, c, &pend[i]); err != nil {
			return err
		}
	}
	return nil
}

// recoverOne settles one push journal entry. The chain decides, but the entry's stage says
// what to ask it: an entry whose receipt was seen is adopted from the block it names once the
// chain's event there is this epoch; any other (or one whose block no longer holds it) is
// looked up from the head, and resent while the chain still stands where it was prepared. A
// sealed entry may have been sent before a crash, so it is looked up too.
func (r *Replica) recoverOne(ctx context.Context, c Chain, p *store.PendingPush) error {
	mirror, err := r.MirrorHead()
	if err != nil {
		return err
	}
	if mirror.Seq >= p.Seq {
		return r.settleApplied(p)
	}
	if p.Stage == store.JournalReceipt && p.Block != 0 {
		ev, err := c.EpochAt(ctx, r.vault.Owner, r.vault.Space, p.Block, p.Seq)
		if err == nil && ev.Digest == p.Digest {
			return r.adoptEvent(p, ev, p.Block)
		}
		r.logf("push journal: epoch %d: its receipt named block %d, which does not hold it now; asking the chain where it is", p.Seq, p.Block)
	}
	head, err := c.Head(ctx, r.vault.Owner, r.vault.Space)
	if err != nil {
		return fmt.Errorf("read head: %w", err)
	}
	if head.Seq < p.Seq {
		if head.Seq != p.Seq-1 || head.Digest != p.Prev || mirror.Seq != p.Seq-1 {
			return r.dropPending(p, "the chain moved")
		}
		if resent, err := r.resendPending(ctx, c, p); err != nil || !resent {
			return err
		}
	}
	block, landed, err := r.pendingBlock(ctx, c, p, head)
	if err != nil || !landed {
		return err
	}
	return r.adoptPending(ctx, c, p, block)
}

// dropPending clears a journal entry whose epoch will not land as this machine's; its rows
// stay staged.
func (r *Replica) dropPending(p *store.PendingPush, why string) error {
	r.warnf("push journal: dropping epoch %d (%s); its rows stay here: staged where the chain did not change them, beside the chain's version as a conflict copy where it did (see conflicts in .kint/status)", p.Seq, why)
	return r.store.DeletePending(p.Seq)
}

// settleApplied clears the entry of an epoch at or below the mirror: applied before the
// restart when the mirror holds it, else another machine's epoch took its seq.
func (r *Replica) settleApplied(p *store.PendingPush) error {
	rec, _, err := r.store.EpochRecord(p.Seq)
	if err != nil {
		return err
	}
	if rec.Digest != p.Digest {
		return r.dropPending(p, "the mirror holds another epoch at that seq")
	}
	// a crash after the apply, before the entry was cleared: nothing is lost, but the epoch's
	// cache files may not have been made durable yet
	var prevBlock uint64
	if p.Seq > 1 {
		prev, _, err := r.store.EpochRecord(p.Seq - 1)
		if err != nil {
			return err
		}
		prevBlock = prev.Block // 0 when there is no record: unknown
	}
	if err := r.recacheOwn(p, &rec, prevBlock, nil); err != nil {
		return fmt.Errorf("push journal: epoch %d: write its cache files: %w", p.Seq, err)
	}
	r.logf("push journal: epoch %d was applied before the restart; clearing its entry", p.Seq)
	return r.store.DeletePending(p.Seq)
}

// resendPending sends the journaled transaction again, when the chain still stands where it
// was prepared; resent is false when the entry was dropped instead.
func (r *Replica) resendPending(ctx context.Context, c Chain, p *store.PendingPush) (resent bool, err error) {
	prep, err := prepared(p)
	if err != nil {
		return false, err
	}
	if err := c.Send(ctx, prep); err != nil {
		return false, r.dropPending(p, "resend failed: "+err.Error())
	}
	r.logf("push journal: resent epoch %d (%s)", p.Seq, p.Tx.Hex())
	return true, nil
}

// pendingBlock is the block the journaled transaction landed in, waiting for it when it is
// known but not mined yet; landed is false when the entry was dropped instead.
func (r *Replica) pendingBlock(ctx context.Context, c Chain, p *store.PendingPush, head chain.Head) (block uint64, landed bool, err error) {
	found, block, err := c.TxStatus(ctx, p.Tx)
	if err != nil {
		return 0, false, err
	}
	if !found {
		if head.Seq >= p.Seq {
			// never sent (or long gone) while another machine took the seq
			return 0, false, r.dropPending(p, "another machine took seq "+fmt.Sprint(p.Seq))
		}
		return 0, false, fmt.Errorf("epoch %d sent as %s: the node does not know the transaction; it stays in the push journal", p.Seq, p.Tx.Hex())
	}
	if block != 0 {
		return block, true, nil
	}
	// known but not mined yet (just resent, or still in the pool): wait for it, as sendEpoch
	// would have
	prep, err := prepared(p)
	if err != nil {
		return 0, false, err
	}
	rc, err := c.WaitPush(ctx, prep, r.vault.Owner, r.vault.Space, r.opt.Confirmations)
	if err != nil {
		if errors.Is(err, chain.ErrTxFailed) {
			return 0, false, r.dropPending(p, "its transaction reverted: another machine took seq "+fmt.Sprint(p.Seq))
		}
		return 0, false, fmt.Errorf("epoch %d sent as %s: %w", p.Seq, p.Tx.Hex(), err)
	}
	return rc.Block, true, nil
}

// adoptPending adopts the journaled epoch that landed in block as this machine's own, when
// the chain's event there is it. An event that cannot be read now (the node failed to answer)
// keeps the entry for the next push, which asks again: only the chain's answer drops it.
func (r *Replica) adoptPending(ctx context.Context, c Chain, p *store.PendingPush, block uint64) error {
	ev, err := c.EpochAt(ctx, r.vault.Owner, r.vault.Space, block, p.Seq)
	var none *chain.NoEventError
	switch {
	case errors.As(err, &none):
		return r.dropPending(p, fmt.Sprintf("its transaction landed in block %d, which holds no epoch %d", block, p.Seq))
	case err != nil:
		return fmt.Errorf("epoch %d sent as %s landed in block %d, but its event cannot be read: %w; it stays in the push journal, and the next flush asks again", p.Seq, p.Tx.Hex(), block, err)
	case ev.Digest != p.Digest:
		return r.dropPending(p, "the epoch at that seq is not this machine's")
	}
	return r.adoptEvent(p, ev, block)
}

// adoptEvent adopts the journaled epoch as this machine's own: ev, its event in block.
func (r *Replica) adoptEvent(p *store.PendingPush, ev *chain.EpochEvent, block uint64) error {
	j, err := r.openJournaled(p)
	if err != nil {
		return err
	}
	pt := j.pt
	info := vault.EpochInfo{Seq: p.Seq, Block: block, Tx: p.Tx.Hex(), Digest: p.Digest, Prev: p.Prev, Bucket: p.Bucket,
		RowsRoot: pt.RowsRoot, Writer: ev.Writer, CreatedAt: pt.CreatedAt, Snapshot: pt.Snapshot, NRows: pt.NRows,
		Rows: len(pt.Rows), Deleted: len(pt.Deleted)}
	// the cache first, so a crash during the apply (which the next open finishes) leaves
	// nothing of it undone
	if err := r.recacheOwn(p, &info, ev.PrevBlock, j); err != nil {
		return fmt.Errorf("cache epoch %d: %w", p.Seq, err)
	}
	if err := r.adopt(&info, ev.PrevBlock, pt, j.raw, nil); err != nil {
		return err
	}
	r.logf("push journal: adopted epoch %d as this machine's own (%s)", p.Seq, p.Tx.Hex())
	return nil
}

func bigString(b *big.Int) string {
	if b == nil {
		return "0"
	}
	return b.String()
}

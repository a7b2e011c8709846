package replica

import (
	"context"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
	"kintfs/replica/store"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// History on every machine. A pull that stops at a snapshot applies the snapshot and never
// the epochs under it, so the history index has a hole there. The backfill walks the epochs
// of each hole oldest first, checks each exactly as a pull does (digest, prev, GCM, rows_root
// against the state replayed from the epochs before it) and records its versions, without
// touching the mirror. Each epoch is recorded on its own, so a backfill stopped anywhere goes
// on from there.

// BackfillReport says what a backfill did.
type BackfillReport struct {
	Recorded int         `json:"recorded"` // epochs whose versions it recorded
	Missing  int         `json:"missing"`  // epochs still not recorded
	Skipped  []vault.Gap `json:"skipped,omitempty"`
	RPCCalls uint64
}

// BackfillOptions bound a backfill.
type BackfillOptions struct {
	// Max is how many epochs to record before returning (0: all).
	Max int
	// Pause waits between epochs, so a background backfill keeps to a bounded rate.
	Pause time.Duration
}

// Backfill records the versions of the epochs the mirror stepped over, oldest hole first.
func (r *Replica) Backfill(ctx context.Context, o BackfillOptions) (*BackfillReport, error) {
	r.pushMu.Lock()
	defer r.pushMu.Unlock()
	c, err := r.connect(ctx)
	if err != nil {
		return nil, err
	}
	before := c.Stats()
	rep, err := r.runBackfill(ctx, o)
	rep.RPCCalls = c.Stats().Calls - before.Calls
	return rep, err
}

// runBackfill is Backfill under pushMu, noting the outcome for the status.
func (r *Replica) runBackfill(ctx context.Context, o BackfillOptions) (*BackfillReport, error) {
	rep := &BackfillReport{}
	holes, err := r.store.HistoryHoles()
	if err == nil {
		if len(holes) > 0 {
			r.status.noteBackfillStart()
		}
		total := 0
		for _, h := range holes {
			total += int(h.Hi - h.Lo + 1)
		}
		if o.Max > 0 {
			total = min(total, o.Max)
		}
		ctx = withTracker(ctx, newTracker(ctx, "backfill", total))
		err = r.backfill(ctx, holes, o, rep)
	}
	// the epochs just recorded get their block times before the status calls history done
	if terr := r.recordBlockTimes(ctx); err == nil && terr != nil {
		err = fmt.Errorf("record block times: %w", terr)
	}
	if holes, herr := r.store.HistoryHoles(); herr == nil {
		for _, h := range holes {
			rep.Missing += int(h.Hi - h.Lo + 1)
		}
	}
	r.status.noteBackfill(rep, err)
	return rep, err
}

func (r *Replica) backfill(ctx context.Context, holes []store.HistoryHole, o BackfillOptions, rep *BackfillReport) error {
	skipped, err := r.store.HistorySkipped()
	if err != nil {
		return err
	}
	for _, h := range holes {
		if stuck(skipped, h) {
			continue
		}
		if err := r.fillHole(ctx, h, o, rep); err != nil {
			return err
		}
		if o.Max > 0 && rep.Recorded >= o.Max {
			return nil
		}
	}
	return nil
}

// stuck reports whether the hole starts at an epoch already found unopenable: nothing under
// it can be checked, so it stays a hole.
func stuck(skipped []vault.Gap, h store.HistoryHole) bool {
	for _, g := range skipped {
		if g.Seq == h.Lo {
			return true
		}
	}
	return false
}

// fillHole walks the events of h from the snapshot above it down, then fetches, checks and
// records them oldest first, a batch of blobs at a time.
func (r *Replica) fillHole(ctx context.Context, h store.HistoryHole, o BackfillOptions, rep *BackfillReport) error {
	evs, err := r.holeEvents(ctx, h)
	if err != nil {
		return err
	}
	state, err := r.store.StateAt(h.Below)
	if err != nil {
		return err
	}
	// oldest first: evs[len-1] is epoch lo, evs[0] the snapshot above
	for end := len(evs); end > 1; {
		start := max(end-fetchMax, 1)
		batch := make([]walked, 0, end-start)
		for i := end - 1; i >= start; i-- {
			batch = append(batch, walked{ev: evs[i]})
		}
		var fr PullReport
		if _, err := r.fetch(ctx, batch, 0, &fr); err != nil {
			return err
		}
		if err := r.stampTimes(ctx, batch, 0); err != nil {
			return err
		}
		if done, err := r.recordBatch(ctx, h, evs[0], batch, state, o, rep); done || err != nil {
			return err
		}
		end = start
	}
	return nil
}

// holeEvents walks the events of h from the snapshot above it down to its oldest epoch,
// checking that they chain up and that they join the recorded epochs on both sides. The
// result is newest first: the snapshot above, then epochs hi down to lo.
func (r *Replica) holeEvents(ctx context.Context, h store.HistoryHole) ([]*chain.EpochEvent, error) {
	var floor uint64
	if h.Below != nil {
		floor = h.Below.Block
	}
	d := r.Client().NewDiscovery(ctx, r.vault.Owner, r.vault.Space, floor)
	defer d.Close()
	above, err := d.Next(ctx, h.Above.Block, h.Above.Seq, h.Above.Digest)
	if err != nil {
		return nil, err
	}
	if above.Digest != h.Above.Digest {
		return nil, fmt.Errorf("%w: the chain has digest %s at seq %d, this machine applied %s", ErrFork, short(above.Digest), above.Seq, short(h.Above.Digest))
	}
	evs := []*chain.EpochEvent{above} // newest first
	for seq, block := h.Hi, above.PrevBlock; seq >= h.Lo; seq-- {
		ev, err := d.Next(ctx, block, seq, evs[len(evs)-1].Prev)
		if err != nil {
			return nil, err
		}
		if next := evs[len(evs)-1]; next.Prev != ev.Digest {
			return nil, fmt.Errorf("%w: epoch %d names prev %s but epoch %d has digest %s", ErrStaleRPC, next.Seq, short(next.Prev), seq, short(ev.Digest))
		}
		evs = append(evs, ev)
		block = ev.PrevBlock
	}
	if oldest := evs[len(evs)-1]; h.Below != nil && oldest.Prev != h.Below.Digest {
		return nil, fmt.Errorf("%w: epoch %d names prev %s, this machine recorded %s at seq %d", ErrFork, oldest.Seq, short(oldest.Prev), short(h.Below.Digest), h.Below.Seq)
	}
	return evs, nil
}

// recordBatch checks and records the fetched epochs of batch, oldest first, stepping state
// along. done is true when the backfill of h stops here: an epoch that cannot be recorded
// (noted as skipped), the hole filled (closed at the snapshot above), or o.Max reached.
func (r *Replica) recordBatch(ctx context.Context, h store.HistoryHole, above *chain.EpochEvent, batch []walked, state *store.ReplayState, o BackfillOptions, rep *BackfillReport) (done bool, err error) {
	for _, w := range batch {
		if err := ctx.Err(); err != nil {
			return true, err
		}
		opened, reason := r.openForHistory(w, state)
		if reason != "" {
			return true, r.skipHistory(vault.Gap{Seq: w.ev.Seq, Block: w.ev.Block, Reason: reason, SupersededBy: h.Above.Seq}, rep)
		}
		if err := r.recordHistory(w, opened, state); err != nil {
			return true, err
		}
		state.Step(opened.Plaintext)
		rep.Recorded++
		trackerOf(ctx).landed(w.ev.Seq, int64(len(w.blob)), fmt.Sprintf("epoch %d recorded in history (block %d)", w.ev.Seq, w.ev.Block))
		if w.ev.Seq == h.Hi {
			return true, r.closeHole(ctx, above, state)
		}
		if o.Max > 0 && rep.Recorded >= o.Max {
			return true, nil
		}
		if o.Pause > 0 {
			select {
			case <-ctx.Done():
				return true, ctx.Err()
			case <-time.After(o.Pause):
			}
		}
	}
	return false, nil
}

// skipHistory records g, an epoch under a snapshot that cannot be recorded: the hole stays.
func (r *Replica) skipHistory(g vault.Gap, rep *BackfillReport) error {
	rep.Skipped = append(rep.Skipped, g)
	r.warnf("history: epoch %d cannot be recorded (%s); superseded by snapshot %d", g.Seq, g.Reason, g.SupersededBy)
	skipped, err := r.store.HistorySkipped()
	if err != nil {
		return err
	}
	return r.store.SetHistorySkipped(append(skipped, g))
}

// closeHole records, at the snapshot above a filled hole, the rows it changed or deleted
// against the state the hole's epochs left: applied on a machine that never had them, the
// snapshot recorded only what differed from the mirror of its time.
func (r *Replica) closeHole(ctx context.Context, above *chain.EpochEvent, state *store.ReplayState) error {
	list := []walked{{ev: above}}
	var fr PullReport
	if _, err := r.fetch(ctx, list, 0, &fr); err != nil {
		return err
	}
	opened, reason := r.openForHistory(list[0], nil)
	if reason != "" {
		return fmt.Errorf("history: snapshot %d: %s", above.Seq, reason)
	}
	return r.recordBoundary(above, opened.Plaintext, state)
}

// openForHistory opens a walked epoch and checks its rows_root against state (nil: not
// checked, for the snapshot above a hole, applied already). reason says why it cannot be
// recorded.
func (r *Replica) openForHistory(w walked, state *store.ReplayState) (*seal.Opened, string) {
	r.adoptKey(w.blob, w.ev.Seq)
	opened, err := seal.Open(w.blob, r.opt.DEK, r.epochContext(w.ev.Seq, w.ev.Prev))
	if err != nil {
		return nil, err.Error()
	}
	p := opened.Plaintext
	if state != nil {
		root, n := state.RootAfter(p)
		if root != common.Hash(p.RowsRoot) {
			return nil, fmt.Sprintf("%v (computed %x, anchored %x)", store.ErrRootMismatch, root[:6], p.RowsRoot[:6])
		}
		if n != p.NRows {
			return nil, fmt.Sprintf("n_rows says %d, the state holds %d", p.NRows, n)
		}
		info := epochInfoOf(w.ev, opened)
		if err := r.cache.PutOpened(cacheMeta(&info, w.ev.PrevBlock), opened.Raw); err != nil {
			r.warnf("history: cache epoch %d: %v", w.ev.Seq, err)
		}
	}
	return opened, ""
}

// epochInfoOf is the record of an epoch opened from its event.
func epochInfoOf(ev *chain.EpochEvent, o *seal.Opened) vault.EpochInfo {
	p := o.Plaintext
	return vault.EpochInfo{Seq: ev.Seq, Block: ev.Block, Tx: ev.TxHash.Hex(), Digest: ev.Digest, Prev: ev.Prev,
		Bucket: int(o.Header.Bucket), RowsRoot: p.RowsRoot, Writer: ev.Writer, CreatedAt: p.CreatedAt,
		Snapshot: p.Snapshot, NRows: p.NRows, Rows: len(p.Rows), Deleted: len(p.Deleted)}
}

// recordHistory writes the versions one epoch anchored, then its epoch record (which marks it
// recorded), never touching the mirror.
func (r *Replica) recordHistory(w walked, opened *seal.Opened, before *store.ReplayState) error {
	ev := w.ev
	if err := r.store.WriteVersions(anchorOf(ev), opened.Plaintext, before, false); err != nil {
		return err
	}
	info := epochInfoOf(ev, opened)
	info.Time = w.time
	return r.store.RecordHistory(&info, opened.Plaintext)
}

// recordBoundary writes the versions closeHole finds: what the snapshot above changed
// against the state before it.
func (r *Replica) recordBoundary(above *chain.EpochEvent, p *seal.Plaintext, before *store.ReplayState) error {
	if err := r.store.WriteVersions(anchorOf(above), p, before, true); err != nil {
		return err
	}
	// rows the snapshot only carried keep the epoch where their leaf last changed
	if n, err := r.store.KeepProvenance(anchorOf(above), p, before); err != nil {
		return fmt.Errorf("history: snapshot %d: %w", above.Seq, err)
	} else if n > 0 {
		r.logf("history: %d rows snapshot %d carried unchanged are anchored where they last changed", n, above.Seq)
	}
	return r.store.RecordBoundary(above.Block, above.Seq)
}

// recordBlockTimes reads, in batches, the block timestamp of every recorded epoch that has
// none yet, so that @<time> resolves without the chain.
func (r *Replica) recordBlockTimes(ctx context.Context) error {
	missing, err := r.store.EpochsWithoutTime()
	if err != nil || len(missing) == 0 {
		return err
	}
	blocks := make([]uint64, len(missing))
	for i := range missing {
		blocks[i] = missing[i].Block
	}
	times, err := r.Client().BlockTimes(ctx, blocks)
	if err != nil {
		return err
	}
	for i := range missing {
		missing[i].Time = times[missing[i].Block]
	}
	return r.store.SetEpochTimes(missing)
}

// anchorOf is where ev anchored its epoch.
func anchorOf(ev *chain.EpochEvent) vault.Anchor {
	return vault.Anchor{Seq: ev.Seq, Block: ev.Block, Tx: ev.TxHash.Hex()}
}

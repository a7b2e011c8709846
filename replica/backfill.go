package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
	"kintfs/seal"
)

// History on every machine. A pull that stops at a snapshot applies the snapshot and never
// the epochs under it, so the history index has a hole there. The backfill walks the epochs
// of each hole oldest first, checks each exactly as a pull does (digest, prev, GCM, rows_root
// against the state replayed from the epochs before it) and records its versions, without
// touching the mirror. Each epoch is recorded on its own, so a backfill stopped anywhere goes
// on from there.

// ErrHistoryIncomplete refuses a history view of a block this machine holds no versions for.
var ErrHistoryIncomplete = errors.New("history not on this machine")

// kHistSkipped lists the epochs under a snapshot that the backfill could not open ([]Gap).
const kHistSkipped = "x/histskipped"

// historyHole is a run of epochs, lo to hi, that the mirror stepped over: the epoch before it
// (below, nil when lo is 1) and the snapshot after it (above) are recorded.
type historyHole struct {
	lo, hi uint64
	below  *EpochInfo
	above  EpochInfo
}

// blocks is the range of blocks whose state the hole leaves unknown: from just after below's
// block (0 when below is nil) up to, not including, above's block.
func (h historyHole) blocks() (from, to uint64) {
	if h.below != nil {
		from = h.below.Block + 1
	}
	return from, h.above.Block
}

// historyHoles lists the holes in the recorded epochs, oldest first.
func (s *Store) historyHoles() ([]historyHole, error) {
	var holes []historyHole
	err := s.db.View(func(txn *badger.Txn) error {
		var prev *EpochInfo
		return scanValues(txn, pEpoch, func(k, v []byte) error {
			var info EpochInfo
			if err := decodeJSON(v, &info); err != nil {
				return fmt.Errorf("epoch record %x: %w", k, err)
			}
			next := uint64(1)
			if prev != nil {
				next = prev.Seq + 1
			}
			if info.Seq > next {
				holes = append(holes, historyHole{lo: next, hi: info.Seq - 1, below: prev, above: info})
			}
			prev = &info
			return nil
		})
	})
	return holes, err
}

// HistoryFrom is the oldest recorded epoch from which every epoch up to the mirror is recorded
// (a zero Head when none is).
func (s *Store) HistoryFrom() (Head, error) {
	holes, err := s.historyHoles()
	if err != nil {
		return Head{}, err
	}
	return s.historyFrom(holes)
}

// historyFrom is HistoryFrom given the holes.
func (s *Store) historyFrom(holes []historyHole) (Head, error) {
	if n := len(holes); n > 0 {
		a := holes[n-1].above
		return Head{Seq: a.Seq, Digest: a.Digest, Block: a.Block}, nil
	}
	var first EpochInfo
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := getJSON(txn, pEpoch+string(be64(1)), &first)
		return err
	})
	return Head{Seq: first.Seq, Digest: first.Digest, Block: first.Block}, err
}

// CheckHistory says whether the versions anchored at or before block are all on this
// machine: ErrHistoryIncomplete when the block falls in a hole.
func (s *Store) CheckHistory(block uint64) error {
	holes, err := s.historyHoles()
	if err != nil {
		return err
	}
	for _, h := range holes {
		if from, to := h.blocks(); block >= from && block < to {
			return fmt.Errorf("%w: block %d lies under snapshot %d (block %d), and the epochs under it were never fetched here; kintfs pull --full fetches them",
				ErrHistoryIncomplete, block, h.above.Seq, h.above.Block)
		}
	}
	return nil
}

// BackfillReport says what a backfill did.
type BackfillReport struct {
	Recorded int   `json:"recorded"` // epochs whose versions it recorded
	Missing  int   `json:"missing"`  // epochs still not recorded
	Skipped  []Gap `json:"skipped,omitempty"`
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
	holes, err := r.historyHoles()
	if err == nil {
		if len(holes) > 0 {
			r.status.noteBackfillStart()
		}
		err = r.backfill(ctx, holes, o, rep)
	}
	// the epochs just recorded get their block times before the status calls history done
	if terr := r.recordBlockTimes(ctx); err == nil && terr != nil {
		err = fmt.Errorf("record block times: %w", terr)
	}
	if holes, herr := r.historyHoles(); herr == nil {
		for _, h := range holes {
			rep.Missing += int(h.hi - h.lo + 1)
		}
	}
	r.status.noteBackfill(rep, err)
	return rep, err
}

func (r *Replica) backfill(ctx context.Context, holes []historyHole, o BackfillOptions, rep *BackfillReport) error {
	var skipped []Gap
	if err := r.getState(kHistSkipped, &skipped); err != nil {
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
func stuck(skipped []Gap, h historyHole) bool {
	for _, g := range skipped {
		if g.Seq == h.lo {
			return true
		}
	}
	return false
}

// fillHole walks the events of h from the snapshot above it down, then fetches, checks and
// records them oldest first, a batch of blobs at a time.
func (r *Replica) fillHole(ctx context.Context, h historyHole, o BackfillOptions, rep *BackfillReport) error {
	var floor uint64
	if h.below != nil {
		floor = h.below.Block
	}
	d := r.Client().NewDiscovery(ctx, r.vault.Owner, r.vault.Space, floor)
	defer d.Close()
	above, err := d.Next(ctx, h.above.Block, h.above.Seq, h.above.Digest)
	if err != nil {
		return err
	}
	if above.Digest != h.above.Digest {
		return fmt.Errorf("%w: the chain has digest %s at seq %d, this machine applied %s", ErrFork, short(above.Digest), above.Seq, short(h.above.Digest))
	}
	evs := []*chain.EpochEvent{above} // newest first
	for seq, block := h.hi, above.PrevBlock; seq >= h.lo; seq-- {
		ev, err := d.Next(ctx, block, seq, evs[len(evs)-1].Prev)
		if err != nil {
			return err
		}
		if next := evs[len(evs)-1]; next.Prev != ev.Digest {
			return fmt.Errorf("%w: epoch %d names prev %s but epoch %d has digest %s", ErrStaleRPC, next.Seq, short(next.Prev), seq, short(ev.Digest))
		}
		evs = append(evs, ev)
		block = ev.PrevBlock
	}
	if oldest := evs[len(evs)-1]; h.below != nil && oldest.Prev != h.below.Digest {
		return fmt.Errorf("%w: epoch %d names prev %s, this machine recorded %s at seq %d", ErrFork, oldest.Seq, short(oldest.Prev), short(h.below.Digest), h.below.Seq)
	}
	state, err := r.stateAt(h.below)
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
		for _, w := range batch {
			if err := ctx.Err(); err != nil {
				return err
			}
			opened, reason := r.openForHistory(w, state)
			if reason != "" {
				g := Gap{Seq: w.ev.Seq, Block: w.ev.Block, Reason: reason, SupersededBy: h.above.Seq}
				rep.Skipped = append(rep.Skipped, g)
				r.warnf("history: epoch %d cannot be recorded (%s); superseded by snapshot %d", g.Seq, g.Reason, g.SupersededBy)
				var skipped []Gap
				if err := r.getState(kHistSkipped, &skipped); err != nil {
					return err
				}
				return r.setState(kHistSkipped, append(skipped, g))
			}
			if err := r.recordHistory(w, opened, state); err != nil {
				return err
			}
			state.step(opened.Plaintext)
			rep.Recorded++
			if w.ev.Seq == h.hi {
				return r.closeHole(ctx, above, state)
			}
			if o.Max > 0 && rep.Recorded >= o.Max {
				return nil
			}
			if o.Pause > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(o.Pause):
				}
			}
		}
		end = start
	}
	return nil
}

// closeHole records, at the snapshot above a filled hole, the rows it changed or deleted
// against the state the hole's epochs left: applied on a machine that never had them, the
// snapshot recorded only what differed from the mirror of its time.
func (r *Replica) closeHole(ctx context.Context, above *chain.EpochEvent, state *replayState) error {
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
func (r *Replica) openForHistory(w walked, state *replayState) (*seal.Opened, string) {
	r.adoptKey(w.blob, w.ev.Seq)
	opened, err := seal.Open(w.blob, r.opt.DEK, r.epochContext(w.ev.Seq, w.ev.Prev))
	if err != nil {
		return nil, err.Error()
	}
	p := opened.Plaintext
	if state != nil {
		root, n := state.rootAfter(p)
		if root != common.Hash(p.RowsRoot) {
			return nil, fmt.Sprintf("%v (computed %x, anchored %x)", ErrRootMismatch, root[:6], p.RowsRoot[:6])
		}
		if n != p.NRows {
			return nil, fmt.Sprintf("n_rows says %d, the state holds %d", p.NRows, n)
		}
		info := epochInfoOf(w.ev, opened)
		if err := r.cache.PutOpened(cacheMeta(&info), opened.Raw); err != nil {
			r.warnf("history: cache epoch %d: %v", w.ev.Seq, err)
		}
	}
	return opened, ""
}

// epochInfoOf is the record of an epoch opened from its event.
func epochInfoOf(ev *chain.EpochEvent, o *seal.Opened) EpochInfo {
	p := o.Plaintext
	return EpochInfo{Seq: ev.Seq, Block: ev.Block, Tx: ev.TxHash.Hex(), Digest: ev.Digest, Prev: ev.Prev,
		Bucket: int(o.Header.Bucket), RowsRoot: p.RowsRoot, Writer: ev.Writer, CreatedAt: p.CreatedAt,
		Snapshot: p.Snapshot, NRows: p.NRows, Rows: len(p.Rows), Deleted: len(p.Deleted)}
}

// replayState is the state of the vault as of one epoch, by canonical id, for checking the
// roots of the epochs after it.
type replayState struct {
	leaves leafSet
}

func (st *replayState) changes(p *seal.Plaintext) []leafChange {
	puts := make(map[string]common.Hash, len(p.Rows))
	for i := range p.Rows {
		puts[p.Rows[i].ID()] = seal.Leaf(&p.Rows[i])
	}
	dels := make(map[string]seal.Deleted, len(p.Deleted))
	for _, d := range p.Deleted {
		dels[d.ID()] = d
	}
	return leafChanges(puts, dels)
}

func (st *replayState) rootAfter(p *seal.Plaintext) (common.Hash, int) {
	return st.leaves.rootWith(st.changes(p), p.Snapshot)
}

func (st *replayState) step(p *seal.Plaintext) {
	if p.Snapshot {
		st.leaves.reset(st.changes(p))
	} else {
		st.leaves.apply(st.changes(p))
	}
}

// stateAt rebuilds the state as of a recorded epoch (empty before the first) from the
// history index: for each row, its newest version at or before that epoch.
func (r *Replica) stateAt(info *EpochInfo) (*replayState, error) {
	st := &replayState{}
	if info == nil {
		return st, nil
	}
	bound := append(be64(info.Block), be64(info.Seq)...)
	type newest struct {
		at   []byte
		leaf *common.Hash
	}
	rows := map[string]newest{}
	err := r.db.View(func(txn *badger.Txn) error {
		return scanValues(txn, pHistory, func(k, v []byte) error {
			if len(k) < len(pHistory)+17 {
				return nil
			}
			at := k[len(k)-16:]
			if bytes.Compare(at, bound) > 0 {
				return nil
			}
			id := string(k[len(pHistory) : len(k)-17])
			if cur, ok := rows[id]; ok && bytes.Compare(cur.at, at) > 0 {
				return nil
			}
			var rec histRec
			if err := decodeJSON(v, &rec); err != nil {
				return err
			}
			n := newest{at: append([]byte(nil), at...)}
			if rec.Row != nil {
				l := common.Hash(seal.Leaf(rec.Row))
				n.leaf = &l
			}
			rows[id] = n
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(rows))
	for id, n := range rows {
		if n.leaf != nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		st.leaves.add(id, *rows[id].leaf)
	}
	return st, nil
}

// recordHistory writes the versions one epoch anchored, then its epoch record (which marks it
// recorded), never touching the mirror.
func (r *Replica) recordHistory(w walked, opened *seal.Opened, before *replayState) error {
	ev := w.ev
	if err := r.writeVersions(ev, opened.Plaintext, before, false); err != nil {
		return err
	}
	info := epochInfoOf(ev, opened)
	info.Time = w.time
	return r.db.Update(func(txn *badger.Txn) error {
		if err := r.recordCategoryCount(txn, ev.Block, ev.Seq); err != nil {
			return err
		}
		return setJSON(txn, pEpoch+string(be64(ev.Seq)), &info)
	})
}

// recordBoundary writes the versions closeHole finds: what the snapshot above changed
// against the state before it.
func (r *Replica) recordBoundary(above *chain.EpochEvent, p *seal.Plaintext, before *replayState) error {
	if err := r.writeVersions(above, p, before, true); err != nil {
		return err
	}
	return r.db.Update(func(txn *badger.Txn) error { return r.recordCategoryCount(txn, above.Block, above.Seq) })
}

// writeVersions writes to the history index the rows p anchored at ev (only those that differ
// from before, with onlyChanged) and the deletion of each row of before it removed: those it
// names, or for a snapshot every one it leaves out.
func (r *Replica) writeVersions(ev *chain.EpochEvent, p *seal.Plaintext, before *replayState, onlyChanged bool) error {
	anchor := Anchor{Seq: ev.Seq, Block: ev.Block, Tx: ev.TxHash.Hex()}
	mtime := nanos(createdAt(p.CreatedAt))
	wb := r.db.NewWriteBatch()
	defer wb.Cancel()
	puts := map[string]bool{}
	for i := range p.Rows {
		row := p.Rows[i]
		id := row.ID()
		puts[id] = true
		if old, ok := before.leaves.get(id); onlyChanged && ok && old == common.Hash(seal.Leaf(&row)) {
			continue
		}
		if err := setHistory(wb, id, ev.Block, ev.Seq, &histRec{Row: &row, Anchor: anchor, Mtime: mtime}); err != nil {
			return err
		}
	}
	gone := func(id string) error {
		if _, ok := before.leaves.get(id); !ok || puts[id] {
			return nil
		}
		return setHistory(wb, id, ev.Block, ev.Seq, &histRec{Anchor: anchor, Mtime: mtime})
	}
	if p.Snapshot {
		for _, e := range before.leaves.e {
			if err := gone(e.id); err != nil {
				return err
			}
		}
	} else {
		for _, d := range p.Deleted {
			if err := gone(d.ID()); err != nil {
				return err
			}
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("record epoch %d: %w", ev.Seq, err)
	}
	return nil
}

func setHistory(wb *badger.WriteBatch, id string, block, seq uint64, rec *histRec) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return wb.Set(historyKey(id, block, seq), b)
}

// createdAt parses an epoch's created_at (zero time when it does not parse).
func createdAt(s string) time.Time {
	t, _ := time.Parse("2006-01-02T15:04:05Z", s)
	return t
}

// recordBlockTimes reads, in batches, the block timestamp of every recorded epoch that has
// none yet, so that @<time> resolves without the chain.
func (r *Replica) recordBlockTimes(ctx context.Context) error {
	var missing []EpochInfo
	err := r.db.View(func(txn *badger.Txn) error {
		return scanValues(txn, pEpoch, func(k, v []byte) error {
			var info EpochInfo
			if err := decodeJSON(v, &info); err != nil {
				return err
			}
			if info.Time == 0 {
				missing = append(missing, info)
			}
			return nil
		})
	})
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
	wb := r.db.NewWriteBatch()
	defer wb.Cancel()
	for i := range missing {
		missing[i].Time = times[missing[i].Block]
		b, err := json.Marshal(&missing[i])
		if err != nil {
			return err
		}
		if err := wb.Set([]byte(pEpoch+string(be64(missing[i].Seq))), b); err != nil {
			return err
		}
	}
	return wb.Flush()
}

// BlockAt is the block of the newest recorded epoch whose block timestamp is at or before t
// (0, the tree before the first epoch, when none is). It needs no chain: the times are
// recorded as epochs are pushed and pulled. A time that falls where this machine holds no
// history, or before the times are read, is refused with ErrHistoryIncomplete.
func (s *Store) BlockAt(t time.Time) (uint64, error) {
	if t.Unix() < 0 {
		return 0, nil
	}
	at := uint64(t.Unix())
	var block uint64
	err := s.db.View(func(txn *badger.Txn) error {
		var prev *EpochInfo
		return scanValues(txn, pEpoch, func(k, v []byte) error {
			var info EpochInfo
			if err := decodeJSON(v, &info); err != nil {
				return err
			}
			defer func() { prev = &info }()
			if info.Time == 0 {
				return fmt.Errorf("%w: the block time of epoch %d is not recorded yet (the next pull records it)", ErrHistoryIncomplete, info.Seq)
			}
			if info.Time > at {
				// the newest epoch at or before t could be one this machine never fetched
				if hole := (prev == nil && info.Seq > 1) || (prev != nil && prev.Seq+1 != info.Seq); hole {
					return fmt.Errorf("%w: %s lies under snapshot %d, and the epochs under it were never fetched here; kintfs pull --full fetches them",
						ErrHistoryIncomplete, t.UTC().Format(time.RFC3339), info.Seq)
				}
				return errStopScan
			}
			block = info.Block
			return nil
		})
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	return block, err
}

var errStopScan = errors.New("stop")

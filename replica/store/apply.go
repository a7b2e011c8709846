package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// ErrRootMismatch stops an apply whose running state does not hash to the anchored root.
var ErrRootMismatch = fmt.Errorf("rows_root mismatch: the state after the epoch does not hash to its anchored root")

// leafChanges are an epoch's puts (by id, with their leaves) and deletions, sorted by id; a
// put wins over a deletion of the same id.
func leafChanges(puts map[string]common.Hash, dels map[string]seal.Deleted) []leafChange {
	ch := make([]leafChange, 0, len(puts)+len(dels))
	for id, l := range puts {
		ch = append(ch, leafChange{id: id, leaf: l})
	}
	for id := range dels {
		if _, ok := puts[id]; !ok {
			ch = append(ch, leafChange{id: id, del: true})
		}
	}
	sortChanges(ch)
	return ch
}

// ApplyOptions say how an epoch reached this machine.
type ApplyOptions struct {
	// Own marks an epoch this machine sealed: a staged row that changed again after sealing
	// stays staged on top of it, instead of becoming a conflict.
	Own bool
	// Mtime overrides the epoch's created_at as the mtime of the rows it brings (zero: use created_at).
	Mtime time.Time
	// NoSync returns once the epoch is committed, before a sync has made it durable: a pull
	// applying many epochs makes them durable together with Sync, before anything depends on
	// them. The commits reach badger's logs in order, so a crash before that sync leaves the
	// store at the boundary of some epoch applied before it (a batched epoch's marker finishes
	// or drops it when the store opens), and the pull after fetches the rest again.
	NoSync bool
}

// ApplyEpoch applies one opened epoch to the mirror and the history index, checking the
// running root against the anchored rows_root first. It returns the keys whose live version
// changed.
//
// An epoch small enough for one badger transaction is applied in one. A larger one is written
// in batches under a durable marker (see applyMarker): the marker goes first and is synced,
// then the batches, then one small transaction moves the head and deletes the marker. The
// in-memory tree changes only after that last commit, so a reader sees the epoch whole or not
// at all; a crash in between is finished by OpenStore. The tree's write lock is held
// throughout but for the marker's sync, and the other commits are synced together once the
// lock is released (readers do not wait on the disk); ApplyEpoch returns after that sync, or
// at once with opt.NoSync.
func (s *Store) ApplyEpoch(info vault.EpochInfo, p *seal.Plaintext, opt ApplyOptions) ([]vault.Key, []vault.Conflict, error) {
	s.t.mu.Lock()
	changed, conflicts, err := s.applyLocked(info, p, opt, false)
	s.t.mu.Unlock()
	if err == nil && !opt.NoSync {
		err = s.db.durable() // the commits above, synced once the lock is free for readers
	}
	if err != nil {
		return nil, nil, err
	}
	s.notify(changed)
	return changed, conflicts, nil
}

// epochApply is one epoch on its way into the store.
type epochApply struct {
	info    vault.EpochInfo
	p       *seal.Plaintext
	opt     ApplyOptions
	anchor  vault.Anchor
	mtime   time.Time
	puts    map[string]*seal.Row
	next    map[string]common.Hash
	changes []leafChange // sorted by id: what the epoch does to each id
	// had: the entity categories the mirror held a row of before the epoch, as its writes
	// found them (nil when it finishes an apply a crash cut short: the mirror may then hold
	// part of this epoch already)
	had map[string]bool
}

// applyLocked applies an epoch; callers hold t.mu for writing. redo finishes an apply a
// marker names: its root was checked before the marker was written, and the mirror may
// already hold part of it, so the root is not checked again and the tree is reloaded after.
func (s *Store) applyLocked(info vault.EpochInfo, p *seal.Plaintext, opt ApplyOptions, redo bool) ([]vault.Key, []vault.Conflict, error) {
	defer s.holes.forget() // the epoch record written
	if s.applyErr != nil {
		return nil, nil, s.applyErr
	}
	head, err := s.MirrorHead()
	if err != nil {
		return nil, nil, err
	}
	if info.Seq != head.Seq+1 && !p.Snapshot {
		return nil, nil, fmt.Errorf("epoch %d does not follow the mirror at seq %d", info.Seq, head.Seq)
	}
	e := s.prepareApply(info, p, opt)
	if !redo {
		if err := s.checkRoot(e); err != nil {
			return nil, nil, err
		}
	}
	if !redo {
		e.had = map[string]bool{}
	}
	batches := s.applyBatches(e)
	if len(batches) <= 1 && !redo {
		return s.applyWhole(e, batches)
	}
	return s.applyMarked(e, batches, redo)
}

// checkRoot checks the epoch against the running root and row count, and that this code can
// write every row of it.
func (s *Store) checkRoot(e *epochApply) error {
	info, p := e.info, e.p
	root, nRows := s.leaves.rootWith(e.changes, p.Snapshot)
	if root != common.Hash(p.RowsRoot) {
		return fmt.Errorf("epoch %d: %w (computed %x, anchored %x)", info.Seq, ErrRootMismatch, root[:6], p.RowsRoot[:6])
	}
	if nRows != p.NRows {
		return fmt.Errorf("epoch %d: n_rows says %d, the state holds %d", info.Seq, p.NRows, nRows)
	}
	if err := CheckApplicable(p); err != nil {
		return fmt.Errorf("epoch %d: %w", info.Seq, err)
	}
	return nil
}

// applyWhole is the common case: the whole epoch (at most one batch) in one transaction, no
// marker needed.
func (s *Store) applyWhole(e *epochApply, batches [][]leafChange) ([]vault.Key, []vault.Conflict, error) {
	var apply []func()
	var changed []vault.Key
	var conflicts []vault.Conflict
	saved := s.t.inoNext
	err := s.db.commitOnly(func(txn *badger.Txn) error {
		var b []leafChange
		if len(batches) == 1 {
			b = batches[0]
		}
		var err error
		if changed, conflicts, err = s.applyBatch(txn, &apply, e, b); err != nil {
			return err
		}
		return s.finishEpoch(txn, e, false)
	})
	if err != nil {
		s.forgetInos(saved)
		return nil, nil, err
	}
	s.runApply(apply, e)
	return changed, conflicts, nil
}

// applyMarked writes the epoch in batches under a durable marker (written here unless redo
// finishes the apply it names), then moves the head and deletes the marker.
func (s *Store) applyMarked(e *epochApply, batches [][]leafChange, redo bool) ([]vault.Key, []vault.Conflict, error) {
	info := e.info
	if !redo {
		if err := s.writeMarker(e, len(batches)); err != nil {
			return nil, nil, fmt.Errorf("epoch %d: %w", info.Seq, err)
		}
		// The marker is made durable before the first batch, with the lock let go for
		// readers meanwhile (nothing of the epoch is in the tree or the mirror yet). A batch
		// can reach the disk before the sync that follows the apply (badger writes a full
		// memtable to a table of its own accord), and one there without its marker, or with
		// a marker whose value never got to the disk, would be half an epoch nothing finishes.
		s.t.mu.Unlock()
		err := s.db.durable()
		s.t.mu.Lock()
		if err != nil {
			return nil, nil, s.applyFailed(info, redo, fmt.Errorf("sync the apply marker: %w", err))
		}
	}
	var apply []func()
	var changed []vault.Key
	var conflicts []vault.Conflict
	for i, b := range batches {
		saved := s.t.inoNext
		var batchApply []func()
		err := s.db.commitOnly(func(txn *badger.Txn) error {
			k, c, err := s.applyBatch(txn, &batchApply, e, b)
			changed, conflicts = append(changed, k...), append(conflicts, c...)
			return err
		})
		if err == nil && s.applyHook != nil {
			if err = s.applyHook(i + 1); err != nil {
				// a simulated crash: the store is left as a crash would leave it
				s.applyErr = fmt.Errorf("epoch %d: the apply stopped after batch %d of %d: %w; reopen the store to finish it", info.Seq, i+1, len(batches), err)
				return nil, nil, s.applyErr
			}
		}
		if err != nil {
			s.forgetInos(saved)
			return nil, nil, s.applyFailed(info, redo, fmt.Errorf("batch %d of %d: %w", i+1, len(batches), err))
		}
		apply = append(apply, batchApply...)
	}
	if err := s.db.commitOnly(func(txn *badger.Txn) error { return s.finishEpoch(txn, e, true) }); err != nil {
		return nil, nil, s.applyFailed(info, redo, err)
	}
	if redo {
		if err := s.reload(); err != nil {
			s.applyErr = fmt.Errorf("epoch %d applied, but reloading the tree failed: %w; reopen the store", info.Seq, err)
			return nil, nil, s.applyErr
		}
		return changed, conflicts, nil
	}
	s.runApply(apply, e)
	return changed, conflicts, nil
}

// applyFailed handles a batched apply that failed after its marker was written: the mirror
// holds part of the epoch. It tries once to finish the apply from the marker; when that fails
// too, the store refuses reads and writes until it is reopened (which finishes it), rather
// than serve half an epoch.
func (s *Store) applyFailed(info vault.EpochInfo, redo bool, err error) error {
	if !redo {
		if _, _, rerr := s.finishMarkedLocked(); rerr == nil {
			return fmt.Errorf("epoch %d: %w (the apply was finished on a second attempt)", info.Seq, err)
		}
	}
	s.applyErr = fmt.Errorf("epoch %d: the apply stopped part way: %w; reopen the store to finish it", info.Seq, err)
	return s.applyErr
}

// forgetInos drops the inode numbers handed out since saved in a transaction that failed:
// they were never persisted.
func (s *Store) forgetInos(saved uint64) {
	s.t.inos.forgetFrom(saved)
	s.t.inoNext = saved
}

// prepareApply works out what the epoch does to each id.
func (s *Store) prepareApply(info vault.EpochInfo, p *seal.Plaintext, opt ApplyOptions) *epochApply {
	e := &epochApply{info: info, p: p, opt: opt, anchor: vault.Anchor{Seq: info.Seq, Block: info.Block, Tx: info.Tx}, mtime: opt.Mtime}
	if e.mtime.IsZero() {
		e.mtime = seal.ParseCreatedAt(p.CreatedAt) // zero when it does not parse
	}
	// the new state: puts (with their leaves) and deletions by id
	e.puts = make(map[string]*seal.Row, len(p.Rows))
	e.next = make(map[string]common.Hash, len(p.Rows))
	for i := range p.Rows {
		id := p.Rows[i].ID()
		e.puts[id], e.next[id] = &p.Rows[i], seal.Leaf(&p.Rows[i])
	}
	dels := map[string]seal.Deleted{}
	for _, d := range p.Deleted {
		dels[d.ID()] = d
	}
	if p.Snapshot {
		for _, le := range s.leaves.e {
			if _, ok := e.puts[le.id]; !ok {
				if _, ok := dels[le.id]; !ok {
					dels[le.id] = seal.Deleted{} // gone from the full state
				}
			}
		}
	}
	e.changes = leafChanges(e.next, dels)
	return e
}

// noteHad notes the category of id, a row the mirror held, as holding a row before the epoch.
func (e *epochApply) noteHad(id string) {
	if c, isEntity := entityCategory(id); isEntity && e.had != nil {
		e.had[c] = true
	}
}

// applyBatch writes what the epoch does to the ids of batch: for each, all of its writes in
// this one transaction. The writes depend only on the database as it stands, so a batch
// applied again (a crash before the epoch was finished) finds its ids done and skips them:
// no second history entry, no second conflict copy.
func (s *Store) applyBatch(txn *badger.Txn, apply *[]func(), e *epochApply, batch []leafChange) ([]vault.Key, []vault.Conflict, error) {
	var changed []vault.Key
	var conflicts []vault.Conflict
	for _, ch := range batch {
		var k []vault.Key
		var c []vault.Conflict
		var err error
		if ch.del {
			k, c, err = s.applyDelete(txn, apply, e, ch.id)
		} else {
			k, c, err = s.applyPut(txn, apply, e, ch.id)
		}
		if err != nil {
			return nil, nil, err
		}
		changed = append(changed, k...)
		conflicts = append(conflicts, c...)
	}
	if len(conflicts) > 0 {
		// recorded with the batch that made them, so a crash loses none
		var all []vault.Conflict
		if _, err := getJSON(txn, kConflict, &all); err != nil {
			return nil, nil, err
		}
		if err := setJSON(txn, kConflict, append(all, conflicts...)); err != nil {
			return nil, nil, err
		}
	}
	return changed, conflicts, nil
}

// applyDelete removes id from the mirror, records its deletion in the history index and
// settles the live tree; an id not in the mirror (never there, or a batch already applied)
// is skipped.
func (s *Store) applyDelete(txn *badger.Txn, apply *[]func(), e *epochApply, id string) ([]vault.Key, []vault.Conflict, error) {
	info := e.info
	m, found, err := getMirror(txn, id, false)
	if err != nil || !found {
		return nil, nil, err
	}
	e.noteHad(id)
	if err := delMirror(txn, id); err != nil {
		return nil, nil, err
	}
	if err := putHistory(txn, id, info.Block, info.Seq, &histRec{Anchor: e.anchor, Mtime: nanos(e.mtime)}); err != nil {
		return nil, nil, err
	}
	st, staged, err := getStagedHead(txn, id)
	if err != nil {
		return nil, nil, err
	}
	return s.settle(txn, apply, id, rowKey(&m.Row), nil, st, staged, info, e.opt)
}

// applyPut writes the epoch's row id to the mirror and the history index and settles the
// live tree; a row the mirror already holds as it is is skipped.
func (s *Store) applyPut(txn *badger.Txn, apply *[]func(), e *epochApply, id string) ([]vault.Key, []vault.Conflict, error) {
	info, opt := e.info, e.opt
	r := e.puts[id]
	m, found, err := getMirror(txn, id, false)
	if err != nil {
		return nil, nil, err
	}
	if found {
		e.noteHad(id)
	}
	if found && m.Leaf == e.next[id] && eqStrp(m.Row.Category, r.Category) {
		return nil, nil, nil // a snapshot repeating a row unchanged, or a batch already applied
	}
	rowMtime := e.mtime
	st, staged, err := getStagedHead(txn, id) // read once: settle takes it, as the writes below leave it
	if err != nil {
		return nil, nil, err
	}
	if staged && opt.Own && !st.Del && st.rowLeaf() == e.next[id] {
		rowMtime = fromNanos(st.Mtime)
	}
	rec := newMirrorRec(*r, e.next[id], e.anchor, nanos(rowMtime))
	if err := putMirror(txn, id, &rec); err != nil {
		return nil, nil, err
	}
	if err := putHistory(txn, id, info.Block, info.Seq, &histRec{Row: r, Anchor: e.anchor, Mtime: nanos(rowMtime)}); err != nil {
		return nil, nil, err
	}
	changed, conflicts, err := s.settle(txn, apply, id, rowKey(r), &rec, st, staged, info, opt)
	for i := range conflicts {
		if found {
			conflicts[i].BaseSeq = m.Anchor.Seq
		}
	}
	return changed, conflicts, err
}

// finishEpoch records the applied epoch and moves the head, deleting the marker of a
// batched apply in the same transaction.
func (s *Store) finishEpoch(txn *badger.Txn, e *epochApply, marked bool) error {
	info := e.info
	if err := s.recordCategoryCount(txn, info.Block, info.Seq, e.changes, e.had); err != nil {
		return err
	}
	s.untimed.noteEpochRecord(&info)
	if err := setJSON(txn, epochKey(info.Seq), &info); err != nil {
		return err
	}
	if err := setJSON(txn, kHead, &vault.Head{Seq: info.Seq, Digest: info.Digest, Block: info.Block}); err != nil {
		return err
	}
	if marked {
		return deleteMarker(txn)
	}
	return nil
}

// runApply makes the in-memory changes of a committed epoch.
func (s *Store) runApply(apply []func(), e *epochApply) {
	for _, f := range apply {
		f()
	}
	if e.p.Snapshot {
		s.leaves.reset(e.changes)
	} else {
		s.leaves.apply(e.changes)
	}
}

// settle brings the live tree in line after the mirror row id changed to m (nil: deleted),
// reconciling the staged change st to the same row (when found), as read in this txn.
func (s *Store) settle(txn *badger.Txn, apply *[]func(), id string, k vault.Key, m *mirrorRec, st stagedRec, found bool, info vault.EpochInfo, opt ApplyOptions) ([]vault.Key, []vault.Conflict, error) {
	var err error
	changed := []vault.Key{k}
	var conflicts []vault.Conflict
	if found {
		var c *vault.Conflict
		var copyKey *vault.Key
		if found, c, copyKey, err = s.reconcile(txn, apply, id, k, &st, m, info, opt); err != nil {
			return nil, nil, err
		}
		if copyKey != nil {
			changed = append(changed, *copyKey)
		}
		if c != nil {
			conflicts = append(conflicts, *c)
		}
	}
	n, err := s.settledNode(txn, &st, found, m)
	if err != nil {
		return nil, nil, err
	}
	stagedBefore := s.t.get(k)
	*apply = append(*apply, func() {
		if stagedBefore != nil && stagedBefore.staged {
			s.stagedBytes -= stagedBefore.size
		}
		s.t.remove(k)
		if twin, ok := categoryTwin(k); ok {
			s.t.remove(twin)
		}
		if n != nil {
			s.t.put(n)
			if n.staged {
				s.stagedBytes += n.size
			}
		}
	})
	return changed, conflicts, nil
}

// reconcile settles the staged change st to the row id against its new mirror version m (nil:
// deleted): dropped when it matches, rebased when this machine sealed it or the chain did not
// touch its base, else turned into a conflict (with a local copy of what was staged, unless
// a deletion). staged says whether the change stays staged.
func (s *Store) reconcile(txn *badger.Txn, apply *[]func(), id string, k vault.Key, st *stagedRec, m *mirrorRec, info vault.EpochInfo, opt ApplyOptions) (staged bool, c *vault.Conflict, copyKey *vault.Key, err error) {
	var chainLeaf common.Hash
	if m != nil {
		chainLeaf = m.Leaf
	}
	same := (st.Del && m == nil) || (!st.Del && m != nil && st.rowLeaf() == m.Leaf)
	switch {
	case same:
		return false, nil, nil, delStaged(txn, id, st)
	case opt.Own || st.Base == chainLeaf:
		// changed again after sealing, or the chain did not touch what it was based on:
		// the staged change rebases on the new mirror
		st.Base = chainLeaf
		return true, nil, nil, putStagedHead(txn, id, st)
	}
	c = &vault.Conflict{Tier: st.Row.Tier, Category: st.Row.Category, Key: st.Row.Key, Seq: info.Seq,
		At: time.Now().UTC().Format(time.RFC3339)}
	if !st.Del {
		local := vault.Key{Tier: k.Tier, Local: true,
			Key: "." + conflictName(st.Row.Key) + fmt.Sprintf(".conflict-%d", info.Seq)}.InCategory(rowKey(&st.Row).CategoryPtr())
		if err := stagedBody(txn, nil, id, st); err != nil {
			return false, nil, nil, err
		}
		body := RenderContent(&st.Row)
		if _, err := s.putLocal(txn, apply, local, body, fromNanos(st.Mtime)); err != nil {
			return false, nil, nil, err
		}
		c.Copy = local.Key
		copyKey = &local
	}
	if err := delStaged(txn, id, st); err != nil {
		return false, nil, nil, err
	}
	return false, c, copyKey, nil
}

// settledNode is the live node of a row after settle: its staged version (staged, unless a
// deletion), else the mirror's m, else none; with its inode number.
func (s *Store) settledNode(txn *badger.Txn, st *stagedRec, staged bool, m *mirrorRec) (*node, error) {
	var n *node
	switch {
	case staged && !st.Del:
		var a *vault.Anchor
		if m != nil {
			a = s.sharedAnchor(m.Anchor)
		}
		n = nodeFromStaged(st, a)
	case staged && st.Del:
	case m != nil:
		n = s.nodeFromMirror(m)
	}
	if n == nil {
		return nil, nil
	}
	ino, err := s.t.ino(txn, inoName(n.key))
	if err != nil {
		return nil, err
	}
	n.ino = ino
	return n, nil
}

var conflictEscaper = strings.NewReplacer("%", "%25", "/", "%2F", "\x00", "%00")

func conflictName(key string) string { return conflictEscaper.Replace(key) }

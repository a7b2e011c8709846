package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// DefaultStagingCap bounds the bytes of staged bodies; past it writes fail with ENOSPC rather
// than grow the store without end while the chain is unreachable.
const DefaultStagingCap = 256 << 20

// Store is the local half of the replica: the badger database and the in-memory index of the
// live tree. Everything here is local; nothing waits on the chain.
type Store struct {
	db          *db
	t           *tree
	StagingCap  int64
	stagedBytes int64 // guarded by t.mu
	subMu       sync.Mutex
	subs        []func([]vault.Key)
	now         func() time.Time
	histInos    historyInos
	histFound   lastFound                // see History.Get
	leaves      leafSet                  // the mirror's leaves in canonical-id order; guarded by t.mu
	anchors     map[uint64]*vault.Anchor // by seq, for sharedAnchor; guarded by t.mu
	untimed     untimedEpochs            // the epoch records still without a block time
	release     *releaser
	gcStop      chan struct{} // closed by Close: the value log collector stops
	gcDone      chan struct{}
	// gcHeld is read-locked while a push reads bodies from a snapshot (PushRows): the value log
	// is not rewritten under it, which could move a body the snapshot points to.
	gcHeld    sync.RWMutex
	closeOnce sync.Once
	onStage   func() // told after a commit that staged something
	stagedNow bool   // a staged record changed in this update; guarded by t.mu
	// sealing holds the canonical ids of the rows an unfinished push has sealed (or a push
	// journal entry still holds): their next anchored version is not the mirror's, so a change
	// to them is always staged, never compared with the mirror and dropped. Guarded by t.mu.
	sealing map[string]bool
	// attrs are the local attributes (times, permission bits) by inode number; guarded by t.mu.
	attrs attrTable
	// attrTx are the attribute records the running update changed (nil: dropped), read by
	// later steps of the same transaction before it commits. Guarded by t.mu.
	attrTx map[uint64]*attrRec
	// trashDirs are the directories of the trash (see trash.go); guarded by t.mu.
	trashDirs map[string]bool
	dirTime   time.Time // the time of a directory never given one (kDirTime); guarded by t.mu
	// repair says whether the run before this one ended without Close (see runningMarker),
	// and what the open (and RepairAgain) found lost and did about it; repairLeft that it
	// could not look or left something lost, so the running marker stays for the next open to
	// try again. Guarded by repairMu.
	repairMu   sync.Mutex
	repair     Repair
	repairLeft bool
	// applyErr is set when an apply stopped part way and could not be finished: reads and
	// writes fail with it until the store is reopened, which finishes the apply. Guarded by t.mu.
	applyErr error
	// applyHook, when set (by tests), runs after each committed batch of a batched apply; an
	// error stops the apply there as a crash would.
	applyHook func(batch int) error
	// batchLimits, when set (by tests), replaces the size and entry budget of one batch.
	batchLimits func() (size, count int64)
	// full is the vault model: set for vault.ModelFull, clear for kint's (see shapes.go).
	full atomic.Bool
	// writers are the rows open for writing, which a push does not seal yet when new.
	writers writers
	// moved are the status and meta of rows renamed to a free name, by the key they left, for a row created there within movedWindow (see RenameKeepingAttrs). Guarded by t.mu.
	moved map[vault.Key]movedAttrs
	// stepHook, when set (by tests), runs between the steps of one multi-step transaction; an
	// error aborts the transaction there.
	stepHook func(step string) error
	// holes caches where history has holes (HistoryHoles).
	holes holeCache
	// summaries and incompatible keep Summary and KintIncompatible until the next commit.
	summaries    readCache[summaryAt, *Summary]
	incompatible readCache[uint64, []Incompatible]
}

// OpenStore opens the state database in dir and loads the live tree.
func OpenStore(dir string) (*Store, error) { return OpenStoreWith(dir, nil) }

// OpenStoreWith is OpenStore with the rows of anchored epochs at hand, from which the open after
// a run that ended without closing the store rebuilds the anchored records and bodies a power
// cut took (see rebuildLostRecords and RepairBodies).
func OpenStoreWith(dir string, rows EpochRows) (*Store, error) { return OpenStoreFrom(dir, rows, nil) }

// OpenStoreFrom is OpenStoreWith, telling wants, when not nil, of the epochs each repair is
// about to ask rows for, before it asks.
func OpenStoreFrom(dir string, rows EpochRows, wants EpochWants) (*Store, error) {
	release := startReleaser(dir)
	bdb, err := openBadger(dir)
	if err != nil {
		release.Stop()
		return nil, err
	}
	db := newDB(bdb, dir)
	db.busy = release.active
	err = migrate(bdb)
	if err == nil {
		err = db.Sync()
	}
	if err != nil {
		release.Stop()
		db.Close()
		return nil, fmt.Errorf("upgrade state database: %w", err)
	}
	s := &Store{db: db, t: newTree(), anchors: map[uint64]*vault.Anchor{}, release: release, StagingCap: DefaultStagingCap, now: time.Now,
		sealing: map[string]bool{}, trashDirs: map[string]bool{}, moved: map[vault.Key]movedAttrs{}}
	epochs := &epochRowsByID{d: db, rows: rows, wants: wants}
	if s.repair.Unclean, err = markRunning(dir); err == nil && s.repair.Unclean {
		s.repair.LostChanges, err = dropLostStaged(db)
		if err == nil {
			s.repair.Records, s.repair.RecordsLeft, err = rebuildLostRecords(db, epochs)
		}
	}
	if err != nil {
		release.Stop()
		db.Close()
		return nil, fmt.Errorf("open state database: %w", err)
	}
	if err := s.load(); err != nil {
		release.Stop()
		db.Close()
		return nil, fmt.Errorf("load state: %w", err)
	}
	if err := s.finishApply(); err != nil {
		release.Stop()
		db.Close()
		return nil, fmt.Errorf("load state: %w", err)
	}
	if s.repair.Unclean && rows != nil {
		s.repair.Bodies, s.repair.BodiesLeft, s.repair.BodiesErr = s.repairBodies(epochs)
	}
	s.repair.Missing = epochs.missing
	s.repairLeft = s.repair.Unclean && (rows == nil || s.repair.RecordsLeft > 0 || len(s.repair.BodiesLeft) > 0 || s.repair.BodiesErr != nil)
	s.gcStop, s.gcDone = make(chan struct{}), make(chan struct{})
	go s.collectValueLogEvery(valueLogGCEvery)
	return s, nil
}

// collectValueLogEvery runs collectValueLog every period until Close.
func (s *Store) collectValueLogEvery(period time.Duration) {
	defer close(s.gcDone)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-s.gcStop:
			return
		case <-t.C:
			if s.gcHeld.TryLock() { // else a push holds a snapshot: the next round
				_ = collectValueLog(s.db)
				s.gcHeld.Unlock()
			}
		}
	}
}

// Close closes the database.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.gcStop)
		<-s.gcDone
		s.release.Stop()
	})
	if err := s.db.Close(); err != nil {
		return err
	}
	// closed with everything synced: the next open need not look for what a power cut lost,
	// unless this one could not put all of it back (an open without the epochs at hand, as a
	// command that does not open the vault's key, or an epoch missing from the cache)
	s.repairMu.Lock()
	left := s.repairLeft
	s.repairMu.Unlock()
	if left {
		return nil
	}
	if err := os.Remove(filepath.Join(s.db.dir, runningMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (s *Store) nodeFromMirror(m *mirrorRec) *node {
	n := &node{key: rowKey(&m.Row), size: m.Size, mtime: m.Mtime, leaf: m.Leaf, anchor: s.sharedAnchor(m.Anchor)}
	n.setRow(&m.Row)
	return n
}

// sharedAnchor is a, one copy for every node the same epoch anchored (nodes never change an
// anchor in place): a vault's rows share a few thousand anchors, not one each. Callers hold
// t.mu for writing, or are loading.
func (s *Store) sharedAnchor(a vault.Anchor) *vault.Anchor {
	if p, ok := s.anchors[a.Seq]; ok && *p == a {
		return p
	}
	p := &a
	s.anchors[a.Seq] = p
	return p
}

// nodeFromStaged is the node of r, a record as putStaged stored it or getStagedHead read it:
// its Size and leaf are set.
func nodeFromStaged(r *stagedRec, anchor *vault.Anchor) *node {
	n := &node{key: rowKey(&r.Row), size: r.Size, mtime: r.Mtime, staged: true, leaf: r.rowLeaf(), anchor: anchor}
	n.setRow(&r.Row)
	n.setExtra(n.journal(), r.Held)
	return n
}

func contentSize(r *seal.Row) int64 {
	if r.Tier == seal.TierJournal {
		return int64(len(RenderContent(r)))
	}
	return int64(r.Body.Len())
}

// load reads the live tree, the inode numbers and the local attributes from the database.
func (s *Store) load() error {
	return s.db.View(func(txn *badger.Txn) error {
		for _, step := range []func(*badger.Txn) error{s.loadInos, s.loadRows, s.loadLocal, s.loadAttrs, s.loadTrashDirs} {
			if err := step(txn); err != nil {
				return err
			}
		}
		return scanPrefix(txn, pCategory, func(k, v []byte) error {
			s.t.madeCat[string(k[len(pCategory):])] = true
			return nil
		})
	})
}

// loadInos reads the inode numbers and the counter they are allocated from.
func (s *Store) loadInos(txn *badger.Txn) error {
	t := s.t
	var next [8]byte
	if item, err := txn.Get([]byte(kInoNext)); err == nil {
		if err := itemValue(item, func(b []byte) error { copy(next[:], b); return nil }); err != nil {
			return err
		}
		t.inoNext = binary.BigEndian.Uint64(next[:])
	}
	err := scanPrefix(txn, pIno, func(k, v []byte) error {
		t.inos.load(k[len(pIno):], binary.BigEndian.Uint64(v))
		return nil
	})
	t.inos.loaded()
	return err
}

// loadRows reads the mirror, with its leaves, and the staged rows over it.
func (s *Store) loadRows(txn *badger.Txn) error {
	t := s.t
	// the anchors of the mirror rows a staged row replaces, which its node keeps: the staged
	// ids are read first (keys only), so that a vault with nothing staged keeps no map of
	// every row
	anchors := map[string]*vault.Anchor{}
	err := scanKeys(txn, pStaged, func(k []byte) error {
		anchors[string(k[len(pStaged):])] = nil
		return nil
	})
	if err != nil {
		return err
	}
	shared := sharedStrings{}
	err = scanValues(txn, pMirror, func(k, v []byte) error {
		var m mirrorRec
		if err := decodeRecord(v, &m); err != nil {
			return fmt.Errorf("mirror row %q: %w", k, errUndecodable)
		}
		id := string(k[len(pMirror):])
		n := s.nodeFromMirror(&m)
		shared.share(n)
		n.ino = t.inoOf(inoName(n.key))
		if _, ok := anchors[id]; ok {
			anchors[id] = n.anchor
		}
		s.leaves.add(id, m.Leaf)
		t.put(n)
		return nil
	})
	if err != nil {
		return err
	}
	return scanStaged(txn, false, func(id string, r *stagedRec) error {
		key := rowKey(&r.Row)
		if r.Del {
			t.remove(key)
			return nil
		}
		if old := t.get(key); old != nil {
			t.remove(key) // a null and an empty category share an id but not a directory
		}
		n := nodeFromStaged(r, anchors[id])
		shared.share(n)
		n.ino = t.inoOf(inoName(n.key))
		t.put(n)
		s.stagedBytes += n.size
		return nil
	})
}

// sharedStrings gives the nodes a load reads one copy of each category and each short status
// instead of one a row: a vault has few of either, and a mount keeps every row's.
type sharedStrings struct {
	cats   map[string]string
	status map[string]*string
}

// maxSharedStatus bounds the statuses shared and their length: kint's are a short vocabulary,
// and a vault that uses status as free text gains nothing from a table of them.
const maxSharedStatus = 256

func (ss *sharedStrings) share(n *node) {
	if n.key.HasCategory {
		if c, ok := ss.cats[n.key.Category]; ok {
			n.key.Category = c
		} else {
			if ss.cats == nil {
				ss.cats = map[string]string{}
			}
			ss.cats[n.key.Category] = n.key.Category
		}
	}
	if n.status == nil || len(*n.status) > maxSharedStatus {
		return
	}
	if p, ok := ss.status[*n.status]; ok {
		n.status = p
	} else if len(ss.status) < maxSharedStatus {
		if ss.status == nil {
			ss.status = map[string]*string{}
		}
		ss.status[*n.status] = n.status
	}
}

// loadLocal reads the local-only files.
func (s *Store) loadLocal(txn *badger.Txn) error {
	t := s.t
	return scanPrefix(txn, pLocal, func(k, v []byte) error {
		var l localRec
		if err := json.Unmarshal(v, &l); err != nil {
			return fmt.Errorf("local file %q: %w", k, errUndecodable)
		}
		size := int64(len(l.Body))
		if l.RawBody {
			item, err := txn.Get([]byte(pLocalBody + string(k[len(pLocal):])))
			if err != nil {
				return fmt.Errorf("local file %s: its content: %w", keyString(l.Key.key()), err)
			}
			size = item.ValueSize()
		}
		lk := l.Key.key()
		n := &node{key: lk, size: size, mtime: l.Mtime, ino: t.inoOf(inoName(lk)), status: l.Status, meta: l.Meta}
		n.shareKeyCategory()
		t.put(n)
		return nil
	})
}

// update runs fn in one badger transaction under the tree's write lock; the memory changes fn
// queues in apply run only once the transaction has committed. It returns once the change is
// durable; the tree's lock is not held while the disk syncs, so reads go on meanwhile (they may
// see the change a moment before it is durable, never a change that failed).
func (s *Store) update(fn func(txn *badger.Txn, apply *[]func()) error) error {
	n, err := s.updateNoSync(fn)
	if err != nil {
		return err
	}
	return s.db.waitSynced(n)
}

// updateNoSync is update without waiting for the sync: the change is in the tree and in
// badger's logs (it survives the process being killed), and is durable once any later sync
// is done. n is the commit to pass to waitSynced.
func (s *Store) updateNoSync(fn func(txn *badger.Txn, apply *[]func()) error) (n uint64, err error) {
	return s.updateWith(fn, s.db.commit)
}

// updateQueued is updateNoSync without waiting for badger to write the change (see
// commitQueued): the change is in the tree at once, in the logs a moment later, and durable
// once a later sync is done.
func (s *Store) updateQueued(fn func(txn *badger.Txn, apply *[]func()) error) error {
	_, err := s.updateWith(fn, func(fn func(txn *badger.Txn) error) (uint64, error) {
		return 0, s.db.commitQueued(fn)
	})
	return err
}

// updateWith runs fn in one transaction committed by commit, under the tree's write lock, and
// then the memory changes fn queued.
func (s *Store) updateWith(fn func(txn *badger.Txn, apply *[]func()) error, commit func(func(txn *badger.Txn) error) (uint64, error)) (n uint64, err error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	if s.applyErr != nil {
		return 0, s.applyErr
	}
	if err := s.db.failed(); err != nil {
		return 0, err
	}
	saved := s.t.inoNext
	var apply []func()
	s.t.inoUndo, s.attrTx = nil, nil
	n, err = commit(func(txn *badger.Txn) error { return fn(txn, &apply) })
	if err != nil {
		s.t.rollbackInos()
		s.forgetInos(saved)
		return 0, err
	}
	for _, f := range apply {
		f()
	}
	if s.stagedNow && s.onStage != nil {
		s.onStage()
	}
	s.stagedNow = false
	return n, nil
}

// Sync returns once every change made so far is durable, at once when it already is: a close
// or fsync that had nothing to write makes a file created before it durable this way.
func (s *Store) Sync() error { return s.db.durable() }

func checkKey(k vault.Key) error {
	if k.Tier == vault.TrashTier {
		return checkTrashKey(k)
	}
	if !validTier(k.Tier) {
		return fmt.Errorf("%w: unknown tier %q", vault.ErrInvalid, k.Tier)
	}
	if k.HasCategory && k.Tier != seal.TierEntity {
		return fmt.Errorf("%w: only entities have categories", vault.ErrInvalid)
	}
	if strings.ContainsRune(k.Key, 0) && k.Local {
		return fmt.Errorf("%w: NUL in a local file name", vault.ErrInvalid)
	}
	return nil
}

// stagePut stages row (with its body) as the new version of its canonical id. A row that is
// back to the mirror's version is unstaged instead: there is nothing to anchor. That holds
// only while no push is sealing the row: then the version about to be anchored is the sealed
// one, and the change stays staged on top of it (settle drops it if it matches what landed).
func (s *Store) stagePut(txn *badger.Txn, apply *[]func(), row seal.Row, mtime time.Time) (*node, error) {
	id := row.ID()
	key := rowKey(&row)
	m, inMirror, err := getMirror(txn, id, false)
	if err != nil {
		return nil, err
	}
	ino, err := s.t.ino(txn, inoName(key))
	if err != nil {
		return nil, err
	}
	old := s.t.get(key)
	var oldStaged int64
	if old != nil && old.staged {
		oldStaged = old.size
	}
	leaf := common.Hash(seal.Leaf(&row))
	var n *node
	if inMirror && leaf == m.Leaf && eqStrp(m.Row.Category, row.Category) && !s.sealing[id] {
		if err := delStaged(txn, id, nil); err != nil {
			return nil, err
		}
		n = s.nodeFromMirror(&m)
	} else {
		rec := stagedRec{Row: row, Mtime: nanos(mtime), Held: heldReason(&row), At: nanos(s.now()), leaf: &leaf}
		var anchor *vault.Anchor
		if inMirror {
			rec.Base = m.Leaf
			anchor = s.sharedAnchor(m.Anchor)
		}
		if s.stagedBytes-oldStaged+contentSize(&row) > s.StagingCap {
			return nil, fmt.Errorf("%w: %d bytes staged, cap %d", vault.ErrStagingFull, s.stagedBytes, s.StagingCap)
		}
		if err := putStaged(txn, id, &rec); err != nil {
			return nil, err
		}
		n = nodeFromStaged(&rec, anchor)
	}
	n.ino = ino
	*apply = append(*apply, func() {
		if twin, ok := categoryTwin(key); ok {
			s.t.remove(twin)
		}
		s.t.put(n)
		s.stagedBytes -= oldStaged
		s.stagedNow = true
		if n.staged {
			s.stagedBytes += n.size
		}
	})
	return n, nil
}

// stageDelete stages the deletion of the row named by k. A row that was never anchored just
// loses its staged record, unless a push is sealing it: then it is about to be anchored, and
// the deletion is staged to follow it.
func (s *Store) stageDelete(txn *badger.Txn, apply *[]func(), k vault.Key) error {
	id := rowID(k)
	old := s.t.get(k)
	m, inMirror, err := getMirror(txn, id, false)
	if err != nil {
		return err
	}
	if inMirror || s.sealing[id] {
		rec := stagedRec{Del: true, Row: seal.Row{Tier: k.Tier, Category: k.CategoryPtr(), Key: k.Key}, Mtime: nanos(s.now()), At: nanos(s.now())}
		if inMirror {
			rec.Row, rec.Base = m.Row, m.Leaf
		}
		if err := putStaged(txn, id, &rec); err != nil {
			return err
		}
	} else if err := delStaged(txn, id, nil); err != nil {
		return err
	}
	*apply = append(*apply, func() {
		if old != nil && old.staged {
			s.stagedBytes -= old.size
		}
		s.stagedNow = true
		s.t.remove(k)
	})
	return nil
}

func (s *Store) putLocal(txn *badger.Txn, apply *[]func(), k vault.Key, body []byte, mtime time.Time) (*node, error) {
	var status, meta *string
	if old := s.t.get(k); old != nil && old.key.Local {
		status, meta = old.status, old.meta // a write keeps the file's attributes
	}
	return s.putLocalAttrs(txn, apply, k, body, mtime, status, meta)
}

// putLocalAttrs is putLocal with the file's status and meta given.
func (s *Store) putLocalAttrs(txn *badger.Txn, apply *[]func(), k vault.Key, body []byte, mtime time.Time, status, meta *string) (*node, error) {
	ino, err := s.t.ino(txn, inoName(k))
	if err != nil {
		return nil, err
	}
	rec := localRec{Key: recKeyOf(k), Body: body, Mtime: nanos(mtime), Status: status, Meta: meta}
	if err := putLocalRec(txn, localID(k), &rec); err != nil {
		return nil, err
	}
	n := &node{key: k, size: int64(len(body)), mtime: rec.Mtime, ino: ino, status: status, meta: meta}
	n.shareKeyCategory()
	*apply = append(*apply, func() { s.t.put(n) })
	return n, nil
}

// readContent reads the content of the live node n inside txn.
func (s *Store) readContent(txn *badger.Txn, n *node) ([]byte, error) {
	if n.key.Local {
		l, found, err := getLocalRec(txn, localID(n.key))
		if err != nil || !found {
			return nil, orNotFound(err)
		}
		return l.Body, nil
	}
	id := n.id()
	if n.staged {
		r, found, err := getStaged(txn, id)
		if err != nil || !found {
			return nil, orNotFound(err)
		}
		return RenderContent(&r.Row), nil
	}
	if n.size > 0 && n.key.Tier != seal.TierJournal {
		return mirrorBody(txn, id) // content is the body, and a row of some size has one
	}
	m, found, err := getMirror(txn, id, false)
	if err != nil || !found {
		return nil, orNotFound(err)
	}
	if m.Row.Tier == seal.TierJournal || !m.HasBody {
		return RenderContent(&m.Row), nil
	}
	return mirrorBody(txn, id)
}

// fullRow is n's row with its body, read inside txn.
func (s *Store) fullRow(txn *badger.Txn, n *node) (seal.Row, error) {
	row := n.row()
	if row.Tier == seal.TierJournal {
		return row, nil
	}
	body, err := s.readContent(txn, n)
	if err != nil {
		return row, err
	}
	row.Body = seal.BodyOf(body)
	return row, nil
}

func orNotFound(err error) error {
	if err != nil {
		return err
	}
	return vault.ErrNotFound
}

// categoryTwin is the other spelling of an entity key with a null or empty category: both have
// one canonical id, so only one of them can be in the tree.
func categoryTwin(k vault.Key) (vault.Key, bool) {
	if k.Tier != seal.TierEntity || k.Local {
		return vault.Key{}, false
	}
	if k.Category == "" {
		return vault.Key{Tier: k.Tier, HasCategory: !k.HasCategory, Key: k.Key}, true
	}
	return vault.Key{}, false
}

// setLocalAttr sets (value nil: clears) the status or meta of the local file k. They are never
// anchored; a rename of the file onto a row gives them to the row.
func (s *Store) setLocalAttr(k vault.Key, name string, value *string) error {
	return s.update(func(txn *badger.Txn, apply *[]func()) error {
		n := s.t.get(k)
		if n == nil {
			return vault.ErrNotFound
		}
		lid := localID(k)
		var rec localRec
		found, err := getJSON(txn, pLocal+lid, &rec)
		if err != nil || !found {
			return orNotFound(err)
		}
		if name == "status" {
			rec.Status = value
		} else {
			rec.Meta = value
		}
		if !rec.RawBody { // an older record, its content inline: stored again in today's layout
			if rec, _, err = getLocalRec(txn, lid); err != nil {
				return err
			}
			if name == "status" {
				rec.Status = value
			} else {
				rec.Meta = value
			}
			err = putLocalRec(txn, lid, &rec)
		} else {
			err = setJSON(txn, pLocal+lid, &rec)
		}
		if err != nil {
			return err
		}
		nn := *n
		if nn.cat == &n.key.Category {
			nn.cat = &nn.key.Category // its own key's, not the old node's
		}
		nn.status, nn.meta = rec.Status, rec.Meta
		*apply = append(*apply, func() { s.t.put(&nn) })
		return nil
	})
}

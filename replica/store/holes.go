package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// kHistSkipped lists the epochs under a snapshot that the backfill could not open ([]Gap).
const kHistSkipped = "x/histskipped"

// HistoryHole is a run of epochs, Lo to Hi, that the mirror stepped over: the epoch before it
// (Below, nil when Lo is 1) and the snapshot after it (Above) are recorded.
type HistoryHole struct {
	Lo, Hi uint64
	Below  *vault.EpochInfo
	Above  vault.EpochInfo
}

// blocks is the range of blocks whose state the hole leaves unknown: from just after Below's
// block (0 when Below is nil) up to, not including, Above's block.
func (h HistoryHole) blocks() (from, to uint64) {
	if h.Below != nil {
		from = h.Below.Block + 1
	}
	return from, h.Above.Block
}

// HistoryHoles lists the holes in the recorded epochs, oldest first. The status of a mount
// reads it, so it is kept between changes to the epoch records (see holeCache), and a scan
// takes each seq from its record's key and decodes only the records beside a hole: the
// history of a vault holds thousands of epochs.
func (s *Store) HistoryHoles() ([]HistoryHole, error) {
	holes, err := s.holes.get(s.scanHoles)
	return slices.Clone(holes), err
}

// scanHoles reads the holes from the epoch records.
func (s *Store) scanHoles() ([]HistoryHole, error) {
	var holes []HistoryHole
	err := s.db.View(func(txn *badger.Txn) error {
		prev := uint64(0) // the seq of the record before, 0 before the first
		err := scanKeys(txn, pEpoch, func(k []byte) error {
			seq := beUint64(k[len(pEpoch):])
			if seq > prev+1 {
				holes = append(holes, HistoryHole{Lo: prev + 1, Hi: seq - 1})
			}
			prev = seq
			return nil
		})
		if err != nil {
			return err
		}
		for i := range holes {
			h := &holes[i]
			if err := getEpochRecord(txn, h.Hi+1, &h.Above); err != nil {
				return err
			}
			if h.Lo > 1 {
				h.Below = new(vault.EpochInfo)
				if err := getEpochRecord(txn, h.Lo-1, h.Below); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return holes, err
}

// getEpochRecord reads the epoch record of seq, which must exist.
func getEpochRecord(txn *badger.Txn, seq uint64, info *vault.EpochInfo) error {
	found, err := getJSON(txn, epochKey(seq), info)
	if err == nil && !found {
		err = fmt.Errorf("epoch record %d is missing", seq)
	}
	return err
}

// HistoryFrom is the oldest recorded epoch from which every epoch up to the mirror is recorded
// (a zero Head when none is).
func (s *Store) HistoryFrom() (vault.Head, error) {
	holes, err := s.HistoryHoles()
	if err != nil {
		return vault.Head{}, err
	}
	return s.historyFrom(holes)
}

// historyFrom is HistoryFrom given the holes.
func (s *Store) historyFrom(holes []HistoryHole) (vault.Head, error) {
	if n := len(holes); n > 0 {
		a := holes[n-1].Above
		return vault.Head{Seq: a.Seq, Digest: a.Digest, Block: a.Block}, nil
	}
	var first vault.EpochInfo
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := getJSON(txn, epochKey(1), &first)
		return err
	})
	return vault.Head{Seq: first.Seq, Digest: first.Digest, Block: first.Block}, err
}

// CheckHistory says whether the versions anchored at or before block are all on this
// machine: vault.ErrHistoryIncomplete when the block falls in a hole.
func (s *Store) CheckHistory(block uint64) error {
	holes, err := s.HistoryHoles()
	if err != nil {
		return err
	}
	for _, h := range holes {
		if from, to := h.blocks(); block >= from && block < to {
			return fmt.Errorf("%w: block %d lies under snapshot %d (block %d), and the epochs under it were never fetched here; kintfs pull --full fetches them",
				vault.ErrHistoryIncomplete, block, h.Above.Seq, to)
		}
	}
	return nil
}

// holeCache keeps the history holes between changes to the epoch records: a lookup of
// @<block> checks them (45 ms a scan for 2,000 epochs, BenchmarkHistoryView, when every record
// was decoded), and so does every read of a mount's status. Every write of an epoch record
// forgets them once committed.
type holeCache struct {
	gen  atomic.Uint64 // counts forget calls: a scan that began before one is not served again
	kept readCache[uint64, []HistoryHole]
}

// get is the kept holes, read with scan when a forget came since. The caller may not change them.
func (c *holeCache) get(scan func() ([]HistoryHole, error)) ([]HistoryHole, error) {
	return c.kept.get(c.generation(), scan)
}

// generation counts the forget calls so far.
func (c *holeCache) generation() uint64 { return c.gen.Load() }

// forget drops the kept holes; callers call it after committing a change to the epoch records.
func (c *holeCache) forget() { c.gen.Add(1) }

// ReplayState is the state of the vault as of one epoch, by canonical id, for checking the
// roots of the epochs after it.
type ReplayState struct {
	leaves leafSet
}

func (st *ReplayState) changes(p *seal.Plaintext) []leafChange {
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

// RootAfter is the rows_root and the row count of the state with p applied.
func (st *ReplayState) RootAfter(p *seal.Plaintext) (common.Hash, int) {
	return st.leaves.rootWith(st.changes(p), p.Snapshot)
}

// Step applies p to the state.
func (st *ReplayState) Step(p *seal.Plaintext) {
	if p.Snapshot {
		st.leaves.reset(st.changes(p))
	} else {
		st.leaves.apply(st.changes(p))
	}
}

// StateAt rebuilds the state as of a recorded epoch (empty before the first) from the
// history index: for each row, its newest version at or before that epoch.
func (s *Store) StateAt(info *vault.EpochInfo) (*ReplayState, error) {
	st := &ReplayState{}
	if info == nil {
		return st, nil
	}
	bound := append(be64(info.Block), be64(info.Seq)...)
	type newest struct {
		at   []byte
		leaf *common.Hash
	}
	rows := map[string]newest{}
	err := s.db.View(func(txn *badger.Txn) error {
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
			if err := decodeRecord(v, &rec); err != nil {
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

// WriteVersions writes to the history index the rows p anchored at anchor (only those that differ
// from before, with onlyChanged) and the deletion of each row of before it removed: those it
// names, or for a snapshot every one it leaves out.
func (s *Store) WriteVersions(anchor vault.Anchor, p *seal.Plaintext, before *ReplayState, onlyChanged bool) error {
	mtime := nanos(seal.ParseCreatedAt(p.CreatedAt))
	err := s.db.writeBatch(func(wb *badger.WriteBatch) error {
		puts := map[string]bool{}
		for i := range p.Rows {
			row := p.Rows[i]
			id := row.ID()
			puts[id] = true
			if old, ok := before.leaves.get(id); onlyChanged && ok && old == common.Hash(seal.Leaf(&row)) {
				continue
			}
			if err := setHistory(wb, id, anchor.Block, anchor.Seq, &histRec{Row: &row, Anchor: anchor, Mtime: mtime}); err != nil {
				return err
			}
		}
		gone := func(id string) error {
			if _, ok := before.leaves.get(id); !ok || puts[id] {
				return nil
			}
			return setHistory(wb, id, anchor.Block, anchor.Seq, &histRec{Anchor: anchor, Mtime: mtime})
		}
		if p.Snapshot {
			for _, e := range before.leaves.e {
				if err := gone(e.id); err != nil {
					return err
				}
			}
			return nil
		}
		for _, d := range p.Deleted {
			if err := gone(d.ID()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record epoch %d: %w", anchor.Seq, err)
	}
	return s.db.Sync()
}

func setHistory(wb *badger.WriteBatch, id string, block, seq uint64, rec *histRec) error {
	return wb.SetEntry(historyEntry(id, block, seq, rec))
}

// BlockAt is the block of the newest recorded epoch whose block timestamp is at or before t
// (0, the tree before the first epoch, when none is). It needs no chain: the times are
// recorded as epochs are pushed and pulled. A time that falls where this machine holds no
// history, or before the times are read, is refused with vault.ErrHistoryIncomplete.
func (s *Store) BlockAt(t time.Time) (uint64, error) {
	if t.Unix() < 0 {
		return 0, nil
	}
	at := uint64(t.Unix())
	var block uint64
	err := s.db.View(func(txn *badger.Txn) error {
		var prev *vault.EpochInfo
		return scanValues(txn, pEpoch, func(k, v []byte) error {
			var info vault.EpochInfo
			if err := decodeJSON(v, &info); err != nil {
				return err
			}
			defer func() { prev = &info }()
			if info.Time == 0 {
				return fmt.Errorf("%w: the block time of epoch %d is not recorded yet (the next pull records it)", vault.ErrHistoryIncomplete, info.Seq)
			}
			if info.Time > at {
				// the newest epoch at or before t could be one this machine never fetched
				if hole := (prev == nil && info.Seq > 1) || (prev != nil && prev.Seq+1 != info.Seq); hole {
					return fmt.Errorf("%w: %s lies under snapshot %d, and the epochs under it were never fetched here; kintfs pull --full fetches them",
						vault.ErrHistoryIncomplete, t.UTC().Format(time.RFC3339), info.Seq)
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

// RecordHistory writes the epoch record of an epoch whose versions WriteVersions recorded
// (which marks it recorded), with the category count at it, never touching the mirror. p is
// the epoch's plaintext: the rows it changes let the count start from the epoch before's.
func (s *Store) RecordHistory(info *vault.EpochInfo, p *seal.Plaintext) error {
	defer s.holes.forget()
	var changes []leafChange // nil: counted whole, as for a snapshot, which changes every row
	if p != nil && !p.Snapshot {
		changes = make([]leafChange, 0, len(p.Rows)+len(p.Deleted))
		for i := range p.Rows {
			changes = append(changes, leafChange{id: p.Rows[i].ID()})
		}
		for _, d := range p.Deleted {
			changes = append(changes, leafChange{id: d.ID(), del: true})
		}
	}
	return s.db.Update(func(txn *badger.Txn) error {
		if err := s.recordCategoryCount(txn, info.Block, info.Seq, changes, nil); err != nil {
			return err
		}
		s.untimed.noteEpochRecord(info)
		return setJSON(txn, epochKey(info.Seq), info)
	})
}

// RecordBoundary writes the category count at the snapshot above a filled hole.
func (s *Store) RecordBoundary(block, seq uint64) error {
	return s.db.Update(func(txn *badger.Txn) error { return s.recordCategoryCount(txn, block, seq, nil, nil) })
}

// HistorySkipped lists the epochs under a snapshot that the backfill could not open.
func (s *Store) HistorySkipped() ([]vault.Gap, error) {
	var skipped []vault.Gap
	err := s.getState(kHistSkipped, &skipped)
	return skipped, err
}

// SetHistorySkipped records the epochs the backfill could not open.
func (s *Store) SetHistorySkipped(skipped []vault.Gap) error {
	return s.setState(kHistSkipped, skipped)
}

// EpochsWithoutTime lists the recorded epochs whose block timestamp is not recorded yet.
func (s *Store) EpochsWithoutTime() ([]vault.EpochInfo, error) {
	s.untimed.mu.Lock()
	defer s.untimed.mu.Unlock()
	if !s.untimed.known {
		missing, err := s.scanUntimed()
		if err != nil {
			return nil, err
		}
		s.untimed.seqs = map[uint64]bool{}
		for _, info := range missing {
			s.untimed.seqs[info.Seq] = true
		}
		s.untimed.known = true
		return missing, nil
	}
	// after the first scan, only the records written since without a time are read
	var missing []vault.EpochInfo
	err := s.db.View(func(txn *badger.Txn) error {
		for seq := range s.untimed.seqs {
			var info vault.EpochInfo
			found, err := getJSON(txn, epochKey(seq), &info)
			if err != nil {
				return err
			}
			if !found {
				continue // noted in a transaction not committed yet (or never)
			}
			if info.Time != 0 {
				delete(s.untimed.seqs, seq)
				continue
			}
			missing = append(missing, info)
		}
		return nil
	})
	sort.Slice(missing, func(i, j int) bool { return missing[i].Seq < missing[j].Seq })
	return missing, err
}

// scanUntimed reads every epoch record for those without a time.
func (s *Store) scanUntimed() ([]vault.EpochInfo, error) {
	var missing []vault.EpochInfo
	err := s.db.View(func(txn *badger.Txn) error {
		return scanValues(txn, pEpoch, func(k, v []byte) error {
			var info vault.EpochInfo
			if err := decodeJSON(v, &info); err != nil {
				return err
			}
			if info.Time == 0 {
				missing = append(missing, info)
			}
			return nil
		})
	})
	return missing, err
}

// untimedEpochs are the epoch records without a block time, kept after one scan of them all
// so that each push and pull reads only the few it wrote.
type untimedEpochs struct {
	mu    sync.Mutex
	known bool // seqs holds every record without a time (and maybe some that have one now)
	seqs  map[uint64]bool
}

// noteEpochRecord is told of every epoch record written.
func (u *untimedEpochs) noteEpochRecord(info *vault.EpochInfo) {
	if info.Time != 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.known {
		u.seqs[info.Seq] = true
	}
}

// forget makes the next EpochsWithoutTime scan every record again.
func (u *untimedEpochs) forget() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.known, u.seqs = false, nil
}

// SetEpochTimes rewrites the epoch records in list with their Time, in one batch.
func (s *Store) SetEpochTimes(list []vault.EpochInfo) error {
	defer s.holes.forget()
	err := s.db.writeBatch(func(wb *badger.WriteBatch) error {
		for i := range list {
			b, err := json.Marshal(&list[i])
			if err != nil {
				return err
			}
			if err := wb.Set([]byte(epochKey(list[i].Seq)), b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.db.Sync()
}

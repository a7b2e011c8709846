package store

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"

	"kintfs/replica/vault"
)

// MirrorHead is the head of the mirror.
func (s *Store) MirrorHead() (vault.Head, error) {
	var h vault.Head
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := getJSON(txn, kHead, &h)
		return err
	})
	return h, err
}

// getState reads the state record key into v (left as it is when absent).
func (s *Store) getState(key string, v any) error {
	return s.db.View(func(txn *badger.Txn) error {
		_, err := getJSON(txn, key, v)
		return err
	})
}

// setState writes the state record key.
func (s *Store) setState(key string, v any) error {
	return s.db.Update(func(txn *badger.Txn) error { return setJSON(txn, key, v) })
}

// Epochs lists the epochs this machine holds, oldest first.
func (s *Store) Epochs() ([]vault.EpochInfo, error) {
	var out []vault.EpochInfo
	err := s.db.View(func(txn *badger.Txn) error {
		return scanPrefix(txn, pEpoch, func(k, v []byte) error {
			var e vault.EpochInfo
			if err := decodeJSON(v, &e); err != nil {
				return err
			}
			out = append(out, e)
			return nil
		})
	})
	return out, err
}

// BlocksText is .kint/blocks: one line per anchored epoch held here, "seq block tx time",
// the time being the block's (RFC 3339, UTC; "-" until it is read from the chain).
func (s *Store) BlocksText() []byte {
	eps, err := s.Epochs()
	if err != nil {
		return []byte(fmt.Sprintf("error: %v\n", err))
	}
	var b []byte
	for _, e := range eps {
		at := "-"
		if e.Time != 0 {
			at = time.Unix(int64(e.Time), 0).UTC().Format(time.RFC3339)
		}
		b = fmt.Appendf(b, "%d %d %s %s\n", e.Seq, e.Block, e.Tx, at)
	}
	return b
}

// Gaps are the epochs the pulls so far could not apply.
func (s *Store) Gaps() ([]vault.Gap, error) {
	var gaps []vault.Gap
	err := s.getState(kGaps, &gaps)
	return gaps, err
}

// SetGaps records the epochs the pulls so far could not apply.
func (s *Store) SetGaps(gaps []vault.Gap) error { return s.setState(kGaps, gaps) }

// Seen is the newest chain head this machine has seen (the watermark).
func (s *Store) Seen() (vault.Head, error) {
	var h vault.Head
	err := s.getState(kSeen, &h)
	return h, err
}

// SetSeen records the newest chain head this machine has seen.
func (s *Store) SetSeen(h vault.Head) error { return s.setState(kSeen, &h) }

// Bucket is the bucket ratchet: the largest padding bucket of an epoch applied so far.
func (s *Store) Bucket() (int, error) {
	var b int
	err := s.getState(kBucket, &b)
	return b, err
}

// SetBucket records the bucket ratchet.
func (s *Store) SetBucket(b int) error { return s.setState(kBucket, b) }

// CacheCheckedTo is the newest epoch up to which the epoch cache's metadata was found in
// kint's form by an open (0 when none was).
func (s *Store) CacheCheckedTo() (uint64, error) {
	var seq uint64
	err := s.getState(kCacheChecked, &seq)
	return seq, err
}

// SetCacheCheckedTo records CacheCheckedTo.
func (s *Store) SetCacheCheckedTo(seq uint64) error { return s.setState(kCacheChecked, seq) }

// EpochRecord is the record of the applied or recorded epoch seq; found is false when there
// is none.
func (s *Store) EpochRecord(seq uint64) (info vault.EpochInfo, found bool, err error) {
	err = s.db.View(func(txn *badger.Txn) error {
		var err error
		found, err = getJSON(txn, epochKey(seq), &info)
		return err
	})
	return info, found, err
}

// Summary is the local store's part of the status.
type Summary struct {
	Seen        vault.Head // the newest chain head this machine has seen
	Mirror      vault.Head
	Conflicts   []vault.Conflict
	Gaps        []vault.Gap
	PendingPush []uint64 // the seqs the push journal holds
	StagedRows  int
	StagedDels  int
	StagedBytes int64
	Held        []vault.HeldRow
	// OldestStaged is when the oldest staged change was made; zero when nothing is staged.
	OldestStaged time.Time
	// HistoryFrom is the oldest epoch from which every version is recorded (HistoryFrom).
	HistoryFrom vault.Head
	Holes       int // runs of epochs under a snapshot whose versions are not recorded
	LocalFiles  int // files kept on this machine only (dotfiles, local-only rules, conflict copies), the trash aside
}

// liveConflicts are the conflicts that stand: one whose copy still exists under its name (the
// user moving or removing it resolves it), and a deletion here of a row the chain changed (no
// copy) while the row stands as the chain left it (deleting it again, or changing it, does).
func (s *Store) liveConflicts(all []vault.Conflict) []vault.Conflict {
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	live := []vault.Conflict{}
	for _, c := range all {
		if c.Copy != "" && s.t.get(c.CopyKey()) != nil {
			live = append(live, c)
		}
		if c.Copy == "" {
			if n := s.t.get(c.RowKey()); n != nil && !n.staged {
				live = append(live, c)
			}
		}
	}
	return live
}

// PruneConflicts forgets the conflicts that are resolved (their copy was moved or removed),
// and returns those that stand.
func (s *Store) PruneConflicts() ([]vault.Conflict, error) {
	var live []vault.Conflict
	err := s.db.Update(func(txn *badger.Txn) error {
		var all []vault.Conflict
		if _, err := getJSON(txn, kConflict, &all); err != nil {
			return err
		}
		live = s.liveConflicts(all)
		if len(live) == len(all) {
			return nil
		}
		return setJSON(txn, kConflict, live)
	})
	return live, err
}

// Summary reads the local store's part of the status. The answer is kept until the next
// commit (see readCache).
func (s *Store) Summary() (*Summary, error) {
	// the holes are kept apart and forgotten just after the commit that changes them
	sum, err := s.summaries.get(summaryAt{s.commits(), s.holes.generation()}, s.readSummary)
	if err != nil {
		return nil, err
	}
	c := *sum
	c.Held, c.Conflicts, c.Gaps, c.PendingPush = slices.Clone(sum.Held), slices.Clone(sum.Conflicts), slices.Clone(sum.Gaps), slices.Clone(sum.PendingPush)
	return &c, nil
}

// readSummary reads Summary from the store.
func (s *Store) readSummary() (*Summary, error) {
	sum := &Summary{Held: []vault.HeldRow{}, Conflicts: []vault.Conflict{}, Gaps: []vault.Gap{}}
	s.t.mu.RLock()
	sum.LocalFiles = s.t.locals
	s.t.mu.RUnlock()
	var oldest int64
	err := s.db.View(func(txn *badger.Txn) error {
		for key, v := range map[string]any{kSeen: &sum.Seen, kHead: &sum.Mirror, kConflict: &sum.Conflicts, kGaps: &sum.Gaps} {
			if _, err := getJSON(txn, key, v); err != nil {
				return err
			}
		}
		err := scanPrefix(txn, pPending, func(k, v []byte) error {
			sum.PendingPush = append(sum.PendingPush, beUint64(k[len(pPending):]))
			return nil
		})
		if err != nil {
			return err
		}
		return scanStaged(txn, false, func(id string, st *stagedRec) error {
			if st.Del {
				sum.StagedDels++
			} else {
				sum.StagedRows++
				sum.StagedBytes += st.Size
			}
			if st.Held != "" {
				sum.Held = append(sum.Held, vault.HeldRow{Tier: st.Row.Tier, Category: st.Row.Category, Key: st.Row.Key, Reason: st.Held})
			}
			if oldest == 0 || st.At < oldest {
				oldest = st.At
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	sum.Held = append(sum.Held, s.invalidJournals()...)
	holes, err := s.HistoryHoles()
	if err != nil {
		return nil, err
	}
	sum.Holes = len(holes)
	if sum.HistoryFrom, err = s.historyFrom(holes); err != nil {
		return nil, err
	}
	if oldest != 0 {
		sum.OldestStaged = fromNanos(oldest)
	}
	sum.Conflicts = s.liveConflicts(sum.Conflicts)
	return sum, nil
}

// OnStage installs fn, told after each commit that staged something (the worker's kick).
func (s *Store) OnStage(fn func()) { s.onStage = fn }

// Anchorable is the content bytes of the staged rows that are not held: what the size
// trigger of the worker counts.
func (s *Store) Anchorable() int64 {
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	return s.t.anchorable
}

// summaryAt is what a Summary was read after: the commits made, and the holes' generation.
type summaryAt struct{ commits, holes uint64 }

// readCache keeps the last answer of a read over the whole store with what it was read after
// (the count of commits made). A status read (each open of .kint/status, and its size) costs
// tens of milliseconds on a vault of 100,000 rows, and most come while nothing changes.
type readCache[K comparable, T any] struct {
	mu    sync.Mutex
	known bool
	at    K
	v     T
}

// get is the kept answer when it was read at at, else read's (kept in turn). The caller takes
// at before read runs: an answer read while a commit was made is kept with the count from
// before that commit, so the next get reads again.
func (c *readCache[K, T]) get(at K, read func() (T, error)) (T, error) {
	c.mu.Lock()
	if c.known && c.at == at {
		v := c.v
		c.mu.Unlock()
		return v, nil
	}
	c.mu.Unlock()
	v, err := read()
	if err == nil {
		c.mu.Lock()
		c.known, c.at, c.v = true, at, v
		c.mu.Unlock()
	}
	return v, err
}

// commits is how many commits the store has made, read under the tree's lock: a commit that
// changes the tree applies the change before it lets the lock go, so what is read after this
// holds at least what those commits did. A commit that does not take the lock (a state record)
// is counted once badger holds it.
func (s *Store) commits() uint64 {
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	return s.db.commits()
}

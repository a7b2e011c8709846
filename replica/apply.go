package replica

import (
	"fmt"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/seal"
)

// Conflict is a row both this machine and the chain changed: the chain's version stands in
// place and the local one is kept beside it as a local-only file.
type Conflict struct {
	Tier     string  `json:"tier"`
	Category *string `json:"category"`
	Key      string  `json:"key"`
	Seq      uint64  `json:"seq"`
	Copy     string  `json:"copy"` // the local file holding this machine's version ("" for a deletion)
	At       string  `json:"at"`
}

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
}

// ApplyEpoch applies one opened epoch to the mirror and the history index in one transaction,
// checking the running root against the anchored rows_root first. It returns the keys whose
// live version changed.
func (s *Store) ApplyEpoch(info EpochInfo, p *seal.Plaintext, opt ApplyOptions) ([]Key, []Conflict, error) {
	var changed []Key
	var conflicts []Conflict
	err := s.update(func(txn *badger.Txn, apply *[]func()) error {
		var head Head
		if _, err := getJSON(txn, kHead, &head); err != nil {
			return err
		}
		if info.Seq != head.Seq+1 && !p.Snapshot {
			return fmt.Errorf("epoch %d does not follow the mirror at seq %d", info.Seq, head.Seq)
		}
		anchor := Anchor{Seq: info.Seq, Block: info.Block, Tx: info.Tx}
		mtime := opt.Mtime
		if mtime.IsZero() {
			if t, err := time.Parse("2006-01-02T15:04:05Z", p.CreatedAt); err == nil {
				mtime = t
			}
		}
		// the new state: puts (with their leaves) and deletions by id
		puts := map[string]*seal.Row{}
		next := map[string]common.Hash{}
		for i := range p.Rows {
			id := p.Rows[i].ID()
			puts[id], next[id] = &p.Rows[i], seal.Leaf(&p.Rows[i])
		}
		dels := map[string]seal.Deleted{}
		for _, d := range p.Deleted {
			dels[d.ID()] = d
		}
		if p.Snapshot {
			for _, e := range s.leaves.e {
				if _, ok := puts[e.id]; !ok {
					if _, ok := dels[e.id]; !ok {
						dels[e.id] = seal.Deleted{} // gone from the full state
					}
				}
			}
		}
		changes := leafChanges(next, dels)
		root, nRows := s.leaves.rootWith(changes, p.Snapshot)
		if root != common.Hash(p.RowsRoot) {
			return fmt.Errorf("epoch %d: %w (computed %x, anchored %x)", info.Seq, ErrRootMismatch, root[:6], p.RowsRoot[:6])
		}
		if nRows != p.NRows {
			return fmt.Errorf("epoch %d: n_rows says %d, the state holds %d", info.Seq, p.NRows, nRows)
		}
		for id := range dels {
			if _, ok := puts[id]; ok {
				continue
			}
			m, found, err := getMirror(txn, id, false)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			if err := delMirror(txn, id); err != nil {
				return err
			}
			if err := setJSON(txn, string(historyKey(id, info.Block, info.Seq)), &histRec{Anchor: anchor, Mtime: nanos(mtime)}); err != nil {
				return err
			}
			k, c, err := s.settle(txn, apply, id, rowKey(&m.Row), nil, info, opt)
			if err != nil {
				return err
			}
			changed = append(changed, k...)
			conflicts = append(conflicts, c...)
		}
		for id, r := range puts {
			if old, ok := s.leaves.get(id); ok && old == next[id] {
				if m, found, _ := getMirror(txn, id, false); found && eqStrp(m.Row.Category, r.Category) {
					continue // a snapshot repeating a row unchanged
				}
			}
			rowMtime := mtime
			if st, found, err := getStaged(txn, id); err != nil {
				return err
			} else if found && opt.Own && !st.Del && seal.Leaf(&st.Row) == next[id] {
				rowMtime = fromNanos(st.Mtime)
			}
			rec := newMirrorRec(*r, next[id], anchor, nanos(rowMtime))
			if err := putMirror(txn, id, &rec); err != nil {
				return err
			}
			if err := setJSON(txn, string(historyKey(id, info.Block, info.Seq)), &histRec{Row: r, Anchor: anchor, Mtime: nanos(rowMtime)}); err != nil {
				return err
			}
			k, c, err := s.settle(txn, apply, id, rowKey(r), &rec, info, opt)
			if err != nil {
				return err
			}
			changed = append(changed, k...)
			conflicts = append(conflicts, c...)
		}
		*apply = append(*apply, func() {
			if p.Snapshot {
				s.leaves.reset(changes)
			} else {
				s.leaves.apply(changes)
			}
		})
		if err := s.recordCategoryCount(txn, info.Block, info.Seq); err != nil {
			return err
		}
		if err := setJSON(txn, string(pEpoch)+string(be64(info.Seq)), &info); err != nil {
			return err
		}
		if err := setJSON(txn, kHead, &Head{Seq: info.Seq, Digest: info.Digest, Block: info.Block}); err != nil {
			return err
		}
		if len(conflicts) > 0 {
			var all []Conflict
			if _, err := getJSON(txn, kConflict, &all); err != nil {
				return err
			}
			if err := setJSON(txn, kConflict, append(all, conflicts...)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	s.notify(changed)
	return changed, conflicts, nil
}

// settle brings the live tree in line after the mirror row id changed to m (nil: deleted),
// reconciling a staged change to the same row.
func (s *Store) settle(txn *badger.Txn, apply *[]func(), id string, k Key, m *mirrorRec, info EpochInfo, opt ApplyOptions) ([]Key, []Conflict, error) {
	st, found, err := getStaged(txn, id)
	if err != nil {
		return nil, nil, err
	}
	changed := []Key{k}
	var conflicts []Conflict
	var chainLeaf common.Hash
	if m != nil {
		chainLeaf = m.Leaf
	}
	if found {
		same := (st.Del && m == nil) || (!st.Del && m != nil && seal.Leaf(&st.Row) == m.Leaf)
		switch {
		case same:
			if err := delStaged(txn, id); err != nil {
				return nil, nil, err
			}
			found = false
		case opt.Own || st.Base == chainLeaf:
			// changed again after sealing, or the chain did not touch what it was based on:
			// the staged change rebases on the new mirror
			st.Base = chainLeaf
			if err := putStaged(txn, id, &st); err != nil {
				return nil, nil, err
			}
		default:
			c := Conflict{Tier: st.Row.Tier, Category: st.Row.Category, Key: st.Row.Key, Seq: info.Seq,
				At: time.Now().UTC().Format(time.RFC3339)}
			if !st.Del {
				local := Key{Tier: k.Tier, Category: rowKey(&st.Row).Category, Local: true,
					Key: "." + conflictName(st.Row.Key) + fmt.Sprintf(".conflict-%d", info.Seq)}
				body := RenderContent(&st.Row)
				if _, err := s.putLocal(txn, apply, local, body, fromNanos(st.Mtime)); err != nil {
					return nil, nil, err
				}
				c.Copy = local.Key
				changed = append(changed, local)
			}
			if err := delStaged(txn, id); err != nil {
				return nil, nil, err
			}
			conflicts = append(conflicts, c)
			found = false
		}
	}
	var n *node
	switch {
	case found && !st.Del:
		var a *Anchor
		if m != nil {
			a = s.sharedAnchor(m.Anchor)
		}
		n = nodeFromStaged(&st, a)
	case found && st.Del:
	case m != nil:
		n = s.nodeFromMirror(m)
	}
	if n != nil {
		ino, err := s.t.ino(txn, inoName(n.key))
		if err != nil {
			return nil, nil, err
		}
		n.ino = ino
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

var conflictEscaper = strings.NewReplacer("%", "%25", "/", "%2F", "\x00", "%00")

func conflictName(key string) string { return conflictEscaper.Replace(key) }

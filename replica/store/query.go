package store

import (
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// HistoryEntry is one anchored version of a row (Row nil: deleted by that epoch).
type HistoryEntry struct {
	Anchor vault.Anchor `json:"anchor"`
	Row    *seal.Row    `json:"row"`
}

// Versions lists every anchored version of a row this machine holds, oldest first.
func (s *Store) Versions(k vault.Key) ([]HistoryEntry, error) {
	id := rowID(k)
	var out []HistoryEntry
	err := s.db.View(func(txn *badger.Txn) error {
		return scanPrefix(txn, pHistory+id+"\x00", func(key, v []byte) error {
			if len(key) != len(pHistory)+len(id)+17 {
				return nil // a longer id that shares this prefix
			}
			var h histRec
			if err := decodeRecord(v, &h); err != nil {
				return err
			}
			out = append(out, HistoryEntry{Anchor: h.Anchor, Row: h.Row})
			return nil
		})
	})
	return out, err
}

// Prove builds the inclusion proof of k's anchored version.
func (s *Store) Prove(k vault.Key) (*vault.Proof, error) {
	head, err := s.MirrorHead()
	if err != nil {
		return nil, err
	}
	var info vault.EpochInfo
	found := false
	err = s.db.View(func(txn *badger.Txn) error {
		var err error
		found, err = getJSON(txn, epochKey(head.Seq), &info)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: nothing anchored has been applied on this machine yet", vault.ErrNotFound)
	}
	id := rowID(k)
	s.t.mu.RLock()
	leaves := s.leaves.leaves()
	index, held := s.leaves.find(id)
	if !held {
		index = -1
	}
	n := s.t.get(k)
	var anchored *vault.Anchor
	if n != nil && n.anchor != nil {
		a := *n.anchor
		anchored = &a
	}
	s.t.mu.RUnlock()
	if index < 0 {
		return nil, fmt.Errorf("%w: %s has no anchored version", vault.ErrNotFound, keyString(k))
	}
	p := &vault.Proof{Key: k, Leaf: leaves[index], Steps: seal.MerkleProof(leaves, index), RowsRoot: info.RowsRoot, Epoch: info,
		Staged: n != nil && n.staged, Anchored: anchored}
	if !seal.VerifyProof(p.Leaf, p.Steps, p.RowsRoot) {
		return p, fmt.Errorf("the proof of %s does not verify against rows_root %s", keyString(k), info.RowsRoot.Hex())
	}
	return p, nil
}

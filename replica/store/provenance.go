package store

import (
	"bytes"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// provenanceBatch is how many rows one transaction of KeepProvenance looks at.
const provenanceBatch = 256

// KeepProvenance runs once the history under the snapshot snap is recorded (before is the
// state the epochs under it left). A machine that restored from snap recorded every row at
// snap; a row snap carried unchanged (the same leaf as its version before) keeps, as kint's
// anchored_version does and as on the machines that applied the epochs under it, the epoch
// where its leaf last changed: the repeat at snap leaves the history, and the mirror's anchor
// (user.kint.anchored, verify) moves back to that version's unless the row changed since. It
// returns how many rows it moved back.
func (s *Store) KeepProvenance(snap vault.Anchor, p *seal.Plaintext, before *ReplayState) (int, error) {
	var ids []string
	for i := range p.Rows {
		id := p.Rows[i].ID()
		if old, ok := before.leaves.get(id); ok && old == common.Hash(seal.Leaf(&p.Rows[i])) {
			ids = append(ids, id)
		}
	}
	moved := 0
	for start := 0; start < len(ids); start += provenanceBatch {
		batch := ids[start:min(start+provenanceBatch, len(ids))]
		n := 0
		err := s.update(func(txn *badger.Txn, apply *[]func()) error {
			n = 0
			for _, id := range batch {
				ok, err := s.keepProvenance(txn, apply, id, snap)
				if err != nil {
					return err
				}
				if ok {
					n++
				}
			}
			return nil
		})
		if err != nil {
			return moved, err
		}
		moved += n
	}
	return moved, nil
}

// keepProvenance drops the repeat of id at snap when the version before it has the same
// leaf, and moves the mirror's anchor of id back to that version's.
func (s *Store) keepProvenance(txn *badger.Txn, apply *[]func(), id string, snap vault.Anchor) (bool, error) {
	at := historyKey(id, snap.Block, snap.Seq)
	var cur histRec
	found, err := getRecord(txn, string(at), &cur)
	if err != nil || !found || cur.Row == nil {
		return false, err
	}
	prev, err := versionBefore(txn, id, snap)
	if err != nil || prev == nil || prev.Row == nil || seal.Leaf(prev.Row) != seal.Leaf(cur.Row) {
		return false, err
	}
	if err := txn.Delete(at); err != nil {
		return false, err
	}
	m, found, err := getMirror(txn, id, false)
	if err != nil || !found || m.Anchor.Seq != snap.Seq || m.Leaf != common.Hash(seal.Leaf(cur.Row)) {
		return true, err
	}
	m.Anchor = prev.Anchor
	// the record alone: read without its body, which stays as it is under pBody
	if err := putRecord(txn, pMirror+id, &m); err != nil {
		return false, err
	}
	k, a := rowKey(&m.Row), prev.Anchor
	*apply = append(*apply, func() {
		if n := s.t.get(k); n != nil && n.anchor != nil && n.anchor.Seq == snap.Seq {
			n.anchor = &a
		}
	})
	return true, nil
}

// versionBefore is the newest history record of id anchored before snap (nil when none).
func versionBefore(txn *badger.Txn, id string, snap vault.Anchor) (*histRec, error) {
	prefix := append([]byte(pHistory+id), 0)
	opts := badger.DefaultIteratorOptions
	opts.Reverse = true
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	defer it.Close()
	at := historyKey(id, snap.Block, snap.Seq)
	for it.Seek(at); it.ValidForPrefix(prefix); it.Next() {
		k := it.Item().Key()
		if len(k) != len(at) || bytes.Compare(k, at) >= 0 {
			continue // a longer id sharing the prefix, or the snapshot's own record
		}
		var rec histRec
		if err := itemValue(it.Item(), func(b []byte) error { return decodeRecord(b, &rec) }); err != nil {
			return nil, err
		}
		return &rec, nil
	}
	return nil, nil
}

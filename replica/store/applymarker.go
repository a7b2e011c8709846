package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// An epoch too large for one badger transaction is applied in batches. Before the first
// batch, its plaintext and a marker naming it are written durably:
//
//	x/applying          -> applyMarker (written last: its presence means the pieces are whole)
//	x/applying/<be32 i> -> piece i of the plaintext, applyPieceSize bytes each
//
// The last transaction of the apply moves the head and deletes all of them. A marker found
// when the store opens means a crash part way: OpenStore applies the epoch again from the
// marker before the tree is loaded for anyone (every batch is idempotent), so the store serves
// the whole epoch. Pieces without a marker are a crash before the first batch: nothing of the
// epoch was written, and they are deleted.
const (
	kApplying      = "x/applying"
	pApplyingPiece = "x/applying/"
	applyPieceSize = 1 << 20
	// applyPiecesPerTxn bounds the plaintext one transaction of the marker carries.
	applyPiecesPerTxn = 16
)

// applyMarker names the epoch a batched apply is writing, with what it takes to redo it.
type applyMarker struct {
	Info    vault.EpochInfo `json:"info"`
	Own     bool            `json:"own"`
	Mtime   int64           `json:"mtime"` // ApplyOptions.Mtime in unix nanoseconds; 0 for none
	Size    int             `json:"size"`  // bytes of the plaintext
	Pieces  int             `json:"pieces"`
	Hash    common.Hash     `json:"hash"` // keccak256 of the plaintext
	Batches int             `json:"batches"`
}

func applyPieceKey(i int) []byte {
	return binary.BigEndian.AppendUint32([]byte(pApplyingPiece), uint32(i))
}

// writeMarker durably records the epoch e before its first batch is written.
func (s *Store) writeMarker(e *epochApply, batches int) error {
	pt := seal.EncodePlaintext(e.p)
	m := applyMarker{Info: e.info, Own: e.opt.Own, Size: len(pt), Hash: crypto.Keccak256Hash(pt)}
	if !e.opt.Mtime.IsZero() {
		m.Mtime = e.opt.Mtime.UnixNano()
	}
	m.Pieces = (len(pt) + applyPieceSize - 1) / applyPieceSize
	m.Batches = batches
	for i := 0; i < m.Pieces; i += applyPiecesPerTxn {
		err := s.db.commitOnly(func(txn *badger.Txn) error {
			for j := i; j < m.Pieces && j < i+applyPiecesPerTxn; j++ {
				end := min((j+1)*applyPieceSize, len(pt))
				if err := txn.Set(applyPieceKey(j), pt[j*applyPieceSize:end]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("write the apply marker: %w", err)
		}
	}
	if err := s.db.commitOnly(func(txn *badger.Txn) error { return setJSON(txn, kApplying, &m) }); err != nil {
		return fmt.Errorf("write the apply marker: %w", err)
	}
	return nil
}

// deleteMarker deletes the marker and every piece of its plaintext in txn.
func deleteMarker(txn *badger.Txn) error {
	var keys [][]byte
	err := scanValues(txn, pApplyingPiece, func(k, _ []byte) error {
		keys = append(keys, bytes.Clone(k))
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return txn.Delete([]byte(kApplying))
}

// readMarker reads the marker and the plaintext it names; found is false when there is none.
func (s *Store) readMarker() (m applyMarker, p *seal.Plaintext, found bool, err error) {
	var pt []byte
	err = s.db.View(func(txn *badger.Txn) error {
		var err error
		if found, err = getJSON(txn, kApplying, &m); err != nil || !found {
			return err
		}
		pt = make([]byte, 0, m.Size)
		for i := 0; i < m.Pieces; i++ {
			item, err := txn.Get(applyPieceKey(i))
			if err != nil {
				return fmt.Errorf("piece %d of the plaintext: %w", i, err)
			}
			v, err := itemValueCopy(item)
			if err != nil {
				return err
			}
			pt = append(pt, v...)
		}
		return nil
	})
	if err != nil || !found {
		return m, nil, found, err
	}
	if len(pt) != m.Size || crypto.Keccak256Hash(pt) != m.Hash {
		return m, nil, true, fmt.Errorf("the plaintext of epoch %d under the apply marker is damaged", m.Info.Seq)
	}
	if p, err = seal.DecodePlaintext(pt); err != nil {
		return m, nil, true, fmt.Errorf("the plaintext of epoch %d under the apply marker: %w", m.Info.Seq, err)
	}
	return m, p, true, nil
}

// finishMarkedLocked finishes the batched apply the marker names, if any, and reloads the
// tree from the database. Callers hold t.mu for writing.
func (s *Store) finishMarkedLocked() (seq uint64, found bool, err error) {
	m, p, found, err := s.readMarker()
	if err != nil || !found {
		return 0, found, err
	}
	opt := ApplyOptions{Own: m.Own}
	if m.Mtime != 0 {
		opt.Mtime = time.Unix(0, m.Mtime)
	}
	if _, _, err := s.applyLocked(m.Info, p, opt, true); err != nil {
		return m.Info.Seq, true, err
	}
	return m.Info.Seq, true, nil
}

// finishApply is run by OpenStore once the tree is loaded: it finishes an apply a crash
// interrupted, or deletes the pieces of a marker never written.
func (s *Store) finishApply() error {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	seq, found, err := s.finishMarkedLocked()
	if err != nil {
		return fmt.Errorf("finish the apply of epoch %d a crash interrupted: %w", seq, err)
	}
	if found {
		return s.db.durable()
	}
	return s.db.Update(func(txn *badger.Txn) error {
		var orphan bool
		err := scanValues(txn, pApplyingPiece, func(_, _ []byte) error { orphan = true; return nil })
		if err != nil || !orphan {
			return err
		}
		return deleteMarker(txn)
	})
}

// reload rebuilds the in-memory tree from the database. Callers hold t.mu for writing.
func (s *Store) reload() error {
	s.t.reset()
	s.leaves.clear()
	s.untimed.forget()
	s.anchors = map[uint64]*vault.Anchor{}
	s.stagedBytes = 0
	s.attrs, s.trashDirs = attrTable{}, map[string]bool{}
	return s.load()
}

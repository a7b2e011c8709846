package store

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain/atomicfile"
	"kintfs/seal"
)

// runningMarker is a file the store keeps in its directory while it is open. Found when the
// store opens, it says the last run ended without closing it (a crash or a power cut): a
// mirror body may then have lost its bytes (see errValueLost), and RepairBodies looks.
const runningMarker = "kintfs-running"

// markRunning makes the marker durable in dir; unclean says it was there already.
func markRunning(dir string) (unclean bool, err error) {
	path := filepath.Join(dir, runningMarker)
	if _, err := os.Stat(path); err == nil {
		return true, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	if err := atomicfile.Write(path, nil); err != nil {
		return false, err
	}
	return false, atomicfile.Sync(dir) // the marker's name
}

// UncleanStart reports whether the run before this one ended without closing the store, and
// how many staged changes a power cut took the content of and were undone (see
// dropLostStaged).
func (s *Store) UncleanStart() (unclean bool, lostChanges int) { return s.unclean, s.lostChanges }

// dropLostStaged undoes, before the tree is loaded, every staged change whose body badger
// cannot read back: such a change was never acknowledged (the sync that acknowledges one makes
// its value durable before its entry). The file goes back to the change before it when badger
// still holds that one whole (an earlier version of the staged record, acknowledged or not),
// else to its anchored version, or is gone if it was new. It returns how many it undid.
func dropLostStaged(d *db) (int, error) {
	type lost struct {
		id      string
		rec     *stagedRec // nil: the record itself was lost (a large meta keeps it in a value log)
		earlier *stagedRec // the change before it, with its body; nil: none whole
	}
	var found []lost
	err := d.View(func(txn *badger.Txn) error {
		return eachItem(txn, pStaged, func(item *badger.Item) error {
			id := string(item.Key()[len(pStaged):])
			rec := &stagedRec{}
			err := itemValue(item, func(v []byte) error { return decodeRecord(v, rec) })
			switch {
			case errors.Is(err, errValueLost):
				rec = nil
			case err != nil || !rec.RawBody:
				return err // an undecodable record fails the open, as the tree's load would
			default:
				body := *rec
				if err := stagedBody(txn, nil, id, &body); !errors.Is(err, errValueLost) {
					return err
				}
			}
			earlier, err := stagedBefore(txn, id, item.Version())
			if err != nil {
				return err
			}
			found = append(found, lost{id, rec, earlier})
			return nil
		})
	})
	if err != nil || len(found) == 0 {
		return 0, err
	}
	if _, err := d.commit(func(txn *badger.Txn) error {
		for i := range found {
			if err := delStaged(txn, found[i].id, found[i].rec); err != nil {
				return err
			}
			if found[i].earlier != nil {
				if err := putStaged(txn, found[i].id, found[i].earlier); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		return 0, err
	}
	return len(found), d.Sync()
}

// stagedBefore is the newest version of the staged record of id older than version whose
// body badger can read whole, with that body; nil when there is none (the row was not staged
// before, or every earlier body was lost too).
func stagedBefore(txn *badger.Txn, id string, version uint64) (*stagedRec, error) {
	opts := badger.DefaultIteratorOptions
	opts.AllVersions, opts.PrefetchValues = true, false
	it := txn.NewKeyIterator([]byte(pStaged+id), opts)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		if item.Version() >= version {
			continue
		}
		if item.IsDeletedOrExpired() {
			return nil, nil // not staged before
		}
		var rec stagedRec
		err := itemValue(item, func(v []byte) error { return decodeRecord(v, &rec) })
		if errors.Is(err, errValueLost) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !rec.RawBody {
			return &rec, nil
		}
		body, err := stagedBodyAsOf(txn, id, &rec, item.Version())
		if errors.Is(err, errValueLost) {
			continue
		}
		if err != nil {
			return nil, err
		}
		rec.Row.Body = seal.BodyOf(body)
		return &rec, nil
	}
	return nil, nil
}

// stagedBodyAsOf is the body rec, the staged record of id written at version, names: its
// pieces or its whole value as they were at that version.
func stagedBodyAsOf(txn *badger.Txn, id string, rec *stagedRec, version uint64) ([]byte, error) {
	if rec.Pieces == 0 {
		return valueAsOf(txn, []byte(pStagedBody+id), version)
	}
	var body []byte
	for i := 0; i < rec.Pieces; i++ {
		piece, err := valueAsOf(txn, pieceKey(pStagedBody+id, i), version)
		if err != nil {
			return nil, err
		}
		body = append(body, piece...)
	}
	return body, nil
}

// valueAsOf is the value key held at version: its newest version not newer, which must
// exist; errValueLost when badger cannot read it.
func valueAsOf(txn *badger.Txn, key []byte, version uint64) ([]byte, error) {
	opts := badger.DefaultIteratorOptions
	opts.AllVersions, opts.PrefetchValues = true, false
	it := txn.NewKeyIterator(key, opts)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		if item.Version() > version {
			continue
		}
		if item.IsDeletedOrExpired() {
			break
		}
		return itemValueCopy(item)
	}
	return nil, fmt.Errorf("%w (no version of it as of the change)", errValueLost)
}

// EpochRows gives the rows epoch seq carries, from a copy kept outside the state database
// (the epoch cache).
type EpochRows func(seq uint64) ([]seal.Row, error)

// lostBody is a mirror row whose body badger cannot read back.
type lostBody struct {
	id   string
	seq  uint64 // the epoch that anchored the row's version
	leaf common.Hash
	name string
}

// RepairBodies reads the body of every mirror row, and puts back each one whose bytes were
// lost from the epoch that anchored it, as rows gives it, when its leaf is the row's: a body
// is never put back other than as anchored. It returns how many it put back, and the names of
// the rows it could not (they read as errValueLost until the state database is rebuilt).
func (s *Store) RepairBodies(rows EpochRows) (repaired int, unrepaired []string, err error) {
	var lost []lostBody
	err = s.db.View(func(txn *badger.Txn) error {
		return scanValues(txn, pMirror, func(k, v []byte) error {
			var m mirrorRec
			if err := decodeRecord(v, &m); err != nil || !m.HasBody {
				return err
			}
			id := string(k[len(pMirror):])
			// read where it lies, not copied: only whether badger can read it matters here
			if err := withMirrorBody(txn, id, func([]byte) error { return nil }); errors.Is(err, errValueLost) {
				lost = append(lost, lostBody{id: id, seq: m.Anchor.Seq, leaf: m.Leaf, name: seal.RowName(&m.Row)})
			} else if err != nil {
				return err
			}
			return nil
		})
	})
	if err != nil || len(lost) == 0 {
		return 0, nil, err
	}
	slices.SortFunc(lost, func(a, b lostBody) int { return cmp.Compare(a.seq, b.seq) })
	var (
		seq    uint64
		anchor map[string]seal.Row
	)
	for _, l := range lost {
		if anchor == nil || l.seq != seq {
			seq, anchor = l.seq, map[string]seal.Row{}
			if got, err := rows(l.seq); err == nil {
				for _, r := range got {
					anchor[r.ID()] = r
				}
			}
		}
		row, ok := anchor[l.id]
		if !ok || row.Body.IsNull() || seal.Leaf(&row) != l.leaf {
			unrepaired = append(unrepaired, l.name)
			continue
		}
		err := s.update(func(txn *badger.Txn, _ *[]func()) error {
			m, found, err := getMirror(txn, l.id, false)
			if err != nil || !found || m.Leaf != l.leaf {
				return err // changed since: its new body is its own
			}
			return setValue(txn, []byte(pBody+l.id), row.Body.Bytes(), "mirror row "+l.name)
		})
		if err != nil {
			return repaired, unrepaired, fmt.Errorf("put back the body of %s: %w", l.name, err)
		}
		repaired++
	}
	return repaired, unrepaired, nil
}

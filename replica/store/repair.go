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
	"kintfs/replica/vault"
	"kintfs/seal"
)

// runningMarker is a file the store keeps in its directory while it is open. Found when the
// store opens, it says the last run ended without closing it (a crash or a power cut): a
// value may then have lost its bytes (see errValueLost), and the open looks (dropLostStaged,
// rebuildLostRecords, RepairBodies). It stays after a clean close while something lost could
// not be put back, so that the next open tries again.
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

// Repair is what the open after a run that ended without closing the store (a crash or a
// power cut) found lost and did about it.
type Repair struct {
	// Unclean: the run before this one ended without closing the store, or left something a
	// power cut took that it could not put back
	Unclean bool
	// LostChanges staged changes a power cut took the content of were undone (dropLostStaged).
	LostChanges int
	// Records anchored records were rebuilt (rebuildLostRecords); RecordsLeft history versions
	// could not be and read as errors.
	Records, RecordsLeft int
	// Bodies anchored bodies were put back (RepairBodies); BodiesLeft could not be, or
	// BodiesErr stopped the look.
	Bodies     int
	BodiesLeft []string
	BodiesErr  error
	// Missing are the epochs whose rows those rebuilds wanted and could not have (not in the
	// epoch cache, or the vault's key not open): with their blobs fetched from the chain,
	// RepairAgain puts back what they carry.
	Missing []vault.EpochInfo
}

// UncleanStart is what the open found after a run that ended without closing the store, as
// RepairAgain left it.
func (s *Store) UncleanStart() Repair {
	s.repairMu.Lock()
	defer s.repairMu.Unlock()
	return s.repair
}

// RepairAgain looks again, with the epochs' rows as rows now gives them, for the history
// versions and bodies the open after an unclean run could not put back, because their epochs
// were not at hand: a pull calls it once it has fetched those epochs from the chain (Missing).
// It returns what was found and done this time; what is still left stays for the next open, as
// before.
func (s *Store) RepairAgain(rows EpochRows) (Repair, error) {
	s.repairMu.Lock()
	defer s.repairMu.Unlock()
	if !s.repairLeft {
		return Repair{}, nil
	}
	epochs := &epochRowsByID{d: s.db, rows: rows}
	rp := Repair{Unclean: true}
	var err error
	if rp.Records, rp.RecordsLeft, err = rebuildLostRecords(s.db, epochs); err != nil {
		return rp, err
	}
	rp.Bodies, rp.BodiesLeft, rp.BodiesErr = s.repairBodies(epochs)
	rp.Missing = epochs.missing
	s.repair.Records += rp.Records
	s.repair.Bodies += rp.Bodies
	s.repair.RecordsLeft, s.repair.BodiesLeft, s.repair.BodiesErr, s.repair.Missing = rp.RecordsLeft, rp.BodiesLeft, rp.BodiesErr, rp.Missing
	s.repairLeft = rp.RecordsLeft > 0 || len(rp.BodiesLeft) > 0 || rp.BodiesErr != nil
	return rp, nil
}

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

// EpochRows gives the rows the anchored epoch info carries, from a copy kept outside the state
// database whose digest is info's (the blob in the epoch cache, or fetched from the chain).
// journaled is the push journal's entry for that epoch with the same digest, nil when there is
// none: its signed transaction carries the blob, a copy the state database keeps itself.
type EpochRows func(info *vault.EpochInfo, journaled *PendingPush) ([]seal.Row, error)

// EpochWants is told, before a repair asks EpochRows for epochs one at a time, every anchored
// epoch it is about to ask for, in order of seq, each with the push journal's entry with its
// digest (nil when none): a source that fetches epochs from the chain fetches them at once.
type EpochWants func(infos []vault.EpochInfo, journaled []*PendingPush)

// journaled is the push journal's entry for the epoch info names, when it has one with info's
// digest; nil else.
func (d *db) journaled(info *vault.EpochInfo) (*PendingPush, error) {
	var p PendingPush
	var found bool
	err := d.View(func(txn *badger.Txn) (err error) {
		found, err = getJSON(txn, pendingKey(info.Seq), &p)
		return err
	})
	if err != nil || !found || p.Seq != info.Seq || p.Digest != info.Digest {
		return nil, err
	}
	return &p, nil
}

// epochRowsByID gives the rows of one anchored epoch at a time, by id, as rows gives them,
// with the epoch's record: asked in order of seq, it asks rows for each epoch once.
type epochRowsByID struct {
	d     *db
	rows  EpochRows
	wants EpochWants // nil: rows is asked one epoch at a time only
	seq   uint64
	info  vault.EpochInfo
	byID  map[string]*seal.Row
	err   error // why the epoch at seq gave no rows
	// missing are the epochs, with their records, that rows could not give
	missing []vault.EpochInfo
}

// want tells wants of the epochs seqs (in order, repeats allowed, 0 passed over) that a walk is
// about to ask at for. An epoch whose record cannot be read is left to at, which says why.
func (e *epochRowsByID) want(seqs []uint64) {
	if e.wants == nil || e.rows == nil {
		return
	}
	var infos []vault.EpochInfo
	var journaled []*PendingPush
	for i, seq := range seqs {
		if seq == 0 || (i > 0 && seq == seqs[i-1]) {
			continue
		}
		var info vault.EpochInfo
		if err := e.d.View(func(txn *badger.Txn) error { return getEpochRecord(txn, seq, &info) }); err != nil {
			continue
		}
		j, err := e.d.journaled(&info)
		if err != nil {
			continue
		}
		infos, journaled = append(infos, info), append(journaled, j)
	}
	if len(infos) > 0 {
		e.wants(infos, journaled)
	}
}

// at is the epoch seq's record and its rows by id, with why it has none.
func (e *epochRowsByID) at(seq uint64) (*vault.EpochInfo, map[string]*seal.Row, error) {
	if e.byID != nil && seq == e.seq {
		return &e.info, e.byID, e.err
	}
	e.seq, e.byID, e.err = seq, map[string]*seal.Row{}, nil
	err := e.d.View(func(txn *badger.Txn) error { return getEpochRecord(txn, seq, &e.info) })
	if err == nil && e.rows == nil {
		err = errors.New("no epoch cache at hand")
	}
	var got []seal.Row
	if err == nil {
		var journaled *PendingPush
		if journaled, err = e.d.journaled(&e.info); err == nil {
			if got, err = e.rows(&e.info, journaled); err != nil {
				e.missing = append(e.missing, e.info)
			}
		}
	}
	if err != nil {
		e.err = fmt.Errorf("epoch %d: %w", seq, err)
	}
	for i := range got {
		e.byID[got[i].ID()] = &got[i]
	}
	return &e.info, e.byID, e.err
}

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
	return s.repairBodies(&epochRowsByID{d: s.db, rows: rows})
}

// repairBodies is RepairBodies with the epochs' rows from epochs.
func (s *Store) repairBodies(epochs *epochRowsByID) (repaired int, unrepaired []string, err error) {
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
	seqs := make([]uint64, len(lost))
	for i := range lost {
		seqs[i] = lost[i].seq
	}
	epochs.want(seqs)
	for _, l := range lost {
		_, anchored, _ := epochs.at(l.seq)
		row, ok := anchored[l.id]
		if !ok || row.Body.IsNull() || seal.Leaf(row) != l.leaf {
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

// lostRecord is an anchored record whose bytes badger cannot read back: a row's mirror record,
// or one version in its history (historyKey(id, block, seq)).
type lostRecord struct {
	id         string
	block, seq uint64
	mirror     bool
	// from is the history record of the version a lost mirror record holds, when badger can
	// read it: the mirror record is rebuilt from it alone
	from *histRec
}

// rebuildLostRecords rebuilds, before the tree is loaded, every anchored record whose bytes a
// power cut took (a record large enough for a value log: a meta of a few hundred bytes, or a
// history version with its body): a row's mirror record from its version in history when
// badger still holds that, else each from the epoch that anchored it, as rows gives it. A row
// whose mirror record cannot be rebuilt fails the open, naming the way out (the tree cannot
// show the row); a history version that cannot be rebuilt reads as errValueLost. It returns
// how many records it rebuilt and how many history versions it could not.
func rebuildLostRecords(d *db, epochs *epochRowsByID) (rebuilt, unrebuilt int, err error) {
	var lost []lostRecord
	err = d.View(func(txn *badger.Txn) error {
		err := eachItem(txn, pMirror, func(item *badger.Item) error {
			if err := readable(item); !errors.Is(err, errValueLost) {
				return err
			}
			l := lostRecord{id: string(item.Key()[len(pMirror):]), mirror: true}
			var err error
			l.block, l.seq, l.from, err = newestVersion(txn, l.id)
			lost = append(lost, l)
			return err
		})
		if err != nil {
			return err
		}
		return eachItem(txn, pHistory, func(item *badger.Item) error {
			key := item.Key()
			if len(key) < len(pHistory)+17 {
				return nil
			}
			if err := readable(item); !errors.Is(err, errValueLost) {
				return err
			}
			lost = append(lost, lostRecord{id: string(key[len(pHistory) : len(key)-17]),
				block: beUint64(key[len(key)-16:]), seq: beUint64(key[len(key)-8:])})
			return nil
		})
	})
	if err != nil || len(lost) == 0 {
		return 0, 0, err
	}
	slices.SortStableFunc(lost, func(a, b lostRecord) int { return cmp.Compare(a.seq, b.seq) })
	var seqs []uint64 // the epochs the loop below asks at for
	for _, l := range lost {
		if !(l.mirror && l.from != nil) {
			seqs = append(seqs, l.seq)
		}
	}
	epochs.want(seqs)
	type rebuild struct {
		l   lostRecord
		rec histRec
	}
	var (
		todo        []rebuild
		mirrorsLeft int
		why         error
	)
	for _, l := range lost {
		if l.mirror && l.from != nil {
			todo = append(todo, rebuild{l, *l.from})
			continue
		}
		if l.seq == 0 { // a mirror record with no version in history to say where it came from
			mirrorsLeft++
			why = errors.New("no version of it in its history")
			continue
		}
		info, anchored, err := epochs.at(l.seq)
		if err != nil {
			why = err
		}
		row, ok := anchored[l.id]
		if !ok {
			if l.mirror {
				mirrorsLeft++
			} else {
				unrebuilt++
			}
			continue
		}
		anchor := vault.Anchor{Seq: info.Seq, Block: info.Block, Tx: info.Tx}
		todo = append(todo, rebuild{l, histRec{Row: row, Anchor: anchor, Mtime: nanos(seal.ParseCreatedAt(info.CreatedAt))}})
	}
	if mirrorsLeft > 0 {
		if why == nil {
			why = errors.New("the epoch that anchored it does not carry it")
		}
		return 0, unrebuilt, fmt.Errorf("%d anchored rows lost their records in a power cut and cannot be rebuilt here (%v): "+
			"a start that has their epochs rebuilds them (from the epoch cache, the push journal, or the chain when it is online); else rebuild the state database "+
			"(move KINT_HOME/db aside while kintfs is stopped; changes not flushed stay in the moved copy)", mirrorsLeft, why)
	}
	if len(todo) == 0 {
		return 0, unrebuilt, nil
	}
	_, err = d.commit(func(txn *badger.Txn) error {
		for _, b := range todo {
			if !b.l.mirror {
				if err := putHistory(txn, b.l.id, b.l.block, b.l.seq, &b.rec); err != nil {
					return err
				}
				continue
			}
			row := *b.rec.Row
			rec := newMirrorRec(row, seal.Leaf(&row), b.rec.Anchor, b.rec.Mtime)
			if err := putMirror(txn, b.l.id, &rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, unrebuilt, err
	}
	return len(todo), unrebuilt, d.Sync()
}

// readable reads item's value only to learn whether badger can.
func readable(item *badger.Item) error {
	return itemValue(item, func([]byte) error { return nil })
}

// newestVersion is the block and epoch of the newest version of id in its history (the one its
// mirror record holds), with that version's record when badger can read it.
func newestVersion(txn *badger.Txn, id string) (block, seq uint64, rec *histRec, err error) {
	_, err = newestVersionItem(txn, id, ^uint64(0), func(b, s uint64, item *badger.Item) error {
		block, seq = b, s
		var h histRec
		err := itemValue(item, func(v []byte) error { return decodeRecord(v, &h) })
		if errors.Is(err, errValueLost) || (err == nil && h.Row == nil) {
			return nil
		}
		rec = &h
		return err
	})
	return block, seq, rec, err
}

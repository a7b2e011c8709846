package store

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// Bodies are kept in badger as raw bytes under keys of their own (pBody, pStagedBody,
// pLocalBody), never inside a JSON record: JSON would escape them (a quarter more as base64
// for a local file, six times for some characters), and a body of the largest file a mount
// takes would no longer fit one badger value.

// storeError is what a badger write of a value becomes: badger's own messages may quote the
// value (its size errors carry a hex dump of the first kilobyte), and a body, a meta value or
// a record must never reach a log. It names what was stored and its size only.
func storeError(what string, n int, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, badger.ErrTxnTooBig):
		return fmt.Errorf("store %s (%d bytes): %w", what, n, err)
	case errors.Is(err, badger.ErrDiscardedTxn), errors.Is(err, badger.ErrReadOnlyTxn), errors.Is(err, badger.ErrDBClosed),
		errors.Is(err, badger.ErrBlockedWrites), errors.Is(err, badger.ErrEmptyKey), errors.Is(err, badger.ErrInvalidKey):
		return fmt.Errorf("store %s (%d bytes): %w", what, n, err)
	}
	// the size errors are not sentinels; nothing else a Set returns is expected
	return fmt.Errorf("store %s (%d bytes): %w", what, n, vault.ErrValueTooLarge)
}

// setValue stores val under key, mapping badger's errors through storeError.
func setValue(txn *badger.Txn, key []byte, val []byte, what string) error {
	return storeError(what, len(val), txn.Set(key, val))
}

// getValue reads key; found is false when it is absent.
func getValue(txn *badger.Txn, key string) (val []byte, found bool, err error) {
	item, err := txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	val, err = itemValueCopy(item)
	return val, err == nil, err
}

// putStaged stores the staged record of id: the record without its body under pStaged (as
// putStagedHead does), the body raw under pStagedBody, whole or in pieces (pieces.go). rec's
// Size, RawBody and Pieces are set, and its leaf unless a deletion.
func putStaged(txn *badger.Txn, id string, rec *stagedRec) error {
	rec.Size = contentSize(&rec.Row)
	rec.RawBody = !rec.Row.Body.IsNull()
	rec.Pieces = 0
	if rec.RawBody {
		rec.Pieces = piecesFor(rec.Row.Body.Len())
	}
	if err := putStagedHead(txn, id, rec); err != nil {
		return storeError("staged row "+keyString(rowKey(&rec.Row)), int(rec.Size), err)
	}
	if !rec.RawBody {
		return deleteBody(txn, pStagedBody+id)
	}
	return putBody(txn, pStagedBody+id, rec.Row.Body.Bytes(), "staged row "+keyString(rowKey(&rec.Row)))
}

// getStaged reads the staged record of id with its body.
func getStaged(txn *badger.Txn, id string) (rec stagedRec, found bool, err error) {
	found, err = getRecord(txn, pStaged+id, &rec)
	if err != nil || !found {
		return rec, found, err
	}
	return rec, true, stagedBody(txn, nil, id, &rec)
}

// getStagedHead reads the staged record of id, its body only when the record has no leaf
// stored (one written before layout 4, whose leaf is hashed from the body): rowLeaf and Size
// hold either way. stagedBody reads the body when it is needed.
func getStagedHead(txn *badger.Txn, id string) (rec stagedRec, found bool, err error) {
	found, err = getRecord(txn, pStaged+id, &rec)
	if err != nil || !found {
		return rec, found, err
	}
	return rec, true, headComplete(txn, id, &rec)
}

// headComplete reads the body of rec, the staged record of id, when its leaf is not stored.
func headComplete(txn *badger.Txn, id string, rec *stagedRec) error {
	if rec.Del || rec.leaf != nil {
		return nil
	}
	if err := stagedBody(txn, nil, id, rec); err != nil {
		return err
	}
	rec.Size = contentSize(&rec.Row)
	return nil
}

// putStagedHead stores rec, with its leaf unless a deletion, without its body: one read by
// getStagedHead keeps its body where it is, under pStagedBody.
func putStagedHead(txn *badger.Txn, id string, rec *stagedRec) error {
	if !rec.Del {
		rec.rowLeaf()
	}
	st := *rec
	st.Row.Body = seal.Body{}
	return putRecord(txn, pStaged+id, &st)
}

// stagedBody attaches the body of the staged record id, when it has one apart. A body in
// pieces is read by pieces, which may be nil (see pieceReader).
func stagedBody(txn *badger.Txn, pieces *pieceReader, id string, rec *stagedRec) error {
	if !rec.RawBody {
		return nil
	}
	var body []byte
	var found bool
	var err error
	if rec.Pieces > 0 {
		body, found, err = pieces.read(txn, pStagedBody+id, rec.Pieces)
	} else {
		body, found, err = getValue(txn, pStagedBody+id)
	}
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("staged row %s: its body is missing", keyString(rowKey(&rec.Row)))
	}
	rec.Row.Body = seal.BodyOf(body)
	return nil
}

// bodyPlace is where a staged record's body is stored: apart from the record (else inside it,
// as layout 2 stored it), and in how many pieces (0: whole).
type bodyPlace struct {
	apart  bool
	pieces int
}

// delStaged deletes the staged record of id and its body: as st, the record, says the body is
// stored, or, with st nil, wherever it is.
func delStaged(txn *badger.Txn, id string, st *stagedRec) error {
	if err := txn.Delete([]byte(pStaged + id)); err != nil {
		return err
	}
	if st == nil {
		return deleteBody(txn, pStagedBody+id)
	}
	if !st.RawBody {
		return nil
	}
	return deleteBodyIn(txn, pStagedBody+id, st.Pieces)
}

// scanStaged calls fn for every staged record in id order, with its body when withBody, else
// as getStagedHead reads it.
func scanStaged(txn *badger.Txn, withBody bool, fn func(id string, rec *stagedRec) error) error {
	var pieces *pieceReader
	if withBody {
		pieces = newPieceReader(txn)
		defer pieces.close()
	}
	return scanPrefix(txn, pStaged, func(k, v []byte) error {
		id := string(k[len(pStaged):])
		var rec stagedRec
		if err := decodeRecord(v, &rec); err != nil {
			return fmt.Errorf("staged record %q: %w", id, errUndecodable)
		}
		var err error
		if withBody {
			err = stagedBody(txn, pieces, id, &rec)
		} else {
			err = headComplete(txn, id, &rec)
		}
		if err != nil {
			return stagedRowError(&rec.Row, err)
		}
		return fn(id, &rec)
	})
}

// stagedRowError names the staged row whose body could not be read in err, so that the way
// out errValueLost gives can be taken.
func stagedRowError(row *seal.Row, err error) error {
	if errors.Is(err, errValueLost) {
		return fmt.Errorf("the staged row %s: %w", seal.RowName(row), err)
	}
	return err
}

// errUndecodable is a record that does not decode. The decoder's message is left out: it may
// quote the record.
var errUndecodable = errors.New("record does not decode")

// putLocalRec stores a local file: the record under pLocal, its content raw under pLocalBody.
func putLocalRec(txn *badger.Txn, lid string, rec *localRec) error {
	l := *rec
	l.Body = nil
	l.RawBody = true
	if err := setJSON(txn, pLocal+lid, &l); err != nil {
		return storeError("local file "+keyString(rec.Key.key()), len(rec.Body), err)
	}
	return setValue(txn, []byte(pLocalBody+lid), rec.Body, "local file "+keyString(rec.Key.key()))
}

// getLocalRec reads a local file with its content.
func getLocalRec(txn *badger.Txn, lid string) (rec localRec, found bool, err error) {
	found, err = getJSON(txn, pLocal+lid, &rec)
	if err != nil || !found || !rec.RawBody {
		return rec, found, err
	}
	body, ok, err := getValue(txn, pLocalBody+lid)
	if err != nil {
		return rec, true, err
	}
	if !ok {
		return rec, true, fmt.Errorf("local file %s: its content is missing", keyString(rec.Key.key()))
	}
	rec.Body = body
	return rec, true, nil
}

// delLocalRec deletes a local file and its content.
func delLocalRec(txn *badger.Txn, lid string) error {
	if err := txn.Delete([]byte(pLocal + lid)); err != nil {
		return err
	}
	return txn.Delete([]byte(pLocalBody + lid))
}

// splitStagedBodies and splitLocalBodies bring layout 2 to 3: each staged record and local
// file is rewritten as putStaged and putLocalRec store it. A record already moved reads back
// with its body and is stored the same again, so a crash part way through is harmless.
func splitStagedBodies(db *badger.DB) error {
	return rewriteRecords(db, pStaged, func(txn *badger.Txn, key, val []byte) error {
		id := string(key[len(pStaged):])
		var rec stagedRec
		if err := decodeRecord(val, &rec); err != nil {
			return fmt.Errorf("staged record %q: %w", id, errUndecodable)
		}
		if err := stagedBody(txn, nil, id, &rec); err != nil {
			return err
		}
		return putStaged(txn, id, &rec)
	})
}

func splitLocalBodies(db *badger.DB) error {
	return rewriteRecords(db, pLocal, func(txn *badger.Txn, key, val []byte) error {
		lid := string(key[len(pLocal):])
		rec, _, err := getLocalRec(txn, lid)
		if err != nil {
			return err
		}
		return putLocalRec(txn, lid, &rec)
	})
}

// rewriteRecords calls fn for every key under prefix, in batches of a few hundred records or a
// few megabytes of values, each batch in one transaction.
func rewriteRecords(db *badger.DB, prefix string, fn func(txn *badger.Txn, key, val []byte) error) error {
	const batchKeys, batchBytes = 256, 16 << 20
	after := prefix
	for {
		var keys, vals [][]byte
		err := db.View(func(txn *badger.Txn) error {
			opts := badger.DefaultIteratorOptions
			opts.Prefix = []byte(prefix)
			opts.PrefetchValues = false
			it := txn.NewIterator(opts)
			defer it.Close()
			size := 0
			for it.Seek([]byte(after)); it.ValidForPrefix(opts.Prefix); it.Next() {
				if string(it.Item().Key()) == after {
					continue
				}
				if len(keys) == batchKeys || size >= batchBytes {
					break
				}
				v, err := itemValueCopy(it.Item())
				if err != nil {
					return err
				}
				keys, vals = append(keys, it.Item().KeyCopy(nil)), append(vals, v)
				size += len(v)
			}
			return nil
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		err = db.Update(func(txn *badger.Txn) error {
			for i := range keys {
				if err := fn(txn, keys[i], vals[i]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		after = string(keys[len(keys)-1])
	}
}

package store

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"kintfs/seal"
)

// putMirror stores m as the mirror row id: the record without the body under pMirror, the
// body as raw bytes under pBody.
func putMirror(txn *badger.Txn, id string, m *mirrorRec) error {
	rec := *m
	rec.Row.Body = seal.Body{}
	if err := putRecord(txn, pMirror+id, &rec); err != nil {
		return err
	}
	if m.Row.Body.IsNull() {
		return txn.Delete([]byte(pBody + id))
	}
	return setValue(txn, []byte(pBody+id), m.Row.Body.Bytes(), "mirror row "+keyString(rowKey(&m.Row)))
}

// getMirror reads the mirror row id, with its body only when withBody.
func getMirror(txn *badger.Txn, id string, withBody bool) (m mirrorRec, found bool, err error) {
	found, err = getRecord(txn, pMirror+id, &m)
	if err != nil || !found || !withBody || !m.HasBody {
		return m, found, err
	}
	body, err := mirrorBody(txn, id)
	if err != nil {
		return m, found, err
	}
	m.Row.Body = seal.BodyOf(body)
	return m, true, nil
}

// mirrorBody is the body of the mirror row id, which has one.
func mirrorBody(txn *badger.Txn, id string) ([]byte, error) {
	var body []byte
	err := withMirrorBody(txn, id, func(b []byte) error { body = append([]byte(nil), b...); return nil })
	return body, err
}

// withMirrorBody hands the body of the mirror row id, which has one, to fn; it is valid only
// inside fn.
func withMirrorBody(txn *badger.Txn, id string, fn func(body []byte) error) error {
	item, err := txn.Get([]byte(pBody + id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return fmt.Errorf("mirror row %q: its body is missing", id)
	}
	if err != nil {
		return err
	}
	return itemValue(item, fn)
}

// delMirror deletes the mirror row id.
func delMirror(txn *badger.Txn, id string) error {
	if err := txn.Delete([]byte(pMirror + id)); err != nil {
		return err
	}
	return txn.Delete([]byte(pBody + id))
}

// migrate brings a database written in an older layout to storeFormat.
func migrate(db *badger.DB) error {
	var format int
	err := db.View(func(txn *badger.Txn) error {
		_, err := getJSON(txn, kFormat, &format)
		return err
	})
	switch {
	case err != nil:
		return err
	case format > storeFormat:
		return fmt.Errorf("the state database has layout %d, newer than this kintfs reads (%d): open it with the kintfs that wrote it, or a newer one", format, storeFormat)
	case format == storeFormat:
		return nil
	}
	if format < 2 {
		if err := splitMirrorBodies(db); err != nil {
			return fmt.Errorf("move mirror bodies out of their records: %w", err)
		}
	}
	if format < 3 {
		if err := splitStagedBodies(db); err != nil {
			return fmt.Errorf("move staged bodies out of their records: %w", err)
		}
		if err := splitLocalBodies(db); err != nil {
			return fmt.Errorf("move local files' content out of their records: %w", err)
		}
	}
	if format < 5 {
		if err := attrsToBinary(db); err != nil {
			return fmt.Errorf("rewrite the local attributes: %w", err)
		}
	}
	return db.Update(func(txn *badger.Txn) error { return setJSON(txn, kFormat, storeFormat) })
}

// attrsToBinary rewrites every attribute record stored as JSON in the binary layout, a batch at
// a time: every open reads them all, and decoding JSON was a third of the open of a vault whose
// files all had one. A record already rewritten is left alone, so a crash part way through is
// harmless.
func attrsToBinary(db *badger.DB) error {
	return rewriteRecords(db, pAttr, func(txn *badger.Txn, key, val []byte) error {
		if len(val) > 0 && val[0] == recBinary {
			return nil
		}
		a, err := decodeAttr(key, val)
		if err != nil {
			return err
		}
		return setValue(txn, key, encodeRecord(&a), "local attributes")
	})
}

// splitMirrorBodies rewrites every mirror record of layout 1 as putMirror stores it, a batch
// at a time. A record already moved (HasBody) is left alone and one without a body comes out
// the same, so a crash part way through is harmless.
func splitMirrorBodies(db *badger.DB) error {
	const batch = 250 // a record and a body each, both up to valueThreshold: well under a transaction's limit
	after := pMirror
	for {
		var recs []mirrorRec
		var ids []string
		last := ""
		err := db.View(func(txn *badger.Txn) error {
			opts := badger.DefaultIteratorOptions
			opts.Prefix = []byte(pMirror)
			it := txn.NewIterator(opts)
			defer it.Close()
			for it.Seek([]byte(after)); it.ValidForPrefix(opts.Prefix); it.Next() {
				key := string(it.Item().Key())
				if key == after {
					continue
				}
				if len(ids) == batch {
					break
				}
				last = key
				var m mirrorRec
				if err := itemValue(it.Item(), func(b []byte) error { return decodeRecord(b, &m) }); err != nil {
					return fmt.Errorf("mirror row %q: %w", key, err)
				}
				if !m.HasBody {
					recs, ids = append(recs, m), append(ids, key[len(pMirror):])
				}
			}
			return nil
		})
		if err != nil || last == "" {
			return err
		}
		err = db.Update(func(txn *badger.Txn) error {
			for i := range recs {
				m := newMirrorRec(recs[i].Row, recs[i].Leaf, recs[i].Anchor, recs[i].Mtime)
				if err := putMirror(txn, ids[i], &m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		after = last
	}
}

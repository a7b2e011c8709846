package store

import (
	"github.com/dgraph-io/badger/v4"

	"kintfs/seal"
)

// MirrorRows calls fn with every row of the mirror (the state after the newest applied
// epoch, bodies included), in canonical id order. It changes nothing.
func (s *Store) MirrorRows(fn func(row *seal.Row) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		return scanValues(txn, pMirror, func(k, v []byte) error {
			var m mirrorRec
			if err := decodeRecord(v, &m); err != nil {
				return err
			}
			if m.HasBody {
				body, err := mirrorBody(txn, string(k[len(pMirror):]))
				if err != nil {
					return err
				}
				m.Row.Body = seal.BodyOf(body)
			}
			return fn(&m.Row)
		})
	})
}

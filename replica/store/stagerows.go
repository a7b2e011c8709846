package store

import (
	"time"

	"github.com/dgraph-io/badger/v4"

	"kintfs/seal"
)

// stageBatch is how many rows StageRows stages in one durable transaction.
const stageBatch = 250

// StageRows stages rows as they are (body, status, meta), each as the write of its whole
// content would, stageBatch rows to a durable transaction instead of one each: how tests and
// benchmarks load many rows at once. A row whose key the store refuses stops it with that
// error; the transactions before it stay staged.
func (s *Store) StageRows(rows []seal.Row, mtime time.Time) error {
	for i := 0; i < len(rows); i += stageBatch {
		err := s.update(func(txn *badger.Txn, apply *[]func()) error {
			for _, row := range rows[i:min(i+stageBatch, len(rows))] {
				if err := checkKey(rowKey(&row)); err != nil {
					return err
				}
				if _, err := s.stagePut(txn, apply, row, mtime); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"kintfs/seal"
)

// Fixtures shared by the tests of the store and of the engine above it.

// TinyRows are n of the smallest rows: state rows with short keys and one-byte bodies.
func TinyRows(n int, tag string) []seal.Row {
	rows := make([]seal.Row, n)
	for i := range rows {
		b := string(rune('a' + i%26))
		if tag != "" {
			b = tag
		}
		rows[i] = seal.Row{Tier: seal.TierState, Key: fmt.Sprintf("%x", i), Body: seal.BodyString(b)}
	}
	seal.SortByID(rows)
	return rows
}

// CheckRows fails t unless s holds rows with their bodies.
func CheckRows(t testing.TB, s *Store, rows []seal.Row) {
	t.Helper()
	for _, row := range rows {
		k := rowKey(&row)
		body, err := s.Content(k)
		if err != nil || string(body) != string(row.Body.Bytes()) {
			t.Fatalf("%s = %q, %v; want %q", keyString(k), body, err, row.Body.Bytes())
		}
	}
}

// StageRows stages rows a few hundred to a transaction, as many writes would.
func StageRows(t testing.TB, s *Store, rows []seal.Row) {
	t.Helper()
	for i := 0; i < len(rows); i += 500 {
		err := s.update(func(txn *badger.Txn, apply *[]func()) error {
			for _, row := range rows[i:min(i+500, len(rows))] {
				if _, err := s.stagePut(txn, apply, row, time.Now()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

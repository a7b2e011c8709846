// Package storetest has the rows the engine's tests stage, push and check in a store.
//
// It is imported by tests only; nothing of it is linked into kintfs. The store's own tests,
// which cannot import it, have the same helpers in replica/store/rows_test.go.
package storetest

import (
	"fmt"
	"testing"
	"time"

	"kintfs/replica/store"
	"kintfs/replica/vault"
	"kintfs/seal"
)

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
func CheckRows(t testing.TB, s *store.Store, rows []seal.Row) {
	t.Helper()
	for _, row := range rows {
		k := vault.Key{Tier: row.Tier, Key: row.Key}
		if row.Tier == seal.TierEntity {
			k = k.InCategory(row.Category)
		}
		body, err := s.Content(k)
		if err != nil || string(body) != string(row.Body.Bytes()) {
			t.Fatalf("%s %s = %q, %v; want %q", row.Tier, row.Key, body, err, row.Body.Bytes())
		}
	}
}

// StageRows stages rows a few hundred to a transaction, as many writes would.
func StageRows(t testing.TB, s *store.Store, rows []seal.Row) {
	t.Helper()
	if err := s.StageRows(rows, time.Now()); err != nil {
		t.Fatal(err)
	}
}

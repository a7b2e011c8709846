package store

import (
	"fmt"
	"testing"
	"time"

	"kintfs/seal"
)

// Rows for the store's own tests; the engine's tests have the same in replica/store/storetest.

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
	if err := s.StageRows(rows, time.Now()); err != nil {
		t.Fatal(err)
	}
}

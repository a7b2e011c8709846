package store

import (
	"testing"
	"time"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// A push's rows are read at one instant: a body written or a row deleted after the collect
// does not change what the push seals, the collect keeps no body in memory, a row the check
// refuses is held with its reason instead, and the value log is not rewritten under the
// snapshot.
func TestPushRowsSnapshot(t *testing.T) {
	r := newTestStore(t)
	gone := vault.Key{Tier: "entity", Category: "c", HasCategory: true, Key: "gone"}
	anchorRows(t, r, seal.Row{Tier: "entity", Category: cat("c"), Key: "gone", Body: seal.BodyString(`"anchored"`)})
	mustWrite(t, r.Store, gone, `"changed, then deleted"`)
	mustWrite(t, r.Store, vault.Key{Tier: "reference", Key: "kept"}, "as collected")
	mustWrite(t, r.Store, vault.Key{Tier: "reference", Key: "refused"}, "no")
	mustWrite(t, r.Store, vault.Key{Tier: "state", Key: "x"}, "")
	r.now = func() time.Time { return time.Now().Add(time.Hour) } // every new row settled
	p, err := r.CollectForPush(func(row *seal.Row) string {
		if row.Key == "refused" {
			return "refused by the check (" + string(row.Body.Bytes()) + ")"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if r.gcHeld.TryLock() {
		t.Error("the value log could be rewritten under an open snapshot")
		r.gcHeld.Unlock()
	}
	if len(p.Held) != 1 || p.Held[0].Key != "refused" || p.Held[0].Reason != "refused by the check (no)" {
		t.Errorf("held: %+v", p.Held)
	}
	if v, err := r.Get(vault.Key{Tier: "reference", Key: "refused"}); err != nil || v.Held != "refused by the check (no)" {
		t.Errorf("the refused row is not held in the store: %+v, %v", v, err)
	}
	want := map[string]string{"gone": `"changed, then deleted"`, "kept": "as collected", "x": ""}
	if len(p.Rows) != len(want) {
		t.Fatalf("%d rows collected, want %d", len(p.Rows), len(want))
	}
	for i := range p.Rows {
		if p.Rows[i].Body.Len() != 0 {
			t.Errorf("the collect holds the body of %s", p.Rows[i].Key)
		}
	}
	// after the collect: one row written again, one deleted
	mustWrite(t, r.Store, vault.Key{Tier: "reference", Key: "kept"}, "written after the collect")
	if err := r.Remove(gone); err != nil {
		t.Fatal(err)
	}
	for i := range p.Rows {
		row, err := p.Row(i)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(row.Body.Bytes()); got != want[row.Key] || row.Body.IsNull() {
			t.Errorf("%s: body %q (null %v), want %q as collected", row.Key, got, row.Body.IsNull(), want[row.Key])
		}
		if p.Rows[i].Key != "" {
			t.Errorf("row %d kept after it was read", i)
		}
	}
	p.Close()
	p.Close()
	if !r.gcHeld.TryLock() {
		t.Error("the value log is still held after Close")
	} else {
		r.gcHeld.Unlock()
	}
}

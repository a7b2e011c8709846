package store

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"kintfs/seal"
)

// TestLoadSealingReadsBothLayouts: the rows the push journal's entries carry are sealing after
// LoadSealing, from an entry's ids (layout 7 on) and from the plaintext an entry written before
// kept, rows and deletions alike; a plaintext kept that cannot be decoded fails the load,
// naming its entry.
func TestLoadSealingReadsBothLayouts(t *testing.T) {
	r := newTestStore(t)
	cat := "person"
	old := &seal.Plaintext{Tenant: "t", Seq: 2, Rows: []seal.Row{{Tier: "entity", Category: &cat, Key: "p", Body: seal.BodyString(`"P"`)}},
		Deleted: []seal.Deleted{{Tier: "state", Key: "gone"}}}
	newer := &seal.Plaintext{Tenant: "t", Seq: 3, Rows: []seal.Row{{Tier: "reference", Key: "doc", Body: seal.BodyString("d")}}}
	if err := r.PutPendingBatch([]PendingPush{
		{Seq: 2, Plaintext: seal.EncodePlaintext(old)},
		{Seq: 3, IDs: JournalIDs(newer)},
	}); err != nil {
		t.Fatal(err)
	}
	if err := r.LoadSealing(); err != nil {
		t.Fatal(err)
	}
	want := []string{seal.CanonicalID("entity", &cat, "p"), seal.CanonicalID("state", nil, "gone"), seal.CanonicalID("reference", nil, "doc")}
	if got := slices.Sorted(maps.Keys(r.sealing)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("sealing %q, want %q", got, want)
	}
	if err := r.PutPendingBatch([]PendingPush{{Seq: 4, Plaintext: []byte("{not a plaintext")}}); err != nil {
		t.Fatal(err)
	}
	if err := r.LoadSealing(); err == nil || !strings.Contains(err.Error(), "push journal entry 4") {
		t.Fatalf("an entry whose plaintext cannot be decoded: %v", err)
	}
}

package vault

import (
	"testing"

	"kintfs/seal"
)

// TestKeyEqual: keys compare by value; no category is equal only to no category, and is not
// the empty category.
func TestKeyEqual(t *testing.T) {
	c, d, empty := "c", "d", ""
	a := Key{Tier: "entity", Key: "k"}.InCategory(&c)
	for _, x := range []struct {
		b    Key
		want bool
	}{
		{Key{Tier: "entity", Category: "c", HasCategory: true, Key: "k"}, true},
		{Key{Tier: "entity", Key: "k"}.InCategory(&d), false},
		{Key{Tier: "entity", Key: "k"}, false},
		{Key{Tier: "entity", Category: "c", HasCategory: true, Key: "k", Local: true}, false},
		{Key{Tier: "state", Category: "c", HasCategory: true, Key: "k"}, false},
		{Key{Tier: "entity", Category: "c", HasCategory: true, Key: "j"}, false},
	} {
		if got := a == x.b; got != x.want || (x.b == a) != x.want {
			t.Fatalf("%+v equal %+v: %v, want %v", a, x.b, got, x.want)
		}
	}
	k, kk := Key{Tier: "state", Key: "k"}, Key{Tier: "state"}
	kk.Key = "k"
	if k != kk {
		t.Fatal("two keys without a category differ")
	}
	none, blank := Key{Tier: "entity", Key: "k"}, Key{Tier: "entity", Key: "k"}.InCategory(&empty)
	if none == blank || !blank.HasCategory || blank.InCategory(nil) != none {
		t.Fatalf("no category %+v and the empty category %+v", none, blank)
	}
}

// TestKeyMapKey: a key is a map key, found again by an equal key built another way.
func TestKeyMapKey(t *testing.T) {
	c, empty := "person", ""
	m := map[Key]int{}
	for i, k := range []Key{
		{Tier: "entity", Key: "ann"},
		Key{Tier: "entity", Key: "ann"}.InCategory(&empty),
		{Tier: "entity", Key: "ann", Local: true},
		{Tier: seal.TierState, Key: "ann"},
		Key{Tier: "entity", Key: "ann"}.InCategory(&c),
		(&Conflict{Tier: "entity", Category: &c, Key: "ann"}).RowKey(),
	} {
		m[k] = i + 1
	}
	if len(m) != 5 {
		t.Fatalf("%d distinct keys, want 5: %+v", len(m), m)
	}
	if m[Key{Tier: "entity", Category: "person", HasCategory: true, Key: "ann"}] != 6 ||
		m[Key{Tier: "entity", HasCategory: true, Key: "ann"}] != 2 || m[Key{Tier: "entity", Key: "ann"}] != 1 {
		t.Fatalf("lookups: %+v", m)
	}
}

// TestCategoryPtr: a key gives its category back as a row carries it, a copy of its own.
func TestCategoryPtr(t *testing.T) {
	if p := (Key{Tier: "entity", Key: "k"}).CategoryPtr(); p != nil {
		t.Fatalf("no category gave %q", *p)
	}
	k := Key{Tier: "entity", Category: "c", HasCategory: true, Key: "k"}
	p := k.CategoryPtr()
	if p == nil || *p != "c" {
		t.Fatalf("category %v", p)
	}
	*p = "changed"
	if k.Category != "c" {
		t.Fatal("the pointer shares the key's category")
	}
}

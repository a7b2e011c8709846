package store

import "testing"

// TestKeyEqual: keys compare by value, a nil category equal only to a nil one.
func TestKeyEqual(t *testing.T) {
	a := Key{Tier: "entity", Category: cat("c"), Key: "k"}
	for _, c := range []struct {
		b    Key
		want bool
	}{
		{Key{Tier: "entity", Category: cat("c"), Key: "k"}, true},
		{Key{Tier: "entity", Category: cat("d"), Key: "k"}, false},
		{Key{Tier: "entity", Key: "k"}, false},
		{Key{Tier: "entity", Category: cat("c"), Key: "k", Local: true}, false},
		{Key{Tier: "state", Category: cat("c"), Key: "k"}, false},
		{Key{Tier: "entity", Category: cat("c"), Key: "j"}, false},
	} {
		if got := a.Equal(c.b); got != c.want || c.b.Equal(a) != c.want {
			t.Fatalf("%+v equal %+v: %v, want %v", a, c.b, got, c.want)
		}
	}
	if !(Key{Tier: "state", Key: "k"}).Equal(Key{Tier: "state", Key: "k"}) {
		t.Fatal("two nil categories differ")
	}
}

package store

import (
	"kintfs/replica/vault"
	"testing"
)

// TestKeyEqual: keys compare by value, a nil category equal only to a nil one.
func TestKeyEqual(t *testing.T) {
	a := vault.Key{Tier: "entity", Category: cat("c"), Key: "k"}
	for _, c := range []struct {
		b    vault.Key
		want bool
	}{
		{vault.Key{Tier: "entity", Category: cat("c"), Key: "k"}, true},
		{vault.Key{Tier: "entity", Category: cat("d"), Key: "k"}, false},
		{vault.Key{Tier: "entity", Key: "k"}, false},
		{vault.Key{Tier: "entity", Category: cat("c"), Key: "k", Local: true}, false},
		{vault.Key{Tier: "state", Category: cat("c"), Key: "k"}, false},
		{vault.Key{Tier: "entity", Category: cat("c"), Key: "j"}, false},
	} {
		if got := a.Equal(c.b); got != c.want || c.b.Equal(a) != c.want {
			t.Fatalf("%+v equal %+v: %v, want %v", a, c.b, got, c.want)
		}
	}
	if !(vault.Key{Tier: "state", Key: "k"}).Equal(vault.Key{Tier: "state", Key: "k"}) {
		t.Fatal("two nil categories differ")
	}
}

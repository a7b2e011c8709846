package fs

import (
	"errors"
	"strings"
	"testing"
)

func TestKeyOfPath(t *testing.T) {
	long := strings.Repeat("k", 300)
	for _, c := range []struct {
		rel, tier, cat, key string
		short, local        bool
		err                 error
	}{
		{rel: "state/a%2Fb", tier: "state", key: "a/b"},
		{rel: "entity/people/%2Ebob", tier: "entity", cat: "people", key: ".bob"},
		{rel: "entity/bob%", tier: "entity", key: "bob"},
		{rel: "entity/%", tier: "entity", key: ""},
		{rel: "state/x%", err: ErrBadFileName},
		{rel: "state/.notes", tier: "state", key: ".notes", local: true},
		{rel: "state/" + EscapeName(long), tier: "state", short: true},
		{rel: "entity/%zz/x", err: ErrBadCategoryName},
		{rel: "state", err: ErrNotRowPath},
		{rel: "state/a/b", err: ErrNotRowPath},
		{rel: "entity/a/b/c", err: ErrNotRowPath},
	} {
		k, short, err := KeyOfPath(c.rel)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: err %v, want %v", c.rel, err, c.err)
			}
			continue
		}
		cat := k.Category
		if err != nil || k.Tier != c.tier || cat != c.cat || k.Key != c.key || short != c.short || k.Local != c.local {
			t.Errorf("%s: %+v (category %q) short %v, %v", c.rel, k, cat, short, err)
		}
	}
}

package replica

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOpenUpgradesCacheSinceLastOpen: an open rewrites in kint's form the cache metadata an
// earlier kintfs version wrote, and records how far it looked, so that the next open reads only
// the epochs cached since; a vault of thousands of epochs no longer reads them all at each open.
func TestOpenUpgradesCacheSinceLastOpen(t *testing.T) {
	e := newChainEnv(t)
	var mu sync.Mutex
	var lines []string
	a := e.machineWith(func(f string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(f, args...))
	})
	for i, k := range []string{"state/a", "state/b"} {
		if _, err := a.Write(pathKey(k), []byte("v"), time.Now()); err != nil {
			t.Fatal(err)
		}
		flushAll(t, a)
		if i == 0 {
			a = e.reopen(a) // records epoch 1 as checked
		}
	}
	newest, err := a.store.CacheCheckedTo()
	if err != nil || newest != 1 {
		t.Fatalf("checked to %d, %v; want epoch 1, cached before the reopen", newest, err)
	}
	path := func(seq string) string { return a.opt.Home.Path("epochs", a.vault.Space16(), seq+".meta.json") }
	// both epochs' metadata as an earlier kintfs version wrote it: 0x hashes, compact JSON
	earlier := func(seq string) string {
		m, err := os.ReadFile(path(seq))
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(m, &v); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"digest", "prev", "tx", "rows_root"} {
			v[k] = "0x" + v[k].(string)
		}
		delete(v, "prev_block")
		old, _ := json.Marshal(v)
		if err := os.WriteFile(path(seq), old, 0o600); err != nil {
			t.Fatal(err)
		}
		return string(old)
	}
	old1 := earlier("00000001")
	earlier("00000002")
	a = e.reopen(a)
	if got, _ := os.ReadFile(path("00000002")); !strings.Contains(string(got), `"prev_block": `) || strings.Contains(string(got), `"digest": "0x`) {
		t.Errorf("epoch 2, cached since the last open, was not rewritten in kint's form: %s", got)
	}
	if got, _ := os.ReadFile(path("00000001")); string(got) != old1 {
		t.Errorf("epoch 1, checked by an earlier open, was read again: %s", got)
	}
	if newest, err := a.store.CacheCheckedTo(); err != nil || newest != 2 {
		t.Errorf("checked to %d, %v; want 2", newest, err)
	}
	mu.Lock()
	defer mu.Unlock()
	said := 0
	for _, l := range lines {
		if strings.Contains(l, "rewrote the metadata of 1 cached epochs in kint's form") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("the rewrite was said %d times, want once: %q", said, lines)
	}
}

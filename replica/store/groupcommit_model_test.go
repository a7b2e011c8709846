package store

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"kintfs/replica/vault"
)

// TestGroupCommitModel runs writers that create files (queued), write them (synced) and call
// Sync at random, with random pauses before each sync and inside its fsyncs, against a model of
// what each acknowledged change promises: the newest picture of badger's logs a sync took (in
// its first fsync, when no write can land) before the change was acknowledged holds the change.
// A create is acknowledged by the Sync after it, a write by its return. Fixed seeds.
func TestGroupCommitModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { groupCommitModel(t, seed) })
	}
}

func groupCommitModel(t *testing.T, seed uint64) {
	r := newTestStore(t)
	d := r.db
	var (
		mu       sync.Mutex
		pictures []map[string][32]byte // what the logs held at each sync, in order
		taking   atomic.Bool
	)
	pause := func(rng *rand.Rand) {
		if rng.IntN(3) == 0 {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
		}
	}
	hookRNG := rand.New(rand.NewPCG(seed, 99))
	var hookMu sync.Mutex
	d.syncHook = func() {
		hookMu.Lock()
		pause(hookRNG)
		hookMu.Unlock()
		taking.Store(true)
	}
	fsync := d.fsync
	d.fsync = func(path string) error {
		if taking.Swap(false) {
			picture := map[string][32]byte{}
			err := d.DB.View(func(txn *badger.Txn) error {
				return scanStaged(txn, true, func(id string, rec *stagedRec) error {
					picture[id] = sha256.Sum256(rec.Row.Body.Bytes())
					return nil
				})
			})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			pictures = append(pictures, picture)
			mu.Unlock()
		}
		hookMu.Lock()
		pause(hookRNG)
		hookMu.Unlock()
		return fsync(path)
	}
	picturesSoFar := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(pictures)
	}
	type promise struct {
		id     string
		body   [32]byte
		before int // pictures taken before it was acknowledged
		what   string
	}
	var (
		pmu      sync.Mutex
		promises []promise
	)
	const writers, steps = 4, 100
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := 0; i < steps; i++ {
				k := vault.Key{Tier: "state", Key: fmt.Sprintf("w%d-%03d", w, i)}
				body := []byte(strings.Repeat(fmt.Sprintf("%d.%d ", w, i), []int{10, 300, 1500}[rng.IntN(3)]))
				var what string
				var acked []byte
				switch rng.IntN(3) {
				case 0: // a create, acknowledged by the Sync after it
					if _, err := r.Create(k, 0o644, time.Now()); err != nil {
						t.Error(err)
						return
					}
					if err := r.Sync(); err != nil {
						t.Error(err)
						return
					}
					what, acked = "create+sync", nil
				case 1: // a write
					if _, err := r.Write(k, body, time.Now()); err != nil {
						t.Error(err)
						return
					}
					what, acked = "write", body
				default: // a create, then its write
					if _, err := r.Create(k, 0o644, time.Now()); err != nil {
						t.Error(err)
						return
					}
					pause(rng)
					if _, err := r.Write(k, body, time.Now()); err != nil {
						t.Error(err)
						return
					}
					what, acked = "create+write", body
				}
				p := promise{id: rowID(k), body: sha256.Sum256(acked), before: picturesSoFar(), what: what}
				pmu.Lock()
				promises = append(promises, p)
				pmu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	for _, p := range promises {
		if p.before == 0 {
			t.Fatalf("%s of %q acknowledged before any sync", p.what, p.id)
		}
		mu.Lock()
		got, ok := pictures[p.before-1][p.id]
		mu.Unlock()
		if !ok || got != p.body {
			t.Fatalf("seed %d: %s of %q acknowledged, but the last sync before it did not find it in the logs (found %v)", seed, p.what, p.id, ok)
		}
	}
	t.Logf("seed %d: %d changes acknowledged by %d syncs", seed, len(promises), len(pictures))
}

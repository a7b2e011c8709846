package store

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/seal"
)

// TestLeafSetKeepsLevels drives a set through loads, replacing, adding and deleting epochs and
// snapshots of every size from empty up, and checks each root it gives, before and after the
// epoch is applied, against seal.MerkleRoot of the state's leaves.
func TestLeafSetKeepsLevels(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		state := map[string]common.Hash{}
		var set leafSet
		ids := 1 + rng.IntN(300)
		id := func() string { return fmt.Sprintf("state\x00\x00k%04d", rng.IntN(ids)) }
		leaf := func(a, b int) common.Hash { return crypto.Keccak256Hash([]byte(fmt.Sprint(seed, a, b))) }
		// a load in key order, as the store's open gives it
		for i := 0; i < rng.IntN(ids); i++ {
			state[id()] = leaf(-1, i)
		}
		for _, k := range sortedIDs(state) {
			set.add(k, state[k])
		}
		for epoch := 0; epoch < 30; epoch++ {
			puts, dels := map[string]common.Hash{}, map[string]seal.Deleted{}
			kind := rng.IntN(4) // 0 replaces only, 1 adds, 2 deletes, 3 mixed
			for i := 0; i < rng.IntN(20); i++ {
				k := id()
				_, held := state[k]
				switch {
				case kind == 0 && held, kind == 1, kind == 3 && rng.IntN(2) == 0:
					puts[k] = leaf(epoch, i)
				case kind >= 2:
					dels[k] = seal.Deleted{}
					delete(puts, k)
				}
			}
			snapshot := rng.IntN(10) == 0
			ch := leafChanges(puts, dels)
			if snapshot {
				state = map[string]common.Hash{}
			}
			for k := range dels {
				delete(state, k)
			}
			for k, l := range puts {
				state[k] = l
			}
			want := plainRoot(state)
			if got, n := set.rootWith(ch, snapshot); got != want || n != len(state) {
				t.Fatalf("seed %d epoch %d (kind %d): root %x n %d, want %x n %d", seed, epoch, kind, got[:4], n, want[:4], len(state))
			}
			if snapshot {
				set.reset(ch)
			} else {
				set.apply(ch)
			}
			if got, n := set.rootWith(nil, false); got != want || n != len(state) {
				t.Fatalf("seed %d epoch %d (kind %d): the set after apply hashes to %x n %d, want %x n %d", seed, epoch, kind, got[:4], n, want[:4], len(state))
			}
		}
	}
}

// TestLeafSetConcurrentRoots asks a freshly loaded set for roots from many goroutines at once,
// as readers holding the tree's read lock may: the levels are built once, and every answer is
// the same (run with -race).
func TestLeafSetConcurrentRoots(t *testing.T) {
	state := map[string]common.Hash{}
	var set leafSet
	for i := 0; i < 1000; i++ {
		k := fmt.Sprintf("state\x00\x00k%04d", i)
		state[k] = crypto.Keccak256Hash([]byte(k))
		set.add(k, state[k])
	}
	want := plainRoot(state)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, _ := set.rootWith(nil, false); got != want {
				t.Errorf("root %x, want %x", got[:4], want[:4])
			}
		}()
	}
	wg.Wait()
}

func sortedIDs(state map[string]common.Hash) []string {
	ids := make([]string, 0, len(state))
	for k := range state {
		ids = append(ids, k)
	}
	sort.Strings(ids)
	return ids
}

// plainRoot is rows_root the plain way: every leaf in id order, folded by seal.MerkleRoot.
func plainRoot(state map[string]common.Hash) common.Hash {
	var leaves [][32]byte
	for _, k := range sortedIDs(state) {
		leaves = append(leaves, state[k])
	}
	return seal.MerkleRoot(leaves)
}

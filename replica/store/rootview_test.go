package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/seal"
)

// A push seals epochs while the mirror applies the ones before, at its own pace. A RootView
// must give, for every epoch, the root RootAfter defines: the mirror's leaves as they are,
// with the unapplied epochs of prior and the epoch applied. Here the oracle is computed from
// the leaves alone, by a merkle builder over the whole state; the mirror's applies are the
// leafSet's own; some pushes add or delete rows, lose a seq to another machine's epoch, or hand
// the view a prior list it did not see, and the view must fall back for those.
func TestRootViewMatchesAFullRecompute(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { rootViewRun(t, seed) })
	}
	// an overlay that reaches its bound starts again from the epochs not applied yet
	defer func(was int) { viewRestartAt = was }(viewRestartAt)
	viewRestartAt = 40
	for seed := range uint64(10) {
		t.Run(fmt.Sprint("bounded-", seed), func(t *testing.T) { rootViewRun(t, seed) })
	}
}

func rootViewRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	leaf := func() common.Hash { return crypto.Keccak256Hash(fmt.Appendf(nil, "%d", rng.Uint64())) }
	var leaves leafSet
	n := 1 + rng.IntN(400)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("entity/c/k%05d", i)
		leaves.add(ids[i], leaf())
	}
	headSeq := uint64(10 + rng.IntN(5))
	v := &RootView{}
	// this push's epochs, each over distinct rows (a permutation cut in pieces)
	perm := rng.Perm(n)
	addsOrDeletes := rng.IntN(4) == 0
	var prior, sealed []SealedChanges
	applied := 0 // of sealed, by the mirror
	seq := headSeq
	disturbed := false // another machine's epoch came in, or prior was cut
	for len(perm) > 0 {
		k := min(len(perm), 1+rng.IntN(12))
		puts := map[string]common.Hash{}
		dels := map[string]seal.Deleted{}
		for _, p := range perm[:k] {
			switch {
			case addsOrDeletes && rng.IntN(10) == 0:
				dels[ids[p]] = seal.Deleted{}
			case addsOrDeletes && rng.IntN(10) == 0:
				puts[ids[p]+"-new"] = leaf()
			default:
				puts[ids[p]] = leaf()
			}
		}
		perm = perm[k:]
		seq++
		c := SealedChanges{Seq: seq, ch: leafChanges(puts, dels)}

		// the mirror applies some of the epochs sealed before, in order; rarely another
		// machine's epoch takes the next seq instead
		for applied < len(sealed) && rng.IntN(3) == 0 {
			if rng.IntN(60) == 0 {
				disturbed = true
				foreign := map[string]common.Hash{ids[rng.IntN(n)]: leaf()}
				leaves.apply(leafChanges(foreign, nil))
			} else {
				leaves.apply(sealed[applied].ch)
			}
			applied++
			headSeq = sealed[applied-1].Seq
		}
		switch r := rng.IntN(50); {
		case r == 0:
			disturbed = true
			prior = slices.Clone(prior[:len(prior)/2]) // a list the view did not see grow
		case r == 1 && len(prior) > 0 && prior[len(prior)-1].Seq > headSeq:
			// the last epoch sealed again with other contents, as the view never saw it
			disturbed = true
			last := prior[len(prior)-1]
			again := SealedChanges{Seq: last.Seq, ch: slices.Clone(last.ch)}
			for i := range again.ch {
				if !again.ch[i].del {
					again.ch[i].leaf = leaf()
				}
			}
			prior = append(slices.Clone(prior[:len(prior)-1]), again)
			sealed[len(sealed)-1] = again
		}

		got, gotN := v.rootAfter(&leaves, headSeq, c, prior)
		want, wantN := stateRoot(&leaves, NotApplied(prior, headSeq), c)
		if got != want || gotN != wantN {
			t.Fatalf("epoch %d (mirror at %d, %d unapplied): view %s (%d rows), full recompute %s (%d rows)",
				seq, headSeq, len(NotApplied(prior, headSeq)), got.Hex(), gotN, want.Hex(), wantN)
		}
		sealed = append(sealed, c)
		prior = append(NotApplied(prior, headSeq), c)
	}
	if bounded := viewRestartAt < 1000; bounded && len(sealed) > 20 && v.restarts < 2 {
		t.Errorf("%d overlays started for %d epochs, under a bound of %d nodes", v.restarts, len(sealed), viewRestartAt)
	} else if !bounded && !addsOrDeletes && !disturbed && v.restarts != 1 {
		t.Errorf("%d overlays started for %d epochs that only replace rows, sealed undisturbed: want one", v.restarts, len(sealed))
	}
}

// stateRoot is the root of leaves with the changes of before and c applied, built from the
// whole state.
func stateRoot(leaves *leafSet, before []SealedChanges, c SealedChanges) (common.Hash, int) {
	state := map[string]common.Hash{}
	for _, e := range leaves.e {
		state[e.id] = e.leaf
	}
	for _, sc := range append(slices.Clone(before), c) {
		for _, ch := range sc.ch {
			if ch.del {
				delete(state, ch.id)
			} else {
				state[ch.id] = ch.leaf
			}
		}
	}
	keys := make([]string, 0, len(state))
	for id := range state {
		keys = append(keys, id)
	}
	slices.Sort(keys)
	var b seal.MerkleBuilder
	for _, id := range keys {
		b.Add(state[id])
	}
	return b.Root(), len(keys)
}

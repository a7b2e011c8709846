package store

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// TestInoTableModel runs seeded random loads and changes on an inoTable and on a map, the
// model it stands for, and checks after every step that both hold the same numbers.
func TestInoTableModel(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed))
		name := func() string { return testInoNames[rng.IntN(len(testInoNames))] }
		model := map[string]uint64{}
		var tab inoTable

		// a load: names in ascending order, with now and then one out of order
		var loaded []string
		for i := rng.IntN(40); i > 0; i-- {
			loaded = append(loaded, name())
		}
		sort.Strings(loaded)
		next := uint64(100)
		for i, n := range loaded {
			if i > 0 && loaded[i-1] == n {
				continue // badger's keys are unique
			}
			if rng.IntN(10) == 0 {
				n = "z" + n // after every other name: the next one comes out of order
			}
			if _, dup := model[n]; dup {
				continue
			}
			num := next
			if rng.IntN(20) == 0 {
				num = 1<<32 + next // past what the packed form holds
			}
			tab.load([]byte(n), num)
			model[n] = num
			next++
		}
		tab.loaded()
		loadNext := next // what the store's counter would be at the load
		var keys []string
		for _, name := range testInoNames {
			keys = append(keys, name, "z"+name)
		}
		check := func(step string) { t.Helper(); matchesModel(t, seed, step, keys, tab.get, model) }
		check("the load")

		for step := 0; step < 300; step++ {
			switch n := name(); rng.IntN(4) {
			case 0:
				tab.set(n, next)
				model[n] = next
				next++
				check("set " + n)
			case 1:
				tab.del(n)
				delete(model, n)
				check("del " + n)
			case 2: // a move, as moveIno makes one
				to := name()
				if v, ok := model[n]; ok && to != n {
					tab.set(to, v)
					tab.del(n)
					model[to] = v
					delete(model, n)
				}
				check("move " + n + " to " + to)
			case 3:
				first := max(next-uint64(rng.IntN(5)), loadNext)
				tab.forgetFrom(first)
				for k, v := range model {
					if v >= first {
						delete(model, k)
					}
				}
				check(fmt.Sprintf("forgetFrom %d", first))
			}
		}
	}
}

// testInoNames are names of several lengths with long shared prefixes, as a vault's are.
var testInoNames = func() []string {
	var names []string
	for i := 0; i < 60; i++ {
		names = append(names, fmt.Sprintf("rentity\x00cat%d\x00%s%d", i%3, strings.Repeat("k", i%5), i))
	}
	return append(names, "r", "rentity", "d"+"entity")
}()

// TestInoTableSmallerThanAMap checks what the table is for: 100,000 names of the shape a
// vault's rows give cost under a third of what a map of them would.
func TestInoTableSmallerThanAMap(t *testing.T) {
	const n = 100000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("rentity\x00cat%03d\x00key-%06d.json", i%100, i)
	}
	sort.Strings(names)
	var tab inoTable
	for i, name := range names {
		tab.load([]byte(name), uint64(i+100))
	}
	tab.loaded()
	if len(tab.changed) != 0 {
		t.Fatalf("%d names of a sorted load went to the changes", len(tab.changed))
	}
	packed := cap(tab.data) + 4*cap(tab.blocks) + 4*cap(tab.nums)
	// a map entry: the name's own allocation (rounded to its size class), its 16-byte header
	// and the 8-byte number, in slots at most 7/8 full
	mapBytes := 0
	for _, name := range names {
		mapBytes += (len(name)+15)/16*16 + (16+8)*8/7
	}
	if packed*3 > mapBytes {
		t.Fatalf("the packed table takes %d bytes, a map at least %d", packed, mapBytes)
	}
	for i := 0; i < n; i += 997 {
		if got, ok := tab.get(names[i]); !ok || got != uint64(i+100) {
			t.Fatalf("%q: (%d, %v), want %d", names[i], got, ok, i+100)
		}
	}
	t.Logf("100,000 names: packed %d bytes, as a map at least %d", packed, mapBytes)
}

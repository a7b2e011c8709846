package store

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/seal"
)

// leafEntry is one mirror row as rows_root sees it.
type leafEntry struct {
	id   string // canonical id
	leaf common.Hash
}

// leafChange is what an epoch does to one id: a new leaf, or a deletion (del).
type leafChange struct {
	id   string
	leaf common.Hash
	del  bool
}

// leafSet is the mirror's leaves in canonical-id order, the order rows_root hashes them in.
// Each epoch's root is computed by merging its changes into this order as it is walked, so
// an epoch costs no copy of the state and no sort of it.
//
// The merkle levels above the leaves are kept too (merkletree.go), so that an epoch rehashes
// only what it changes: the paths of the leaves it replaces, or everything after the first id
// it adds or deletes.
type leafSet struct {
	e []leafEntry

	mu    sync.Mutex // guards building tree lazily, which readers of the set may do at once
	tree  [][]common.Hash
	built bool
}

func (s *leafSet) len() int { return len(s.e) }

// find is the index of id, or where it would go.
func (s *leafSet) find(id string) (int, bool) {
	i := sort.Search(len(s.e), func(i int) bool { return s.e[i].id >= id })
	return i, i < len(s.e) && s.e[i].id == id
}

// get is the leaf of id.
func (s *leafSet) get(id string) (common.Hash, bool) {
	i, ok := s.find(id)
	if !ok {
		return common.Hash{}, false
	}
	return s.e[i].leaf, true
}

// add appends the leaf of an id greater than every id held, as a load in key order gives them;
// an id out of order is inserted in place.
func (s *leafSet) add(id string, leaf common.Hash) {
	if n := len(s.e); n == 0 || s.e[n-1].id < id {
		s.e = append(s.e, leafEntry{id, leaf})
		s.built = false
		return
	}
	s.apply([]leafChange{{id: id, leaf: leaf}})
}

// sortChanges orders changes by id, as merge wants them.
func sortChanges(ch []leafChange) {
	slices.SortFunc(ch, func(a, b leafChange) int { return strings.Compare(a.id, b.id) })
}

// merge walks the entries of base with the changes (sorted by id, one per id) applied, in id
// order.
func merge(base []leafEntry, ch []leafChange, fn func(id string, leaf common.Hash)) {
	i := 0
	for _, c := range ch {
		for i < len(base) && base[i].id < c.id {
			fn(base[i].id, base[i].leaf)
			i++
		}
		if i < len(base) && base[i].id == c.id {
			i++ // replaced or deleted
		}
		if !c.del {
			fn(c.id, c.leaf)
		}
	}
	for ; i < len(base); i++ {
		fn(base[i].id, base[i].leaf)
	}
}

// rootWith is the rows_root and the row count of the set with the sorted changes applied,
// without building that set; from nothing (fromEmpty) it is the root of the changes alone.
func (s *leafSet) rootWith(ch []leafChange, fromEmpty bool) (common.Hash, int) {
	if fromEmpty {
		var b seal.MerkleBuilder
		n := 0
		merge(nil, ch, func(_ string, leaf common.Hash) {
			b.Add(leaf)
			n++
		})
		return b.Root(), n
	}
	s.ensureTree()
	if s.replacesOnly(ch) {
		return s.replacedRoot(ch, false), len(s.e)
	}
	// Everything before the first id changed keeps its place: its complete subtrees are taken
	// as they are, and only the leaves from there on are hashed again.
	p, _ := s.find(ch[0].id)
	var b seal.MerkleBuilder
	s.addPrefix(&b, p)
	n := p
	merge(s.e[p:], ch, func(_ string, leaf common.Hash) {
		b.Add(leaf)
		n++
	})
	return b.Root(), n
}

// apply applies the sorted changes. Changes that only replace leaves are made in place, with
// their paths; an id added or deleted costs one new slice and the levels after it.
func (s *leafSet) apply(ch []leafChange) {
	if len(ch) == 0 {
		return
	}
	if s.replacesOnly(ch) {
		if s.built {
			s.replacedRoot(ch, true)
			return
		}
		for _, c := range ch {
			if i, ok := s.find(c.id); ok {
				s.e[i].leaf = c.leaf
			}
		}
		return
	}
	p, _ := s.find(ch[0].id)
	out := make([]leafEntry, 0, len(s.e)+len(ch))
	merge(s.e, ch, func(id string, leaf common.Hash) { out = append(out, leafEntry{id, leaf}) })
	s.e = out
	if s.built {
		s.rehashFrom(p)
	}
}

// replacesOnly reports whether no change adds an id or deletes one held.
func (s *leafSet) replacesOnly(ch []leafChange) bool {
	for _, c := range ch {
		if _, ok := s.find(c.id); ok == c.del {
			return false
		}
	}
	return true
}

// reset replaces the whole set with the sorted changes (a snapshot's state).
func (s *leafSet) reset(ch []leafChange) {
	s.clear()
	s.apply(ch)
}

// clear empties the set.
func (s *leafSet) clear() {
	s.e, s.tree, s.built = nil, nil, false
}

// leaves is the set's leaves in order, for a merkle proof.
func (s *leafSet) leaves() [][32]byte {
	out := make([][32]byte, len(s.e))
	for i := range s.e {
		out[i] = s.e[i].leaf
	}
	return out
}

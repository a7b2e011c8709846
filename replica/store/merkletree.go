package store

import (
	"github.com/ethereum/go-ethereum/common"

	"kintfs/seal"
)

// The merkle levels of a leafSet, as seal.MerkleRoot folds them: level 0 is the leaves
// themselves (s.e), level L (s.tree[L-1]) pairs level L-1, an odd last node moving up
// unchanged, up to the one node that is the root. A node j of level L below the first leaf
// index p an epoch changes covers leaves [j<<L, (j+1)<<L), all before p: it keeps its hash.

// ensureTree builds the levels once after a load; later changes keep them up to date.
func (s *leafSet) ensureTree() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.built {
		s.rehashFrom(0)
		s.built = true
	}
}

// levelLen is the number of nodes at level L.
func (s *leafSet) levelLen(l int) int {
	if l == 0 {
		return len(s.e)
	}
	return len(s.tree[l-1])
}

// node is node i of level L.
func (s *leafSet) node(l, i int) *[32]byte {
	if l == 0 {
		return (*[32]byte)(&s.e[i].leaf)
	}
	return (*[32]byte)(&s.tree[l-1][i])
}

// setNode replaces node i of level L.
func (s *leafSet) setNode(l, i int, h common.Hash) {
	if l == 0 {
		s.e[i].leaf = h
	} else {
		s.tree[l-1][i] = h
	}
}

// rehashFrom recomputes every node that covers a leaf at index from or later, after the
// leaves from there on changed place; the levels' lengths follow the number of leaves.
func (s *leafSet) rehashFrom(from int) {
	var h seal.PairHasher
	l, below := 0, len(s.e)
	for ; below > 1; l++ {
		n := (below + 1) / 2
		if l >= len(s.tree) {
			s.tree = append(s.tree, nil)
		}
		lvl := s.tree[l]
		if cap(lvl) < n {
			grown := make([]common.Hash, n, n+n/8)
			copy(grown, lvl)
			lvl = grown
		}
		s.tree[l] = lvl[:n]
		from >>= 1
		for j := from; j < n; j++ {
			if 2*j+1 < below {
				s.tree[l][j] = h.Pair(s.node(l, 2*j), s.node(l, 2*j+1))
			} else {
				s.tree[l][j] = *s.node(l, 2*j)
			}
		}
		below = n
	}
	s.tree = s.tree[:l]
}

// root is the set's rows_root from its levels.
func (s *leafSet) root() common.Hash {
	if len(s.e) == 0 {
		return seal.EmptyRoot()
	}
	return *s.node(len(s.tree), 0)
}

// dirtyNode is a node an epoch gives a new hash.
type dirtyNode struct {
	i int
	h common.Hash
}

// levelNodes are the nodes of a set's levels as replacedRoot reads and writes them: the levels
// themselves (the leafSet), or an overlay on them (a RootView's).
type levelNodes interface {
	node(l, i int) *[32]byte
	setNode(l, i int, h common.Hash)
}

// replacedRoot is the root after changes that only replace leaves (sorted by id, one per id;
// deletions of ids not held change nothing):
// the path of each changed leaf is hashed again, the rest read from the levels. With commit
// the new nodes are written into the levels.
func (s *leafSet) replacedRoot(ch []leafChange, commit bool) common.Hash {
	return s.replacedRootIn(s, ch, commit)
}

// replacedRootIn is replacedRoot on the nodes of in, which hold a tree of the set's shape.
func (s *leafSet) replacedRootIn(in levelNodes, ch []leafChange, commit bool) common.Hash {
	var h seal.PairHasher
	dirty := make([]dirtyNode, 0, len(ch))
	spare := make([]dirtyNode, 0, len(ch)) // the level above, made in turn with dirty
	for _, c := range ch {
		if i, ok := s.find(c.id); ok && !c.del { // a deletion here is of an id not held
			dirty = append(dirty, dirtyNode{i, c.leaf})
		}
	}
	if len(dirty) == 0 {
		if len(s.e) == 0 {
			return seal.EmptyRoot()
		}
		return *in.node(len(s.tree), 0)
	}
	for l := 0; ; l++ {
		if commit {
			for _, d := range dirty {
				in.setNode(l, d.i, d.h)
			}
		}
		n := s.levelLen(l)
		if n == 1 {
			return dirty[0].h
		}
		up := spare[:0]
		for k := 0; k < len(dirty); k++ {
			j := dirty[k].i >> 1
			left, right := in.node(l, 2*j), (*[32]byte)(nil)
			if 2*j+1 < n {
				right = in.node(l, 2*j+1)
			}
			if dirty[k].i == 2*j {
				left = (*[32]byte)(&dirty[k].h)
				if k+1 < len(dirty) && dirty[k+1].i == 2*j+1 {
					k++
					right = (*[32]byte)(&dirty[k].h)
				}
			} else {
				right = (*[32]byte)(&dirty[k].h)
			}
			if right == nil {
				up = append(up, dirtyNode{j, *left})
			} else {
				up = append(up, dirtyNode{j, h.Pair(left, right)})
			}
		}
		dirty, spare = up, dirty
	}
}

// addPrefix gives b the first p leaves as the complete subtrees they form, largest first.
func (s *leafSet) addPrefix(b *seal.MerkleBuilder, p int) {
	off := 0
	for l := len(s.tree); l >= 0; l-- {
		if p&(1<<l) != 0 {
			b.AddSubtree(*s.node(l, off>>l), l)
			off += 1 << l
		}
	}
}

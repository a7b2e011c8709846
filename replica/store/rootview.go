package store

import (
	"unsafe"

	"github.com/ethereum/go-ethereum/common"
)

// RootView computes the rows_roots of one push's epochs as they are sealed, each on top of the
// ones sealed before it, as RootAfterSealed does. RootAfterSealed hashes again, for every epoch,
// the paths of every epoch the mirror has not applied yet (in a flush of 10,000 rows, the
// paths of 37 epochs for each one sealed). A view keeps the merkle nodes its epochs changed, as
// an overlay on the mirror's levels, so that an epoch costs the paths of its own rows.
//
// The overlay holds the mirror's tree as it was when the overlay was started, with the view's
// epochs applied. The mirror moves on only by applying epochs. When it has, the overlay still
// holds the right tree exactly when the mirror's root is the root the view computed for the
// epoch the mirror is now at: equal roots are equal leaves in the same places, so every node
// outside the overlay is the one the overlay was built on. Anything else (another machine's
// epoch, a change that adds or deletes a row, a snapshot, a prior list the view did not make)
// computes the root as RootAfterSealed does and starts the overlay again.
//
// A view belongs to one goroutine (a push's sealer).
type RootView struct {
	s      *Store
	leaves *leafSet // the levels under the overlay (the mirror's)
	nodes  map[nodeAt]*common.Hash
	roots  map[uint64]common.Hash // the tree's root at the overlay's start and after each epoch since
	ids    map[uint64]changesID   // the changes each epoch of the overlay applied
	last   uint64                 // seq of the overlay's last epoch (its start when it has none)
	ok     bool                   // the overlay holds the tree after last
	// restarts counts the overlays started, the first included (each costs what
	// RootAfterSealed does)
	restarts int
}

// nodeAt is node i of level l.
type nodeAt struct{ l, i int }

// changesID tells apart the changes of two epochs without comparing them: the sealer hands
// the view the same changes it sealed, as prior, for as long as the mirror has not applied them.
type changesID struct {
	data *leafChange
	n    int
}

func idOf(c SealedChanges) changesID { return changesID{unsafe.SliceData(c.ch), len(c.ch)} }

// viewRestartAt bounds the overlay: it grows by the paths of every epoch and is started again
// from the unapplied epochs when it holds this many nodes (about 2 MB). A variable for tests.
var viewRestartAt = 32 << 10

// NewRootView starts a view of s's mirror.
func (s *Store) NewRootView() *RootView { return &RootView{s: s} }

// RootAfter is RootAfterSealed(c, prior, snapshot), computed on the view's overlay when it
// holds the tree prior left.
func (v *RootView) RootAfter(c SealedChanges, prior []SealedChanges, snapshot bool) (common.Hash, int, error) {
	if snapshot {
		v.ok = false
		return v.s.RootAfterSealed(c, prior, true)
	}
	s := v.s
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	head, err := s.MirrorHead()
	if err != nil {
		return common.Hash{}, 0, err
	}
	root, n := v.rootAfter(&s.leaves, head.Seq, c, prior)
	return root, n, nil
}

// rootAfter is the root and row count of leaves (the mirror at headSeq) with the epochs of
// prior after headSeq and c applied.
func (v *RootView) rootAfter(leaves *leafSet, headSeq uint64, c SealedChanges, prior []SealedChanges) (common.Hash, int) {
	leaves.ensureTree()
	v.leaves = leaves
	unapplied := unappliedAfter(prior, headSeq)
	if !leaves.replacesOnly(c.ch) {
		v.ok = false
		return leaves.rootWith(mergedChanges(c, unapplied), false)
	}
	if !v.holds(leaves, headSeq, unapplied, c) {
		v.restart(leaves, headSeq, unapplied)
	}
	if !v.ok {
		return leaves.rootWith(mergedChanges(c, unapplied), false)
	}
	root := leaves.replacedRootIn(v, c.ch, true)
	v.roots[c.Seq], v.ids[c.Seq], v.last = root, idOf(c), c.Seq
	for seq := range v.roots {
		if seq < headSeq {
			delete(v.roots, seq)
			delete(v.ids, seq)
		}
	}
	return root, len(leaves.e)
}

// holds reports whether the overlay holds the tree of the mirror at headSeq with unapplied,
// the epochs after it, applied, and c comes next.
func (v *RootView) holds(leaves *leafSet, headSeq uint64, unapplied []SealedChanges, c SealedChanges) bool {
	if !v.ok || len(v.nodes) >= viewRestartAt || c.Seq != v.last+1 || uint64(len(unapplied)) != v.last-headSeq {
		return false
	}
	if at, ok := v.roots[headSeq]; !ok || at != leaves.root() {
		return false
	}
	for i, p := range unapplied {
		if p.Seq != headSeq+1+uint64(i) || v.ids[p.Seq] != idOf(p) {
			return false
		}
	}
	return true
}

// restart starts the overlay on the mirror's tree (at headSeq) and applies unapplied to it, one
// epoch after another. When they are not consecutive epochs that only replace rows it hashes
// nothing and leaves the view not ok: the caller's own recompute is all the work.
func (v *RootView) restart(leaves *leafSet, headSeq uint64, unapplied []SealedChanges) {
	v.nodes = map[nodeAt]*common.Hash{}
	v.roots = map[uint64]common.Hash{headSeq: leaves.root()}
	v.ids = map[uint64]changesID{}
	v.last, v.ok = headSeq, false
	v.restarts++
	for i, p := range unapplied {
		if p.Seq != headSeq+1+uint64(i) || !leaves.replacesOnly(p.ch) {
			return
		}
	}
	for _, p := range unapplied {
		v.roots[p.Seq], v.ids[p.Seq], v.last = leaves.replacedRootIn(v, p.ch, true), idOf(p), p.Seq
	}
	v.ok = true
}

// node and setNode make the overlay the levels replacedRootIn works on.
func (v *RootView) node(l, i int) *[32]byte {
	if h, ok := v.nodes[nodeAt{l, i}]; ok {
		return (*[32]byte)(h)
	}
	return v.leaves.node(l, i)
}

func (v *RootView) setNode(l, i int, h common.Hash) {
	if p, ok := v.nodes[nodeAt{l, i}]; ok {
		*p = h
		return
	}
	v.nodes[nodeAt{l, i}] = &h
}

package store

import (
	"unsafe"

	"github.com/ethereum/go-ethereum/common"
)

// RootView computes the rows_roots of one push's epochs as they are sealed, each on top of the
// ones sealed before it. The root of an epoch counts in the epochs of prior the mirror has not
// applied yet; recomputing it from the mirror's levels hashes their paths again for every epoch
// (in a flush of 10,000 rows, the paths of 37 epochs for each one sealed). A view keeps the
// merkle nodes its epochs changed, as an overlay on the mirror's levels, so that an epoch costs
// the paths of its own rows.
//
// The overlay holds the mirror's tree as it was when the overlay was started, with the view's
// epochs applied. The mirror moves on only by applying epochs. When it has, the overlay still
// holds the right tree exactly when the mirror's root is the root the view computed for the
// epoch the mirror is now at: equal roots are equal leaves in the same places, so every node
// outside the overlay is the one the overlay was built on. Anything else (another machine's
// epoch, a change that adds or deletes a row, a snapshot, a prior list the view did not make)
// recomputes the root from the mirror's levels and starts the overlay again.
//
// A view belongs to one goroutine (a push's sealer).
type RootView struct {
	s      *Store
	leaves *leafSet // the levels under the overlay (the mirror's)
	nodes  map[nodeAt]*common.Hash
	epochs map[uint64]viewEpoch // the overlay's start and each epoch applied to it since, by seq
	last   uint64               // seq of the overlay's last epoch (its start when it has none)
	ok     bool                 // the overlay holds the tree after last
	// restarts counts the overlays started, the first included (each costs a recompute)
	restarts int
}

// viewEpoch is the tree's root after an epoch of the overlay, and the changes it applied (none
// for the overlay's start).
type viewEpoch struct {
	root common.Hash
	id   changesID
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

// RootAfter is the rows_root and the row count of the mirror with the epoch c applied, or of c
// alone for a snapshot. c is sealed after the epochs of prior (this push's, in seq order,
// touching distinct rows): those the mirror has not applied yet are counted in as well. The
// mirror head and the leaves are read under one lock, which an apply holds for writing
// throughout, so an epoch is counted exactly once, whether it is applied or not.
func (v *RootView) RootAfter(c SealedChanges, prior []SealedChanges, snapshot bool) (common.Hash, int, error) {
	s := v.s
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	if snapshot {
		v.ok = false
		root, n := s.leaves.rootWith(c.ch, true)
		return root, n, nil
	}
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
	unapplied := NotApplied(prior, headSeq)
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
	v.epochs[c.Seq], v.last = viewEpoch{root, idOf(c)}, c.Seq
	for seq := range v.epochs {
		if seq < headSeq {
			delete(v.epochs, seq)
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
	if at, ok := v.epochs[headSeq]; !ok || at.root != leaves.root() {
		return false
	}
	for i, p := range unapplied {
		if p.Seq != headSeq+1+uint64(i) || v.epochs[p.Seq].id != idOf(p) {
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
	v.epochs = map[uint64]viewEpoch{headSeq: {root: leaves.root()}}
	v.last, v.ok = headSeq, false
	v.restarts++
	for i, p := range unapplied {
		if p.Seq != headSeq+1+uint64(i) || !leaves.replacesOnly(p.ch) {
			return
		}
	}
	for _, p := range unapplied {
		v.epochs[p.Seq], v.last = viewEpoch{leaves.replacedRootIn(v, p.ch, true), idOf(p)}, p.Seq
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

// NotApplied is prior without the epochs up to seq, which the mirror holds: prior is in seq
// order, so they are at its front.
func NotApplied(prior []SealedChanges, seq uint64) []SealedChanges {
	i := 0
	for i < len(prior) && prior[i].Seq <= seq {
		i++
	}
	return prior[i:]
}

// mergedChanges are the changes of c and of the epochs before it, sorted.
func mergedChanges(c SealedChanges, before []SealedChanges) []leafChange {
	if len(before) == 0 {
		return c.ch
	}
	ch := append([]leafChange(nil), c.ch...)
	for _, p := range before {
		ch = append(ch, p.ch...)
	}
	sortChanges(ch)
	return ch
}

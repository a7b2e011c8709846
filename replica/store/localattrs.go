package store

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
)

// Local attributes are what tools set on a file beside its content: the times utimensat sets
// and the permission bits chmod and create set. They are not part of a kint row, so they are
// kept here only, by inode number (they follow a file across a rename, as its number does),
// and never staged, anchored or part of a leaf.
//
// A set time holds while the file's leaf and stored time (its last write here, or the time of the
// epoch that brought it) is the one it was set on: a write here carries it along, a pull that
// changes the row replaces it with the epoch's time, and a flush changes neither.

const (
	pAttr    = "a/"        // inode number(8) -> attrRec
	kDirTime = "x/dirtime" // unix nanoseconds(8): the time of a directory never given one
)

// attrRec is the record of one inode's local attributes.
type attrRec struct {
	HasPerm  bool        `json:"has_perm,omitempty"`
	Perm     uint32      `json:"perm,omitempty"`
	Chmod    bool        `json:"chmod,omitempty"` // Perm was set by chmod, not asked for by a create
	HasTimes bool        `json:"has_times,omitempty"`
	Mtime    int64       `json:"mtime,omitempty"` // unix nanoseconds
	Atime    int64       `json:"atime,omitempty"`
	Base     int64       `json:"base,omitempty"`      // the stored time the times were set on
	BaseLeaf common.Hash `json:"base_leaf,omitempty"` // and the leaf (zero for local files and directories)
	Ctime    int64       `json:"ctime,omitempty"`     // the last change of these attributes
}

// attrTable is the local attributes in memory, by inode number. Most files have one (a
// create's mode and a ctime), so a slot holds those and only points to the rarer set times:
// 24 bytes a file where an attrRec takes 80. The slots a load reads, in ascending order of
// inode number, are kept in two arrays found by binary search (32 bytes a file; a map of them
// took about 73 in the heap of a 100,000-row mount); a slot of another number goes in more.
type attrTable struct {
	inos  []uint64   // the numbers loaded, ascending
	slots []attrSlot // their slots; a dropped one has slotGone
	more  map[uint64]attrSlot
}

type attrSlot struct {
	ctime int64
	times *attrTimes // nil when no time was ever set
	perm  uint32
	flags uint8
}

type attrTimes struct {
	mtime, atime, base int64
	baseLeaf           common.Hash
}

const (
	slotHasPerm = 1 << iota
	slotChmod
	slotHasTimes
	slotGone // dropped since the load
)

func (t *attrTable) put(ino uint64, a attrRec) { t.set(ino, slotOf(a)) }

// load puts the slot of a load, which reads the numbers in ascending order.
func (t *attrTable) load(ino uint64, a attrRec) {
	if n := len(t.inos); n > 0 && t.inos[n-1] >= ino {
		t.put(ino, a)
		return
	}
	t.inos = append(t.inos, ino)
	t.slots = append(t.slots, slotOf(a))
}

// loaded trims the arrays' spare capacity once the load is done.
func (t *attrTable) loaded() {
	t.inos, t.slots = slices.Clone(t.inos), slices.Clone(t.slots)
}

func (t *attrTable) set(ino uint64, s attrSlot) {
	if i, ok := slices.BinarySearch(t.inos, ino); ok {
		t.slots[i] = s
		return
	}
	if t.more == nil {
		t.more = map[uint64]attrSlot{}
	}
	t.more[ino] = s
}

func (t *attrTable) del(ino uint64) {
	if i, ok := slices.BinarySearch(t.inos, ino); ok {
		t.slots[i] = attrSlot{flags: slotGone}
		return
	}
	delete(t.more, ino)
}

func (t *attrTable) slot(ino uint64) (attrSlot, bool) {
	if i, ok := slices.BinarySearch(t.inos, ino); ok {
		return t.slots[i], t.slots[i].flags&slotGone == 0
	}
	s, ok := t.more[ino]
	return s, ok
}

func slotOf(a attrRec) attrSlot {
	s := attrSlot{ctime: a.Ctime, perm: a.Perm}
	for _, f := range []struct {
		on   bool
		flag uint8
	}{{a.HasPerm, slotHasPerm}, {a.Chmod, slotChmod}, {a.HasTimes, slotHasTimes}} {
		if f.on {
			s.flags |= f.flag
		}
	}
	if a.Mtime != 0 || a.Atime != 0 || a.Base != 0 || a.BaseLeaf != (common.Hash{}) {
		s.times = &attrTimes{mtime: a.Mtime, atime: a.Atime, base: a.Base, baseLeaf: a.BaseLeaf}
	}
	return s
}

func (t *attrTable) get(ino uint64) (attrRec, bool) {
	s, ok := t.slot(ino)
	if !ok {
		return attrRec{}, false
	}
	a := attrRec{HasPerm: s.flags&slotHasPerm != 0, Perm: s.perm, Chmod: s.flags&slotChmod != 0,
		HasTimes: s.flags&slotHasTimes != 0, Ctime: s.ctime}
	if tm := s.times; tm != nil {
		a.Mtime, a.Atime, a.Base, a.BaseLeaf = tm.mtime, tm.atime, tm.base, tm.baseLeaf
	}
	return a, true
}

// permBits are the bits of a mode kept: read, write and execute for owner, group and others.
const permBits = 0o777

func attrKey(ino uint64) []byte { return append([]byte(pAttr), be64(ino)...) }

// decodeAttr decodes the attribute record val stored under key, binary or JSON.
func decodeAttr(key, val []byte) (attrRec, error) {
	var a attrRec
	if err := decodeRecord(val, &a); err != nil {
		return a, fmt.Errorf("local attributes %x: %w", key[len(pAttr):], errUndecodable)
	}
	return a, nil
}

// loadAttrs reads every attribute record.
func (s *Store) loadAttrs(txn *badger.Txn) error {
	if v, found, err := getValue(txn, kDirTime); err != nil {
		return err
	} else if found && len(v) == 8 {
		s.dirTime = fromNanos(int64(binary.BigEndian.Uint64(v)))
	}
	err := scanValues(txn, pAttr, func(k, v []byte) error {
		a, err := decodeAttr(k, v)
		if err != nil {
			return err
		}
		s.attrs.load(binary.BigEndian.Uint64(k[len(pAttr):]), a)
		return nil
	})
	s.attrs.loaded()
	return err
}

// holds reports whether the times of a were set on the version with stored time and leaf.
func (a *attrRec) holds(stored time.Time, leaf common.Hash) bool {
	return a.HasTimes && a.Base == nanos(stored) && a.BaseLeaf == leaf
}

// attrsOf is the local attributes of ino over a file whose stored time is stored and whose
// leaf is leaf. Callers hold t.mu.
func (s *Store) attrsOf(ino uint64, stored time.Time, leaf common.Hash) vault.LocalAttrs {
	la := vault.LocalAttrs{Mtime: stored, Atime: stored, Ctime: stored}
	a, ok := s.attrs.get(ino)
	if !ok {
		return la
	}
	la.HasPerm, la.Perm, la.Chmod = a.HasPerm, a.Perm, a.Chmod
	if a.holds(stored, leaf) {
		la.HasTimes = true
		la.Mtime, la.Atime = fromNanos(a.Mtime), fromNanos(a.Atime)
	}
	if a.Ctime > nanos(la.Ctime) {
		la.Ctime = fromNanos(a.Ctime)
	}
	return la
}

// dress gives v, made from a node of the live tree, its local attributes. Callers hold t.mu.
func (s *Store) dress(v *vault.Version) *vault.Version {
	la := s.attrsOf(v.Ino, v.Mtime, v.Leaf)
	v.Mtime, v.Atime, v.Ctime = la.Mtime, la.Atime, la.Ctime
	v.HasPerm, v.Perm, v.Chmod = la.HasPerm, la.Perm, la.Chmod
	return v
}

// putAttr stores rec for ino in txn; the memory follows once the transaction commits.
func (s *Store) putAttr(txn *badger.Txn, apply *[]func(), ino uint64, rec attrRec) error {
	if err := setValue(txn, attrKey(ino), encodeRecord(&rec), "local attributes"); err != nil {
		return err
	}
	s.noteAttr(ino, &rec)
	*apply = append(*apply, func() { s.attrs.put(ino, rec) })
	return nil
}

// attr is the attribute record of ino as the running update left it.
func (s *Store) attr(ino uint64) (attrRec, bool) {
	if p, ok := s.attrTx[ino]; ok {
		if p == nil {
			return attrRec{}, false
		}
		return *p, true
	}
	a, ok := s.attrs.get(ino)
	return a, ok
}

func (s *Store) noteAttr(ino uint64, rec *attrRec) {
	if s.attrTx == nil {
		s.attrTx = map[uint64]*attrRec{}
	}
	s.attrTx[ino] = rec
}

// dropAttr forgets the local attributes of ino: its file is gone.
func (s *Store) dropAttr(txn *badger.Txn, apply *[]func(), ino uint64) error {
	if _, ok := s.attr(ino); !ok {
		return nil
	}
	if err := txn.Delete(attrKey(ino)); err != nil {
		return err
	}
	s.noteAttr(ino, nil)
	*apply = append(*apply, func() { s.attrs.del(ino) })
	return nil
}

// changeAttr applies ch to the attributes of ino, whose stored time is stored and leaf leaf.
func (s *Store) changeAttr(txn *badger.Txn, apply *[]func(), ino uint64, stored time.Time, leaf common.Hash, ch vault.AttrChange) error {
	a, _ := s.attr(ino)
	now := nanos(s.now())
	if ch.Perm != nil {
		a.HasPerm, a.Perm, a.Chmod = true, *ch.Perm&permBits, !ch.Create
	}
	if ch.Mtime != nil || ch.Atime != nil {
		if !a.holds(stored, leaf) {
			a.Mtime, a.Atime = nanos(stored), nanos(stored)
		}
		a.HasTimes, a.Base, a.BaseLeaf = true, nanos(stored), leaf
		if ch.Mtime != nil {
			a.Mtime = nanos(*ch.Mtime)
		}
		if ch.Atime != nil {
			a.Atime = nanos(*ch.Atime)
		}
	}
	a.Ctime = now
	return s.putAttr(txn, apply, ino, a)
}

// carryTimes keeps the times of a file across a local change from the version old (nil for a
// new file) to n: a write here of mtime, or (mtime nil) a rename or a change of status or
// meta, which keep the file's times and change its ctime. A write whose time the store does
// not keep (content back to the anchored version, which keeps the anchored time) is recorded
// as a set time.
func (s *Store) carryTimes(txn *badger.Txn, apply *[]func(), n, old *node, mtime *time.Time) error {
	a, ok := s.attr(n.ino)
	valid := ok && old != nil && a.holds(old.modTime(), old.leaf)
	switch {
	case mtime != nil && (valid || nanos(*mtime) != n.mtime):
		if !valid {
			a.Atime = nanos(*mtime)
		}
		a.HasTimes, a.Mtime, a.Base, a.BaseLeaf = true, nanos(*mtime), n.mtime, n.leaf
	case mtime != nil:
		return nil // the stored time is the write's
	case valid:
		a.Base, a.BaseLeaf = n.mtime, n.leaf
	}
	a.Ctime = nanos(s.now())
	return s.putAttr(txn, apply, n.ino, a)
}

// SetLocalAttrs changes the local attributes of the live file k and returns it. Nothing is
// staged: the row and its leaf stay as they are.
func (s *Store) SetLocalAttrs(k vault.Key, ch vault.AttrChange) (*vault.Version, error) {
	var v *vault.Version
	err := s.update(func(txn *badger.Txn, apply *[]func()) error {
		n := s.t.get(k)
		if n == nil {
			return vault.ErrNotFound
		}
		if err := s.changeAttr(txn, apply, n.ino, n.modTime(), n.leaf, ch); err != nil {
			return err
		}
		*apply = append(*apply, func() { v = s.dress(n.version()) })
		return nil
	})
	return v, err
}

// dirStored is the stored time of a directory: it has none, and its set times always hold.
var dirStored = time.Unix(0, 0)

// SetDirAttrs changes the local attributes of the directory numbered ino.
func (s *Store) SetDirAttrs(ino uint64, ch vault.AttrChange) error {
	return s.update(func(txn *badger.Txn, apply *[]func()) error {
		return s.changeAttr(txn, apply, ino, dirStored, common.Hash{}, ch)
	})
}

// touchDir gives the directory that holds k (its category, its tier, or its trash folder) the
// time of now as mtime and ctime: a file was made, removed or renamed in it. Kept like a set
// time, in the transaction of the change.
func (s *Store) touchDir(txn *badger.Txn, apply *[]func(), tier string, category *string) error {
	ino, err := s.t.ino(txn, dirInoName(tier, category))
	if err != nil {
		return err
	}
	a, _ := s.attr(ino)
	now := nanos(s.now())
	if !a.holds(dirStored, common.Hash{}) {
		a.Atime = nanos(s.dirTime) // the time it showed until now
		if s.dirTime.IsZero() {
			a.Atime = now
		}
	}
	a.HasTimes, a.Base, a.BaseLeaf = true, nanos(dirStored), common.Hash{}
	a.Mtime, a.Ctime = now, now
	return s.putAttr(txn, apply, ino, a)
}

// touchDirOf is touchDir of the directory that holds k.
func (s *Store) touchDirOf(txn *badger.Txn, apply *[]func(), k vault.Key) error {
	return s.touchDir(txn, apply, k.Tier, k.CategoryPtr())
}

// DirAttrs are the local attributes of the directory numbered ino. A directory never given
// times has those of the first time they were asked for here, the same after a restart, so
// that rsync and backups see no change where there was none.
func (s *Store) DirAttrs(ino uint64) vault.LocalAttrs {
	s.t.mu.RLock()
	la, born := s.attrsOf(ino, dirStored, common.Hash{}), s.dirTime
	s.t.mu.RUnlock()
	if born.IsZero() {
		born = s.bornDirTime()
	}
	if !la.HasTimes {
		la.Mtime, la.Atime = born, born
	}
	if la.Ctime.Before(born) {
		la.Ctime = born
	}
	return la
}

// bornDirTime records now as the time of directories never given one, once.
func (s *Store) bornDirTime() time.Time {
	now := s.now()
	err := s.update(func(txn *badger.Txn, apply *[]func()) error {
		if !s.dirTime.IsZero() {
			return nil
		}
		if err := txn.Set([]byte(kDirTime), be64(uint64(nanos(now)))); err != nil {
			return err
		}
		*apply = append(*apply, func() { s.dirTime = now })
		return nil
	})
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	if err != nil || s.dirTime.IsZero() {
		return now
	}
	return s.dirTime
}

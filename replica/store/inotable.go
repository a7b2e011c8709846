package store

import (
	"encoding/binary"
	"math"
	"slices"
	"sort"
)

// inoTable is the inode numbers by persisted name (inoName, dirInoName), used as a map. A
// vault has a name for every row it ever held, and a map of them cost about 87 bytes a name
// (the name's own allocation, its header, the number and the map's slot): 8.7 MB of a
// 100,000-row mount, for numbers read again only when a row is written. So the names the
// store opens with, which a load reads in ascending order, are packed: each name keeps only
// what differs from the one before it, in blocks of inoBlock names that each start with a
// whole name, found by binary search over the blocks and a walk within one. What changes
// after the load (a new name, a move, a name dropped) goes in changed, which is read first.
// The 100,000 names of the benchmark's vault take 1.5 MB packed.
type inoTable struct {
	data    []byte   // the base names: per name, uvarint shared prefix, uvarint rest, the rest
	blocks  []uint32 // where each block of inoBlock names starts in data
	nums    []uint32 // each base name's number
	last    []byte   // the last name loaded (only during a load)
	changed map[string]inoChange
}

// inoBlock is how many names a block holds: a lookup decodes at most this many.
const inoBlock = 16

// inoChange is a name's number since the load, or gone when the name has none now.
type inoChange struct {
	n    uint64
	gone bool
}

// get is the number of name.
func (t *inoTable) get(name string) (uint64, bool) {
	if c, ok := t.changed[name]; ok {
		return c.n, !c.gone
	}
	if i, ok := t.find(name); ok {
		return uint64(t.nums[i]), true
	}
	return 0, false
}

// set gives name the number n.
func (t *inoTable) set(name string, n uint64) { t.change(name, inoChange{n: n}) }

// del leaves name without a number.
func (t *inoTable) del(name string) {
	if _, ok := t.find(name); ok {
		t.change(name, inoChange{gone: true}) // hides the base name
		return
	}
	delete(t.changed, name)
}

func (t *inoTable) change(name string, c inoChange) {
	if t.changed == nil {
		t.changed = map[string]inoChange{}
	}
	t.changed[name] = c
}

// forgetFrom drops every number from first on, handed out in a transaction that failed. first
// is at least the number the load left to hand out, so only names numbered since can hold one.
func (t *inoTable) forgetFrom(first uint64) {
	for name, c := range t.changed {
		if !c.gone && c.n >= first {
			t.del(name)
		}
	}
}

// load adds the name of a load, which come in ascending order; one that does not, or that
// the packed form cannot hold (a number past 32 bits, a block past 4 GiB), goes with the
// changes.
func (t *inoTable) load(name []byte, n uint64) {
	// 20: the two uvarints before the name take at most 10 bytes each
	if (len(t.nums) > 0 && string(t.last) >= string(name)) || n > math.MaxUint32 || len(t.data)+len(name)+20 > math.MaxUint32 {
		t.set(string(name), n)
		return
	}
	shared := 0
	if len(t.nums)%inoBlock == 0 {
		t.blocks = append(t.blocks, uint32(len(t.data)))
	} else {
		for shared < len(name) && shared < len(t.last) && name[shared] == t.last[shared] {
			shared++
		}
	}
	t.data = binary.AppendUvarint(t.data, uint64(shared))
	t.data = binary.AppendUvarint(t.data, uint64(len(name)-shared))
	t.data = append(t.data, name[shared:]...)
	t.nums = append(t.nums, uint32(n))
	t.last = append(t.last[:0], name...)
}

// loaded trims the packed names' spare capacity once the load is done.
func (t *inoTable) loaded() {
	t.data, t.blocks, t.nums, t.last = slices.Clone(t.data), slices.Clone(t.blocks), slices.Clone(t.nums), nil
}

// walk decodes the names of block b, in order, into name (a buffer of the caller's) until
// fn returns false; fn gets each name's index.
func (t *inoTable) walk(b int, name []byte, fn func(i int, name []byte) bool) {
	off := int(t.blocks[b])
	for i := b * inoBlock; i < len(t.nums) && i < (b+1)*inoBlock; i++ {
		shared, n := binary.Uvarint(t.data[off:])
		off += n
		rest, n := binary.Uvarint(t.data[off:])
		off += n
		name = append(name[:shared], t.data[off:off+int(rest)]...)
		off += int(rest)
		if !fn(i, name) {
			return
		}
	}
}

// first is the first name of block b, which is kept whole.
func (t *inoTable) first(b int) []byte {
	off := int(t.blocks[b])
	_, n := binary.Uvarint(t.data[off:]) // 0: nothing shared
	off += n
	rest, n := binary.Uvarint(t.data[off:])
	off += n
	return t.data[off : off+int(rest)]
}

// find is the index of name among the base names.
func (t *inoTable) find(name string) (int, bool) {
	// the last block whose first name is at most name
	b := sort.Search(len(t.blocks), func(b int) bool { return string(t.first(b)) > name }) - 1
	if b < 0 {
		return 0, false
	}
	var buf [96]byte
	at, found := 0, false
	t.walk(b, buf[:0], func(i int, got []byte) bool {
		if string(got) < name {
			return true
		}
		at, found = i, string(got) == name
		return false
	})
	return at, found
}

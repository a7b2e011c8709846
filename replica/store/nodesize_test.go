package store

import (
	"testing"
	"unsafe"

	"github.com/ethereum/go-ethereum/common"
)

// TestNodeSize: a node is one of the largest parts of a mount's memory, one per file. It holds
// no seal.Row (it took a 256-byte allocation when it did, 288 with a []byte body): 184 bytes
// today, in the 192-byte class; the bound leaves room for a key of a few more bytes.
func TestNodeSize(t *testing.T) {
	n := unsafe.Sizeof(node{})
	t.Logf("a node is %d bytes", n)
	if n > 208 {
		t.Errorf("a node is %d bytes, want at most 208", n)
	}
}

// TestAttrTableKeepsEveryField: the compact slot of the local attributes reads back as the
// record put, for a create's mode alone, set times, and every field at once.
func TestAttrTableKeepsEveryField(t *testing.T) {
	t.Logf("an attribute slot is %d bytes, a record %d", unsafe.Sizeof(attrSlot{}), unsafe.Sizeof(attrRec{}))
	if n := unsafe.Sizeof(attrSlot{}); n > 24 {
		t.Errorf("an attribute slot is %d bytes, want at most 24", n)
	}
	leaf := common.Hash{1, 2, 3}
	tab := attrTable{}
	for i, a := range []attrRec{
		{},
		{HasPerm: true, Perm: 0o644, Ctime: 5},
		{HasPerm: true, Perm: 0, Chmod: true, Ctime: 6},
		{HasTimes: true, Mtime: 1, Atime: 2, Base: 3, BaseLeaf: leaf, Ctime: 7},
		{Base: 3}, // a time kept although HasTimes is off
		{HasPerm: true, Perm: 0o7777, Chmod: true, HasTimes: true, Mtime: -1, Atime: 1 << 62, Base: 9, BaseLeaf: leaf, Ctime: 8},
	} {
		tab.put(uint64(i), a)
		if got, ok := tab.get(uint64(i)); !ok || got != a {
			t.Errorf("record %d reads back %+v, %v; want %+v", i, got, ok, a)
		}
	}
	if _, ok := tab.get(99); ok {
		t.Error("an inode never put has attributes")
	}
}

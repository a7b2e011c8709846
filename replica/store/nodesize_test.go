package store

import (
	"testing"
	"time"
	"unsafe"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// TestNodeSize: a node is one of the largest parts of a mount's memory, one per file. It holds
// no seal.Row (it took a 256-byte allocation when it did, 288 with a []byte body), its time as
// nanoseconds and what few rows have behind one pointer: 160 bytes, a 160-byte allocation
// (208 before those two).
func TestNodeSize(t *testing.T) {
	n := unsafe.Sizeof(node{})
	t.Logf("a node is %d bytes", n)
	if n > 160 {
		t.Errorf("a node is %d bytes, want at most 160", n)
	}
}

// TestNodeExtraKeepsBoth: the journal fields and the reason a row is held share one extra;
// setting either keeps the other, and a node with neither has none.
func TestNodeExtraKeepsBoth(t *testing.T) {
	ts, acted := "2026-01-01T00:00:00Z", "yes"
	n := &node{key: vault.Key{Tier: seal.TierJournal, Key: "e1"}}
	n.setRow(&seal.Row{Tier: seal.TierJournal, Key: "e1", TS: &ts})
	tr := newTree()
	tr.put(n)
	tr.setHeld(n.key, "too large")
	if j := n.journal(); j == nil || j[0] != &ts || n.held() != "too large" {
		t.Fatalf("after setHeld: journal %v, held %q", j, n.held())
	}
	n.setRow(&seal.Row{Tier: seal.TierJournal, Key: "e1", Acted: &acted})
	if j := n.journal(); j == nil || j[0] != nil || j[2] != &acted || n.held() != "too large" {
		t.Fatalf("after setRow: journal %v, held %q", j, n.held())
	}
	n.setRow(&seal.Row{Tier: seal.TierJournal, Key: "e1"})
	tr.setHeld(n.key, "")
	if n.extra != nil {
		t.Fatalf("a node with neither keeps an extra: %+v", *n.extra)
	}
	if v := n.version(); v.Held != "" || v.Row.TS != nil {
		t.Fatalf("version of a plain node: held %q, ts %v", v.Held, v.Row.TS)
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

// TestSharedStrings: the nodes a load reads share one copy of a category and of a short
// status, keep their values, and a status past the bound is left each row's own.
func TestSharedStrings(t *testing.T) {
	ss := sharedStrings{}
	var nodes []*node
	long := string(make([]byte, maxSharedStatus+1))
	for i := 0; i < 3; i++ {
		cat, st, lg := string([]byte("projects")), string([]byte("active")), string([]byte(long))
		a := &node{key: vault.Key{Tier: seal.TierEntity, Category: cat, HasCategory: true, Key: "k"}, status: &st}
		a.shareKeyCategory()
		b := &node{key: vault.Key{Tier: seal.TierEntity, Key: "solo"}, status: &lg}
		ss.share(a)
		ss.share(b)
		nodes = append(nodes, a, b)
	}
	for _, n := range nodes[2:] {
		if n.key.HasCategory {
			if unsafe.StringData(n.key.Category) != unsafe.StringData(nodes[0].key.Category) || n.status != nodes[0].status {
				t.Errorf("category or status not shared")
			}
			if n.key.Category != "projects" || *n.status != "active" || *n.cat != "projects" {
				t.Errorf("shared values changed: %q %q %q", n.key.Category, *n.status, *n.cat)
			}
		} else if n.status == nodes[1].status || *n.status != long {
			t.Errorf("a status past the bound was shared or changed")
		}
	}
	for i := 0; i < 2*maxSharedStatus; i++ {
		st := string(rune('a'+i%26)) + string(rune('a'+i/26))
		ss.share(&node{key: vault.Key{Tier: seal.TierState, Key: "s"}, status: &st})
	}
	if len(ss.status) > maxSharedStatus {
		t.Errorf("%d statuses kept, bound %d", len(ss.status), maxSharedStatus)
	}
}

// TestTreeRowAndLocalOfOneName: a directory keeps its rows and its local files apart, so a
// row and a local file of the same name are both found, both listed, and go one at a time.
func TestTreeRowAndLocalOfOneName(t *testing.T) {
	tr := newTree()
	row := vault.Key{Tier: seal.TierState, Key: "x"}
	local := vault.Key{Tier: seal.TierState, Key: "x", Local: true}
	tr.put(&node{key: row, ino: 1})
	if tr.get(local) != nil {
		t.Fatal("a local file found where only a row is")
	}
	tr.put(&node{key: local, ino: 2})
	if tr.get(row).ino != 1 || tr.get(local).ino != 2 {
		t.Fatalf("row ino %d, local ino %d", tr.get(row).ino, tr.get(local).ino)
	}
	if l := tr.list(seal.TierState, nil); len(l) != 2 || l[0].Local == l[1].Local {
		t.Fatalf("listed %+v", l)
	}
	if tr.locals != 1 {
		t.Fatalf("%d local files counted", tr.locals)
	}
	tr.remove(local)
	if tr.get(local) != nil || tr.get(row) == nil || tr.locals != 0 {
		t.Fatalf("after removing the local file: local %v, row %v, %d counted", tr.get(local), tr.get(row), tr.locals)
	}
	tr.remove(row)
	if l := tr.list(seal.TierState, nil); len(l) != 0 {
		t.Fatalf("listed %+v after removing both", l)
	}
	tr.remove(row) // a second time changes nothing
}

// TestReloadKeepsCounts: rebuilding the tree from the database (the end of an epoch applied
// again from its marker) counts each staged byte and local file once, not on top of the counts
// the tree already held.
func TestReloadKeepsCounts(t *testing.T) {
	r := newTestStore(t)
	mustWrite(t, r.Store, vault.Key{Tier: seal.TierState, Key: "staged"}, "twelve bytes")
	if _, err := r.Write(vault.Key{Tier: seal.TierState, Key: ".notes.swp", Local: true}, []byte("local"), time.Now()); err != nil {
		t.Fatal(err)
	}
	count := func() (int64, int) {
		sum, err := r.Summary()
		if err != nil {
			t.Fatal(err)
		}
		return r.Anchorable(), sum.LocalFiles
	}
	bytes, locals := count()
	if bytes != 12 || locals != 1 {
		t.Fatalf("before the reload: %d bytes anchorable, %d local files", bytes, locals)
	}
	r.t.mu.Lock()
	err := r.reload()
	r.t.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if b, l := count(); b != bytes || l != locals {
		t.Fatalf("after the reload: %d bytes anchorable, %d local files; want %d and %d", b, l, bytes, locals)
	}
}

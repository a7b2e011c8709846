package fs

import (
	"context"
	"sort"
	"sync"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"kintfs/replica/vault"
)

// dirHandle is an open row directory: a sorted snapshot taken at the first read (and again on
// rewinddir), so that a listing in progress never skips or repeats an entry while files come
// and go. Not at opendir: the kernel, when it keeps listings, dates its copy from the first
// read, and a file made between opendir and that read must be in it.
type dirHandle struct {
	d *rowDir

	mu     sync.Mutex
	loaded bool
	list   []fuse.DirEntry
	byName map[string]vault.Dirent
	next   int
}

var (
	_ = (fusefs.FileReaddirenter)((*dirHandle)(nil))
	_ = (fusefs.FileSeekdirer)((*dirHandle)(nil))
	_ = (fusefs.FileLookuper)((*dirHandle)(nil))
	_ = (fusefs.FileReleasedirer)((*dirHandle)(nil))
)

// load takes a new snapshot; callers hold mu or own h alone.
func (h *dirHandle) load() error {
	entries, err := h.d.entries()
	if err != nil {
		return err
	}
	parent := uint64(inoRoot)
	if _, p := h.d.Parent(); p != nil {
		parent = p.StableAttr().Ino
	}
	list := make([]fuse.DirEntry, 0, len(entries)+2)
	list = append(list,
		fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Ino: h.d.ino},
		fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR, Ino: parent})
	byName := make(map[string]vault.Dirent, len(entries))
	for _, e := range entries {
		mode := uint32(syscall.S_IFREG)
		if e.d.Dir {
			mode = syscall.S_IFDIR
		}
		list = append(list, fuse.DirEntry{Name: e.name, Mode: mode, Ino: e.d.Ino})
		byName[e.name] = e.d
	}
	// Offsets are positions, so a seek lands on the same entry of this snapshot.
	for i := range list {
		list[i].Off = uint64(i + 1)
	}
	h.list, h.byName, h.next, h.loaded = list, byName, 0, true
	return nil
}

func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.loaded {
		if err := h.load(); err != nil {
			return nil, h.d.fs.fail("readdir", &h.d.node, "", err)
		}
	}
	if h.next >= len(h.list) {
		return nil, 0
	}
	e := h.list[h.next]
	h.next++
	return &e, 0
}

func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off == 0 || !h.loaded {
		if err := h.load(); err != nil {
			return h.d.fs.fail("rewinddir", &h.d.node, "", err)
		}
	}
	if off > uint64(len(h.list)) {
		off = uint64(len(h.list))
	}
	h.next = int(off)
	return 0
}

// Lookup answers readdirplus from the snapshot, so ls -l does not resolve every name again.
func (h *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	h.mu.Lock()
	de, ok := h.byName[name]
	h.mu.Unlock()
	d := h.d
	if !ok {
		return d.Lookup(ctx, name, out)
	}
	if de.Dir {
		return d.child(ctx, name, resolved{isCat: true, cat: de.Name}, out)
	}
	r := resolved{key: vault.Key{Tier: d.tier, Key: de.Name, Local: de.Local}.InCategory(d.category)}
	v, err := d.v.tree.Get(r.key)
	if err != nil {
		return nil, d.fs.fail("lookup", &d.node, name, err)
	}
	r.v = v
	return d.child(ctx, name, r, out)
}

func (h *dirHandle) Releasedir(ctx context.Context, releaseFlags uint32) {}

// sortEntries orders a listing by the names shown.
func sortEntries(es []dirEntry) {
	sort.SliceStable(es, func(i, j int) bool { return es[i].name < es[j].name })
}

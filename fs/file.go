package fs

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"kintfs/replica"
	"kintfs/seal"
)

// maxFileSize bounds what one open file buffers in memory, and what the store takes: a write or
// truncate past it gets EFBIG there and then, never a failure at close.
const maxFileSize = replica.MaxFileBytes

// fileNode is one row (or local file) of a tree. While the file is open its content lives in
// one buffer shared by all handles; Flush, Fsync, Rename and Release hand a changed buffer to
// Backend.Write, after which the change is durable.
type fileNode struct {
	node
	v *view

	mu          sync.Mutex
	key         replica.Key
	pendingIn   *rowDir // a journal event being written: the directory of its created name
	pendingName string
	detached    bool // unlinked or replaced: its content no longer goes anywhere
	opens       int
	loaded      bool
	stale       bool // a pull changed the row under a clean buffer: reload before use
	buf         []byte
	dirty       bool
	mtime       time.Time
	leaf        [32]byte // the leaf the kernel's page cache holds, for FOPEN_KEEP_CACHE
	leafOK      bool
	// opened is set by an open for writing and cleared by the next request on the file. The
	// kernel (without atomic O_TRUNC, which go-fuse does not offer) sends open(O_TRUNC) as an
	// open followed by a truncate to 0 that names no handle; that truncate then cuts the
	// open buffer like one through the handle, and is stored at close, so a write that is
	// refused afterwards (EFBIG) leaves the file as it was.
	opened bool
}

var (
	_ = (fusefs.NodeGetattrer)((*fileNode)(nil))
	_ = (fusefs.NodeSetattrer)((*fileNode)(nil))
	_ = (fusefs.NodeOpener)((*fileNode)(nil))
)

func newFileNode(f *mountFS, v *view, k replica.Key) *fileNode {
	return &fileNode{node: node{fs: f}, v: v, key: k}
}

// is reports whether n still stands for key k.
func (n *fileNode) is(k replica.Key) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.detached && n.pendingIn == nil && n.key.Equal(k)
}

func (n *fileNode) currentKey() replica.Key {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.key
}

func (n *fileNode) setKey(k replica.Key) {
	n.mu.Lock()
	n.key = k
	n.mu.Unlock()
}

func (n *fileNode) detach() {
	n.mu.Lock()
	n.detached = true
	n.mu.Unlock()
}

// invalidate marks a clean buffer out of date after a pull changed the row.
func (n *fileNode) invalidate() {
	n.mu.Lock()
	if n.loaded && !n.dirty {
		n.stale = true
	}
	n.mu.Unlock()
}

// holds reports whether what the kernel's pages and this node's buffer hold is the row of
// leaf, with no change of its own: an epoch that brings that same row changes nothing in them.
func (n *fileNode) holds(leaf [32]byte) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leafOK && n.leaf == leaf && !n.dirty && !n.stale && n.pendingIn == nil && !n.detached
}

// journalRefused refuses a change to a journal event, which never changes, and logs why.
func (f *mountFS) journalRefused(op string) syscall.Errno {
	f.logf("warn: %s: EPERM: the journal is append-only: an event cannot be changed (write a new one)", op)
	return syscall.EPERM
}

// journalEvent reports whether n is an anchored-or-staged journal event, which never changes.
func (n *fileNode) journalEventLocked() bool {
	return n.key.Tier == seal.TierJournal && !n.key.Local && n.pendingIn == nil
}

// versionAttr fills attributes from a version fetched by the caller.
func (n *fileNode) versionAttr(out *fuse.Attr, v *replica.Version) {
	n.mu.Lock()
	perm, exact := n.permLocked(v)
	n.mu.Unlock()
	n.fs.fileAttrPerm(out, v.Ino, v.Size, v.Mtime, perm, exact)
	versionTimes(out, v, v.Mtime)
}

// attr fills attributes: size and mtime from the open buffer when there is one (the kernel
// must not see a size older than what was written through it), the rest from the backend.
func (n *fileNode) attr(out *fuse.Attr) syscall.Errno {
	n.mu.Lock()
	k, loaded, gone := n.key, n.loaded, n.detached || n.pendingIn != nil
	n.mu.Unlock()
	var v *replica.Version
	if !loaded || !gone {
		var err error
		if v, err = n.v.tree.Get(k); err != nil && !loaded {
			return n.fs.fail("getattr", &n.node, "", err)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	perm, exact := n.permLocked(v)
	if n.loaded {
		n.fs.fileAttrPerm(out, n.StableAttr().Ino, int64(len(n.buf)), n.mtime, perm, exact)
		versionTimes(out, v, n.mtime)
		return 0
	}
	if v == nil {
		return syscall.ENOENT
	}
	n.fs.fileAttrPerm(out, v.Ino, v.Size, v.Mtime, perm, exact)
	versionTimes(out, v, v.Mtime)
	out.Ino = n.StableAttr().Ino
	return 0
}

func (n *fileNode) Getattr(ctx context.Context, f fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	attrTimeout(n.v, out)
	return n.attr(&out.Attr)
}

// Setattr truncates, and keeps times and mode as local attributes (see attrs.go); a chown to
// another owner is refused (see ownerRefused).
func (n *fileNode) Setattr(ctx context.Context, f fusefs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if n.fs.readOnly(n.v) {
		return syscall.EROFS
	}
	if errno := n.fs.ownerRefused(in); errno != 0 {
		return errno
	}
	if size, ok := in.GetSize(); ok {
		_, viaHandle := f.(*fileHandle)
		if errno := n.truncate(int64(size), viaHandle); errno != 0 {
			return errno
		}
	}
	if errno := n.setLocalAttrs(in); errno != 0 {
		return errno
	}
	return n.Getattr(ctx, f, out)
}

func (n *fileNode) truncate(size int64, viaHandle bool) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	openTrunc := n.opened && size == 0 && n.loaded && n.opens > 0
	n.opened = false
	if size > maxFileSize {
		return syscall.EFBIG
	}
	viaHandle = viaHandle || openTrunc
	if n.journalEventLocked() {
		return n.fs.journalRefused("truncate")
	}
	if !n.loaded {
		if n.detached {
			return syscall.ENOENT
		}
		// A closed file: read, cut, write back at once.
		content, err := n.v.tree.Content(n.key)
		if err != nil {
			return n.fs.fail("truncate", &n.node, "", err)
		}
		v, err := n.fs.b.Write(n.key, resize(content, size), time.Now())
		if err != nil {
			return n.fs.fail("truncate", &n.node, "", err)
		}
		n.leaf, n.leafOK = v.Leaf, false
		return 0
	}
	n.buf = resize(n.buf, size)
	n.dirty, n.stale, n.mtime = true, false, time.Now()
	if viaHandle || n.pendingIn != nil {
		return 0
	}
	return n.flushLocked("truncate")
}

// resize cuts b to size or extends it with zeros.
func resize(b []byte, size int64) []byte {
	if int64(len(b)) >= size {
		return b[:size]
	}
	return append(b, make([]byte, size-int64(len(b)))...)
}

func (n *fileNode) Open(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	return n.open(flags, nil)
}

// open opens a handle; v is the current version when the caller has it.
func (n *fileNode) open(flags uint32, v *replica.Version) (fusefs.FileHandle, uint32, syscall.Errno) {
	write := flags&syscall.O_ACCMODE != syscall.O_RDONLY
	trunc := flags&syscall.O_TRUNC != 0
	if (write || trunc) && n.fs.readOnly(n.v) {
		return nil, 0, syscall.EROFS
	}
	if n.fs.noOpen() {
		return nil, 0, syscall.ENOSYS // see noopen.go
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if (write || trunc) && n.journalEventLocked() {
		return nil, 0, n.fs.journalRefused("open")
	}
	keep, v, errno := n.noteLeafLocked(v)
	if errno != 0 {
		return nil, 0, errno
	}
	if trunc {
		keep = false
	}
	if errno := n.fillLocked(write, trunc, v); errno != 0 {
		return nil, 0, errno
	}
	n.opens++
	n.opened = write
	h := &fileHandle{n: n, write: write}
	if write && n.pendingIn == nil && !n.v.history {
		h.writing = n.key
		n.fs.b.OpenedForWrite(n.key)
	}
	var fflags uint32
	if keep {
		fflags |= fuse.FOPEN_KEEP_CACHE
	}
	if !write {
		// Closing a read-only descriptor has nothing to hand over.
		fflags |= fuse.FOPEN_NOFLUSH
	}
	return h, fflags, 0
}

// noteLeafLocked records the leaf of the row as it stands (v, read when nil) and reports
// whether the kernel may keep its pages: when the row is the one they were read from. A
// history view always may; a pending, detached or history file is not looked up, and v is
// then returned as given.
func (n *fileNode) noteLeafLocked(v *replica.Version) (keep bool, _ *replica.Version, _ syscall.Errno) {
	if n.pendingIn != nil || n.detached || n.v.history {
		return n.v.history, v, 0
	}
	if v == nil {
		var err error
		if v, err = n.v.tree.Get(n.key); err != nil {
			return false, nil, n.fs.fail("open", &n.node, "", err)
		}
	}
	keep = n.leafOK && v.Leaf == n.leaf && !n.dirty && !n.stale
	n.leaf, n.leafOK = v.Leaf, true
	return keep, v, 0
}

// fillLocked readies the buffer for an open: emptied by O_TRUNC, loaded for a write, left
// for the first read otherwise.
func (n *fileNode) fillLocked(write, trunc bool, v *replica.Version) syscall.Errno {
	switch {
	case trunc:
		n.buf, n.loaded, n.dirty, n.stale, n.mtime = n.buf[:0], true, true, false, time.Now()
	case n.detached && !n.loaded:
		return syscall.ENOENT
	case !write && !n.loaded:
		// Loaded on the first read that reaches us: with the kernel keeping its pages, a
		// warm read never does, and grep opens many files it reads from the page cache.
	case !n.loaded || n.stale:
		return n.loadLocked(v)
	}
	return 0
}

// loadLocked reads the row into the buffer. A stale buffer whose row has gone keeps its
// content: an open file reads on after the row disappears, as on any file system.
func (n *fileNode) loadLocked(v *replica.Version) syscall.Errno {
	content, err := n.v.tree.Content(n.key)
	if err != nil {
		if n.stale {
			n.stale = false
			return 0
		}
		return n.fs.fail("open", &n.node, "", err)
	}
	if v == nil {
		if v, err = n.v.tree.Get(n.key); err != nil {
			return n.fs.fail("open", &n.node, "", err)
		}
	}
	n.buf, n.loaded, n.dirty, n.stale, n.mtime = content, true, false, false, v.Mtime
	return 0
}

// discardLocked drops the unsaved changes of a file a write tried to take past maxFileSize:
// the file is left as it was last stored (an empty file, for a new one), not cut at the
// limit. The kernel's cached pages and size are dropped with them.
func (n *fileNode) discardLocked() {
	if !n.dirty {
		return
	}
	n.dirty = false
	if n.pendingIn != nil || n.detached {
		n.buf = n.buf[:0]
	} else {
		n.buf, n.loaded, n.stale = nil, false, false
	}
	n.leafOK = false
	n.fs.later(func() { n.NotifyContent(0, 0) })
}

// flush hands a changed buffer to the backend; after it returns the change is durable.
func (n *fileNode) flush(op string) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.opened = false
	return n.flushLocked(op)
}

func (n *fileNode) flushLocked(op string) syscall.Errno {
	if err := n.writeLocked(); err != nil {
		return n.fs.fail(op, &n.node, "", err)
	}
	return 0
}

// writeLocked writes a changed buffer that still belongs to a row.
func (n *fileNode) writeLocked() error {
	if !n.dirty || n.detached {
		return nil
	}
	if n.pendingIn != nil && len(n.buf) == 0 {
		// A new event nothing was written to yet: the shell's close of the descriptor it
		// duplicated, before echo writes. There is nothing to append.
		return nil
	}
	v, err := n.fs.b.Write(n.key, bytes.Clone(n.buf), n.mtime)
	if errors.Is(err, replica.ErrKeptInvalid) {
		n.dirty = false // kept as a local file, which the error names: not dropped
	}
	if err != nil {
		return err
	}
	n.dirty = false
	n.leaf, n.leafOK = v.Leaf, true
	if v.Held != "" && !v.Key.Local {
		// said at once, not only at the next flush: the write succeeded, the row will wait
		n.fs.logf("warn: held: %s will not be anchored: %s; it stays staged here (held in .kint/status) until written again", n.where(""), v.Held)
	}
	if n.pendingIn != nil {
		// The event now lives under its content key.
		n.key = v.Key
	}
	return nil
}

// release drops a handle; the last one writes what Flush could not and frees the buffer. The
// kernel ignores what Release returns, so a failure here is logged: the change is lost.
func (n *fileNode) release() {
	n.mu.Lock()
	n.opens--
	if n.opens > 0 {
		n.mu.Unlock()
		return
	}
	if err := n.writeLocked(); err != nil {
		n.fs.logf("release %s: unsaved changes dropped: %v", n.where(""), err)
	}
	n.buf, n.loaded, n.dirty, n.stale = nil, false, false, false
	dir, name := n.pendingIn, n.pendingName
	n.pendingIn = nil
	n.mu.Unlock()
	if dir != nil {
		dir.releasePending(name, n)
	}
}

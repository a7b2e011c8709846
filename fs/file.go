package fs

import (
	"context"
	"kintfs/replica/vault"
	"sync"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// maxFileSize bounds what one open file buffers in memory, and what the store takes: a write or
// truncate past it gets EFBIG there and then, never a failure at close.
const maxFileSize = vault.MaxFileBytes

// fileNode is one row (or local file) of a tree. While the file is open its content lives in
// one buffer shared by all handles (see buffer.go); Flush, Fsync, Rename and Release hand a
// changed buffer to Backend.Write, after which the change is durable.
//
// A mount holds a fileNode for every file the kernel has looked up, open or not (100,000 of
// them after a grep of a vault that size), so it holds no more than a closed file needs: the
// content of an open file is allocated at open and dropped at the last release (see
// fileBuffer), a new journal event's created name lives apart, and the backend is reached
// through the node itself (nodeIO) rather than a stored interface.
type fileNode struct {
	node
	v *view

	mu sync.Mutex
	b  fileBuffer
	// pending is the directory and created name of a new journal event (bindEvent),
	// forgotten there at its last release; nil for every other file.
	pending *pendingEvent
}

// pendingEvent is where a new journal event was created.
type pendingEvent struct {
	in   *rowDir
	name string
}

var (
	_ = (fusefs.NodeGetattrer)((*fileNode)(nil))
	_ = (fusefs.NodeSetattrer)((*fileNode)(nil))
	_ = (fusefs.NodeOpener)((*fileNode)(nil))
	_ = (fusefs.NodeOnForgetter)((*fileNode)(nil))
)

// nodeIO is the bufferIO of a file node: its view's tree, and the backend's Write. A pointer
// to it is the node's own, so giving it to step allocates nothing.
type nodeIO fileNode

func (n *nodeIO) Get(k vault.Key) (*vault.Version, error) { return n.v.tree.Get(k) }
func (n *nodeIO) Content(k vault.Key) ([]byte, error)     { return n.v.tree.Content(k) }
func (n *nodeIO) Read(k vault.Key) (*vault.Version, []byte, error) {
	return n.v.tree.Read(k)
}
func (n *nodeIO) Write(k vault.Key, content []byte, mtime time.Time) (*vault.Version, error) {
	return n.fs.b.Write(k, content, mtime)
}

func newFileNode(f *mountFS, v *view, k vault.Key) *fileNode {
	f.fileNodeMade()
	return &fileNode{node: node{fs: f}, v: v, b: fileBuffer{key: k, history: v.history}}
}

// stepLocked gives an event to the buffer, and does what it says besides: drop the kernel's
// pages, forget a new event's name (done by release), say that a stored row is held.
func (n *fileNode) stepLocked(ev bufEvent) bufResult {
	r := n.b.step((*nodeIO)(n), ev)
	if r.dropped {
		n.fs.later(func() { n.NotifyContent(0, 0) })
	}
	if v := r.held; v != nil {
		// said at once, not only at the next flush: the write succeeded, the row will wait
		n.fs.logf("warn: held: %s will not be anchored: %s; it stays staged here (held in .kint/status) until written again", n.where(""), v.Held)
	}
	return r
}

// errnoOf is the errno of a step's result, failing op when the backend failed.
func (n *fileNode) errnoOf(op string, r bufResult) syscall.Errno {
	switch {
	case r.journal:
		return n.fs.journalRefused(op)
	case r.errno != 0:
		return r.errno
	case r.err != nil:
		return n.fs.fail(op, &n.node, "", r.err)
	}
	return 0
}

// is reports whether n still stands for key k.
func (n *fileNode) is(k vault.Key) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.b.standsFor() && n.b.key == k
}

func (n *fileNode) currentKey() vault.Key {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.b.key
}

func (n *fileNode) setKey(k vault.Key) {
	n.mu.Lock()
	n.stepLocked(bufEvent{kind: evRebind, key: k})
	n.mu.Unlock()
}

func (n *fileNode) detach() {
	n.mu.Lock()
	n.stepLocked(bufEvent{kind: evDetach})
	n.mu.Unlock()
}

// invalidate marks a clean buffer out of date after a pull changed the row.
func (n *fileNode) invalidate() {
	n.mu.Lock()
	n.stepLocked(bufEvent{kind: evInvalidate})
	n.mu.Unlock()
}

// holds reports whether what the kernel's pages and this node's buffer hold is the row of
// leaf, with no change of its own: an epoch that brings that same row changes nothing in them.
func (n *fileNode) holds(leaf [32]byte) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.b.holds(leaf)
}

// journalRefused refuses a change to a journal event, which never changes, and logs why.
func (f *mountFS) journalRefused(op string) syscall.Errno {
	f.logf("warn: %s: EPERM: the journal is append-only: an event cannot be changed (write a new one)", op)
	return syscall.EPERM
}

// versionAttr fills attributes from a version fetched by the caller.
func (n *fileNode) versionAttr(out *fuse.Attr, v *vault.Version) {
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
	k, loaded, gone := n.b.key, n.b.loaded(), !n.b.standsFor()
	n.mu.Unlock()
	var v *vault.Version
	if !loaded || !gone {
		var err error
		if v, err = n.v.tree.Get(k); err != nil && !loaded {
			return n.fs.fail("getattr", &n.node, "", err)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	perm, exact := n.permLocked(v)
	if n.b.loaded() {
		n.fs.fileAttrPerm(out, n.StableAttr().Ino, int64(len(n.b.buf)), n.b.mtime, perm, exact)
		versionTimes(out, v, n.b.mtime)
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
	return n.errnoOf("truncate", n.stepLocked(bufEvent{kind: evTruncate, size: size, viaHandle: viaHandle, now: time.Now()}))
}

// resize cuts b to size or extends it with zeros.
func resize(b []byte, size int64) []byte {
	if int64(len(b)) >= size {
		return b[:size]
	}
	return append(b, make([]byte, size-int64(len(b)))...)
}

func (n *fileNode) Open(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	return n.open(flags, nil, false)
}

// open opens a handle; v is the current version when the caller has it.
// open opens the file with flags; v is its version when the caller has it, created says that
// the caller has just created it, empty.
func (n *fileNode) open(flags uint32, v *vault.Version, created bool) (fusefs.FileHandle, uint32, syscall.Errno) {
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
	r := n.stepLocked(bufEvent{kind: evOpen, write: write, trunc: trunc, v: v, now: time.Now(), created: created && v != nil})
	if errno := n.errnoOf("open", r); errno != 0 {
		return nil, 0, errno
	}
	h := &fileHandle{n: n, write: write}
	if write && !n.b.isEvent() && !n.v.history {
		h.writing = n.b.key
		n.fs.b.OpenedForWrite(n.b.key)
	}
	var fflags uint32
	if r.keep {
		fflags |= fuse.FOPEN_KEEP_CACHE
	}
	if !write {
		// Closing a read-only descriptor has nothing to hand over.
		fflags |= fuse.FOPEN_NOFLUSH
	}
	return h, fflags, 0
}

// newFileFlags are the open flags fflags of a handle whose create made a new file, opened with
// flags. A write-only one writes around the kernel's page cache (FOPEN_DIRECT_IO): a new file
// has no pages to keep, and the kernel then does not ask for the file's security.capability
// before its first write, one request of the seven a new file cost. A write-only descriptor
// cannot be mapped, which a direct handle would have to refuse; a read-write one stays cached.
func newFileFlags(flags, fflags uint32) uint32 {
	if flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		fflags |= fuse.FOPEN_DIRECT_IO
	}
	return fflags
}

// flush hands a changed buffer to the backend; after it returns the change is durable.
func (n *fileNode) flush(op string) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.errnoOf(op, n.stepLocked(bufEvent{kind: evFlush}))
}

// release drops a handle; the last one writes what Flush could not and frees the buffer. The
// kernel ignores what Release returns, so a failure here is logged: the change is lost.
func (n *fileNode) release() {
	n.mu.Lock()
	r := n.stepLocked(bufEvent{kind: evRelease})
	if r.err != nil {
		n.fs.logf("release %s: unsaved changes dropped: %v", n.where(""), r.err)
	}
	p := n.pending
	if r.forget {
		n.pending = nil
	}
	n.mu.Unlock()
	if r.forget && p != nil {
		p.in.releasePending(p.name, n)
	}
}

package fs

import (
	"context"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// No-open mode, on --read-only mounts. The first OPEN of a file is answered ENOSYS, which
// tells the kernel that the mount has no open: from then on it opens files by itself, keeping
// their pages (FOPEN_KEEP_CACHE), and sends no OPEN and no RELEASE; the first FLUSH answered
// ENOSYS stops FLUSH too. A warm read then costs no round trip. Reads come without a handle;
// a pull still drops changed pages (invalidate.go). The control files, whose content changes
// unannounced, give the kernel a new mtime and the shortest attribute time (one tick of its
// clock) on every getattr, so that it drops their pages before a read (FUSE_AUTO_INVAL_DATA),
// and drop them after each read: what they show is at most a tick old.

var (
	_ = (fusefs.NodeReader)((*fileNode)(nil))
	_ = (fusefs.NodeFlusher)((*fileNode)(nil))
	_ = (fusefs.NodeFsyncer)((*fileNode)(nil))
	_ = (fusefs.NodeReader)((*ctlFile)(nil))
)

// noOpen reports whether files are opened without a handle.
func (f *mountFS) noOpen() bool { return f.opts.ReadOnly }

// Read serves a handle's read, or one without a handle in no-open mode, from the row itself.
func (n *fileNode) Read(ctx context.Context, fh fusefs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if h, ok := fh.(*fileHandle); ok {
		return h.Read(ctx, dest, off)
	}
	content, err := n.v.tree.Content(n.currentKey())
	if err != nil {
		return nil, n.fs.fail("read", &n.node, "", err)
	}
	return readAt(content, dest, off), 0
}

// Flush hands a handle's changes to the backend. Without a handle nothing was written, and
// ENOSYS tells the kernel to send no more FLUSH.
func (n *fileNode) Flush(ctx context.Context, fh fusefs.FileHandle) syscall.Errno {
	if h, ok := fh.(*fileHandle); ok {
		return h.Flush(ctx)
	}
	return syscall.ENOSYS
}

func (n *fileNode) Fsync(ctx context.Context, fh fusefs.FileHandle, flags uint32) syscall.Errno {
	if h, ok := fh.(*fileHandle); ok {
		return h.Fsync(ctx, flags)
	}
	return 0 // nothing written: durable as it is
}

// Read serves a control file without a handle: made afresh for a read from the start, and
// the rest of that read from the same copy.
func (c *ctlFile) Read(ctx context.Context, fh fusefs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if h, ok := fh.(*ctlHandle); ok {
		return h.Read(ctx, dest, off)
	}
	c.mu.Lock()
	if off == 0 || c.snap == nil {
		c.snap = c.content()
	}
	data := c.snap
	c.mu.Unlock()
	in := c.EmbeddedInode()
	c.fs.later(func() { in.NotifyContent(0, 0) })
	return readAt(data, dest, off), 0
}

// uncachedAttr makes the kernel ask again for a control file's attributes before its next
// read: a zero timeout would be replaced by the mount's default.
func uncachedAttr(out *fuse.Attr) {
	now := time.Now()
	out.SetTimes(&now, &now, &now)
}

func readAt(data, dest []byte, off int64) fuse.ReadResult {
	if off >= int64(len(data)) {
		return fuse.ReadResultData(nil)
	}
	return fuse.ReadResultData(data[off:min(int64(len(data)), off+int64(len(dest)))])
}

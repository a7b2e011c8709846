package fs

import (
	"context"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"kintfs/replica/vault"
)

// fileHandle is one open file. The content is the node's shared buffer.
type fileHandle struct {
	n       *fileNode
	write   bool
	writing vault.Key // the row it told the engine it writes (Backend.OpenedForWrite); zero when none
}

var (
	_ = (fusefs.FileReader)((*fileHandle)(nil))
	_ = (fusefs.FileWriter)((*fileHandle)(nil))
	_ = (fusefs.FileFlusher)((*fileHandle)(nil))
	_ = (fusefs.FileFsyncer)((*fileHandle)(nil))
	_ = (fusefs.FileReleaser)((*fileHandle)(nil))
)

func (h *fileHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.stepLocked(bufEvent{kind: evRead, dest: dest, off: off})
	if errno := n.errnoOf("open", r); errno != 0 {
		return nil, errno
	}
	return fuse.ReadResultData(dest[:r.n]), 0
}

func (h *fileHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if !h.write {
		return 0, syscall.EBADF
	}
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.stepLocked(bufEvent{kind: evWrite, data: data, off: off, now: time.Now()})
	if errno := n.errnoOf("open", r); errno != 0 {
		return 0, errno
	}
	return uint32(r.n), 0
}

// Flush runs on every close of a descriptor (more than once after dup) and is the only place
// the kernel hears a write error, so this is where the content is handed to the backend.
func (h *fileHandle) Flush(ctx context.Context) syscall.Errno {
	return h.durable("flush", h.n.flush("flush"))
}

// Fsync means durable in the local store, not anchored on chain.
func (h *fileHandle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return h.durable("fsync", h.n.flush("fsync"))
}

// durable makes a file this handle created durable when nothing was written to it (what is
// written is durable by itself); a handle that only reads never waits for the disk.
func (h *fileHandle) durable(op string, errno syscall.Errno) syscall.Errno {
	if errno != 0 || !h.write {
		return errno
	}
	if err := h.n.fs.b.Sync(); err != nil {
		return h.n.fs.fail(op, &h.n.node, "", err)
	}
	return 0
}

func (h *fileHandle) Release(ctx context.Context) syscall.Errno {
	h.n.release()
	if h.writing.Tier != "" {
		h.n.fs.b.ClosedForWrite(h.writing)
	}
	return 0
}

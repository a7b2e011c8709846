package fs

import (
	"context"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// Appending to the journal: creating any file in journal/ opens a new event. What is written is
// the JSON object of its fields; on flush (close) the backend stores it under its content key,
// and the file is listed under that key from then on. The created name stays openable until
// the last handle is released, so that a tool can reopen what it just wrote; then it is gone.

// createPending opens a new event under the created name.
func (d *rowDir) createPending(ctx context.Context, name string, flags uint32, out *fuse.EntryOut) (*fusefs.Inode, fusefs.FileHandle, uint32, syscall.Errno) {
	d.pmu.Lock()
	fn := d.pending[name]
	if fn != nil && flags&syscall.O_EXCL != 0 {
		d.pmu.Unlock()
		return nil, nil, 0, syscall.EEXIST
	}
	created := fn == nil
	if created {
		fn = newFileNode(d.fs, d.v, vault.Key{Tier: seal.TierJournal, Key: name})
		fn.pending = &pendingEvent{in: d, name: name}
		fn.b.hold()
		fn.b.bind, fn.b.phase, fn.b.mtime = bindEvent, bufClean, time.Now()
		if d.pending == nil {
			d.pending = map[string]*fileNode{}
		}
		d.pending[name] = fn
		// No row stands behind it yet: the inode number is go-fuse's own.
		d.NewInode(ctx, fn, fusefs.StableAttr{Mode: syscall.S_IFREG})
	}
	d.pmu.Unlock()
	fh, fflags, errno := fn.open(flags, nil, false)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if created {
		fflags = newFileFlags(flags, fflags)
	}
	if errno := fn.attr(&out.Attr); errno != 0 {
		return nil, nil, 0, errno
	}
	return fn.EmbeddedInode(), fh, fflags, 0
}

// pendingFile is the open new event created under name, if any.
func (d *rowDir) pendingFile(name string) *fileNode {
	if d.tier != seal.TierJournal {
		return nil
	}
	d.pmu.Lock()
	defer d.pmu.Unlock()
	return d.pending[name]
}

// dropPendingName forgets a created name (unlink). An event not yet written is discarded; one
// already written stays in the journal under its content key.
func (d *rowDir) dropPendingName(name string) bool {
	if d.tier != seal.TierJournal {
		return false
	}
	d.pmu.Lock()
	fn := d.pending[name]
	delete(d.pending, name)
	d.pmu.Unlock()
	if fn == nil {
		return false
	}
	fn.detach()
	return true
}

// releasePending forgets a created name once its last handle is gone, and tells the kernel.
func (d *rowDir) releasePending(name string, fn *fileNode) {
	d.pmu.Lock()
	if d.pending[name] == fn {
		delete(d.pending, name)
	}
	d.pmu.Unlock()
	dir := d.EmbeddedInode()
	d.fs.later(func() { dir.NotifyEntry(name) })
}

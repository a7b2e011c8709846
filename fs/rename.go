package fs

import (
	"context"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// renameNoreplace is renameat2's RENAME_NOREPLACE.
const renameNoreplace = 0x1

// Rename moves a row within its tier, across categories too. Anything else is EXDEV, so that
// mv falls back to copy and delete: across tiers, into or out of a history view, and a category
// directory itself (mv then copies the category and removes the old one).
func (d *rowDir) Rename(ctx context.Context, name string, newParent fusefs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if td, ok := newParent.(*trashDir); ok && !d.v.history {
		return d.renameToTrash(name, td, newName, flags)
	}
	to := asRowDir(newParent)
	if to == nil || !d.v.same(to.v) {
		return syscall.EXDEV
	}
	if d.fs.readOnly(d.v) {
		return syscall.EROFS
	}
	if d.tier != to.tier {
		return syscall.EXDEV
	}
	src, errno := d.renameSource(name, flags)
	if errno != 0 {
		return errno
	}
	dst, err := to.resolve(newName, false)
	if err != nil {
		return d.fs.fail("rename", &to.node, newName, err)
	}
	if dst.isCat {
		return syscall.EISDIR
	}
	if flags&renameNoreplace != 0 && dst.v != nil {
		return syscall.EEXIST
	}
	srcNode, errno := d.flushMoved(name, src.key)
	if errno != 0 {
		return errno
	}
	if src.key == dst.key {
		return 0
	}
	kept, err := d.fs.moveRow(src, dst)
	if err != nil {
		return d.fs.fail("rename", &d.node, name, err)
	}
	if !kept {
		d.fs.retire(src.v.Ino)
	}
	d.leftCategory()
	if dst.v != nil {
		if old := to.childFile(newName, dst.key); old != nil {
			old.detach()
		}
		d.fs.retire(dst.v.Ino)
	}
	if srcNode != nil {
		srcNode.setKey(dst.key)
	}
	// The moved node keeps its inode number, which the file keeps in the replica too; a
	// journal event written from a local file has a number of its own, which a fresh lookup
	// shows.
	parent := to.EmbeddedInode()
	d.fs.later(func() { parent.NotifyEntry(newName) })
	return 0
}

// renameSource resolves the row a rename moves out of d, refusing what no rename moves: an
// exchange, a journal name still being written, a category directory (mv then copies it).
func (d *rowDir) renameSource(name string, flags uint32) (resolved, syscall.Errno) {
	if flags&fusefs.RENAME_EXCHANGE != 0 {
		return resolved{}, syscall.EINVAL
	}
	if d.pendingFile(name) != nil {
		// A created journal name is only a handle on an event still being written.
		return resolved{}, syscall.EROFS
	}
	src, err := d.resolve(name, true)
	if err != nil {
		return resolved{}, d.fs.fail("rename", &d.node, name, err)
	}
	if src.isCat {
		return resolved{}, syscall.EXDEV
	}
	return src, 0
}

// flushMoved stores what was written through an open handle of the file being moved, so that
// the move carries it; it returns the file's node, nil when none is open.
func (d *rowDir) flushMoved(name string, key vault.Key) (*fileNode, syscall.Errno) {
	n := d.childFile(name, key)
	if n == nil {
		return nil, 0
	}
	return n, n.flush("rename")
}

// moveRow moves src onto dst in the backend, keeping the replaced row's attributes (see
// Backend.RenameKeepingAttrs); kept reports whether the file kept its inode number (every move
// but a finished local file moved into journal/, which is appended as an event).
func (f *mountFS) moveRow(src, dst resolved) (kept bool, err error) {
	kept = !(src.key.Tier == seal.TierJournal && src.key.Local && !dst.key.Local)
	return kept, f.b.RenameKeepingAttrs(src.key, dst.key)
}

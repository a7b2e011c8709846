package fs

import (
	"context"
	"syscall"
	"time"

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

// moveRow moves src onto dst in the backend; kept reports whether the file kept its inode
// number (every move but a local file appended to the journal as an event).
func (f *mountFS) moveRow(src, dst resolved) (kept bool, err error) {
	if src.key.Tier == seal.TierJournal && src.key.Local && !dst.key.Local {
		// Moving a finished local file into journal/ appends it as an event.
		content, err := f.b.Content(src.key)
		if err != nil {
			return false, err
		}
		if _, err := f.b.Write(dst.key, content, src.v.Mtime); err != nil {
			return false, err
		}
		return false, f.b.Remove(src.key)
	}
	if err := f.b.Rename(src.key, dst.key); err != nil {
		return false, err
	}
	f.keepAttrs(src, dst)
	if dst.v == nil {
		f.rememberMove(src)
	}
	return true, nil
}

// keepAttrs gives the row a rename replaced its status and meta back when the file moved onto
// it had none: sed -i and write-then-rename saves go through a fresh temporary row, and
// saving a file must not drop its attributes.
func (f *mountFS) keepAttrs(src, dst resolved) {
	if src.key.Local || dst.key.Local || dst.v == nil || !tierHasAttrs(dst.key.Tier) {
		return
	}
	if src.v.Row.Status != nil || src.v.Row.Meta != nil {
		return
	}
	f.applyAttrs(dst.key, dst.v.Row.Status, dst.v.Row.Meta)
}

// applyAttrs sets the non-null ones of status and meta on k; a failure is logged, since the
// change it belongs to has already happened.
func (f *mountFS) applyAttrs(k vault.Key, status, meta *string) {
	for _, a := range []struct {
		name  string
		value *string
	}{{"status", status}, {"meta", meta}} {
		if a.value == nil {
			continue
		}
		if err := f.b.SetAttr(k, a.name, a.value); err != nil {
			f.logf("warn: keeping %s of a renamed %s row: %v", a.name, k.Tier, err)
		}
	}
}

// movedWindow is how long the attributes of a row renamed away are kept for a new file of the
// same name: an editor renames the file to its backup and writes a fresh one at once.
const movedWindow = 10 * time.Second

// movedAttrs are the status and meta of a row renamed to a new name.
type movedAttrs struct {
	status, meta *string
	at           time.Time
}

// rememberMove notes the attributes of a row renamed to a name that did not exist (Emacs
// saves this way by default: file becomes file~, and a fresh file is written).
func (f *mountFS) rememberMove(src resolved) {
	if src.key.Local || !tierHasAttrs(src.key.Tier) || src.v.Row.Status == nil && src.v.Row.Meta == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	for k, m := range f.moved {
		if now.Sub(m.at) > movedWindow {
			delete(f.moved, k)
		}
	}
	f.moved[src.key] = movedAttrs{status: src.v.Row.Status, meta: src.v.Row.Meta, at: now}
}

// restoreMoved gives a newly created row the attributes of the row that left its name moments
// ago.
func (f *mountFS) restoreMoved(k vault.Key) {
	f.mu.Lock()
	m, ok := f.moved[k]
	delete(f.moved, k)
	f.mu.Unlock()
	if !ok || time.Since(m.at) > movedWindow {
		return
	}
	f.applyAttrs(k, m.status, m.meta)
}

package fs

import (
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"kintfs/replica"
)

// Times and modes. What utimensat, futimens, chmod and create set is kept by the replica as
// local attributes of the file (by inode number) or directory: never staged, never anchored,
// never part of a leaf, so setting them starts no flush. The kernel enforces the modes
// (default_permissions). A file without a mode of its own shows MountOptions.FileMode, a
// directory MountOptions.DirMode.

// Default modes of files and directories that were never given one.
const (
	defaultFileMode = 0o644
	defaultDirMode  = 0o755
)

// attrChange is what a setattr asks of times and mode; ok is false when it asks neither.
func attrChange(in *fuse.SetAttrIn) (ch replica.AttrChange, ok bool) {
	if m, set := in.GetMode(); set {
		p := m & 0o777
		ch.Perm, ok = &p, true
	}
	if t, set := in.GetMTime(); set {
		ch.Mtime, ok = &t, true
	}
	if t, set := in.GetATime(); set {
		ch.Atime, ok = &t, true
	}
	return ch, ok
}

// permLocked is the mode of the file as v (nil: not known) has it.
func (n *fileNode) permLocked(v *replica.Version) uint32 {
	if n.v.history {
		return 0o444
	}
	perm := n.fs.opts.FileMode
	if v != nil && v.HasPerm {
		perm = v.Perm
	}
	if n.journalEventLocked() {
		perm &^= 0o222
	}
	return perm
}

// versionTimes sets the times of out: mtime, and v's atime and ctime (v may be nil).
func versionTimes(out *fuse.Attr, v *replica.Version, mtime time.Time) {
	atime, ctime := mtime, mtime
	if v != nil {
		if !v.Atime.IsZero() {
			atime = v.Atime
		}
		if v.Ctime.After(ctime) {
			ctime = v.Ctime
		}
	}
	out.SetTimes(&atime, &mtime, &ctime)
}

// setLocalAttrs keeps the times and mode a setattr sets. An open buffer takes the mtime too,
// so that the write that stores it (cp -a sets times before it closes) carries the time.
func (n *fileNode) setLocalAttrs(in *fuse.SetAttrIn) syscall.Errno {
	ch, ok := attrChange(in)
	if !ok {
		return 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.detached || n.pendingIn != nil {
		return 0 // nothing to keep them on: an unlinked file, an event not yet written
	}
	if _, err := n.fs.b.SetLocalAttrs(n.key, ch); err != nil {
		return n.fs.fail("setattr", &n.node, "", err)
	}
	if n.loaded && ch.Mtime != nil {
		n.mtime = *ch.Mtime
	}
	return 0
}

// liveDirAttr fills the attributes of a live directory numbered ino: its mode (DirMode unless
// one was set) and its times, which the backend keeps the same across restarts.
func (f *mountFS) liveDirAttr(out *fuse.Attr, ino uint64, nlink uint32) {
	la := f.b.DirAttrs(ino)
	perm := f.opts.DirMode
	if la.HasPerm {
		perm = la.Perm
	}
	f.dirAttr(out, ino, nlink, perm)
	out.SetTimes(&la.Atime, &la.Mtime, &la.Ctime)
}

// setDirAttrs keeps the times and mode a setattr sets on a live directory.
func (f *mountFS) setDirAttrs(n *node, ino uint64, in *fuse.SetAttrIn) syscall.Errno {
	ch, ok := attrChange(in)
	if !ok {
		return 0
	}
	if err := f.b.SetDirAttrs(ino, ch); err != nil {
		return f.fail("setattr", n, "", err)
	}
	return 0
}

package fs

import (
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"kintfs/replica/vault"
)

// Times and modes. What utimensat, futimens, chmod and create set is kept by the replica as
// local attributes of the file (by inode number) or directory: never staged, never anchored,
// never part of a leaf, so setting them starts no flush. The kernel enforces the modes
// (default_permissions). A file without a mode of its own shows MountOptions.FileMode, a
// directory MountOptions.DirMode, less MountOptions.Umask; the umask also clears bits of the
// mode a create asked for (kept as asked, so that a later mount's umask applies), but a mode
// set by chmod shows as set: rsync -a and cp -a set the source's modes that way, and must see
// them back.

// Default modes of files and directories that were never given one.
const (
	defaultFileMode = 0o644
	defaultDirMode  = 0o755
)

// attrChange is what a setattr asks of times and mode; ok is false when it asks neither.
func attrChange(in *fuse.SetAttrIn) (ch vault.AttrChange, ok bool) {
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

// permLocked is the mode of the file as v (nil: not known) has it, before the umask; exact
// reports a mode set here, which the umask leaves alone.
func (n *fileNode) permLocked(v *vault.Version) (perm uint32, exact bool) {
	if n.v.history {
		return 0o444, false
	}
	perm = n.fs.opts.FileMode
	if v != nil && v.HasPerm {
		perm, exact = v.Perm, v.Chmod
	}
	if n.b.journalEvent() {
		perm &^= 0o222
	}
	return perm, exact
}

// fileAttrPerm fills the attributes of a regular file whose mode is perm (exact: set here).
func (f *mountFS) fileAttrPerm(out *fuse.Attr, ino uint64, size int64, mtime time.Time, perm uint32, exact bool) {
	f.fileAttr(out, ino, size, mtime, perm)
	if exact {
		out.Mode = out.Mode&^0o7777 | perm
	}
}

// createPerm is the mode a create of mode keeps: its permission bits.
func (f *mountFS) createPerm(mode uint32) uint32 { return mode & 0o777 }

// versionTimes sets the times of out: mtime, and v's atime and ctime (v may be nil).
func versionTimes(out *fuse.Attr, v *vault.Version, mtime time.Time) {
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

// ownerRefused answers a chown: kintfs keeps no owners (every file and directory shows
// MountOptions.UID and GID), so a chown to that owner changes nothing and is accepted (cp -a,
// rsync -a and tar x as that user do it), and any other owner is EPERM.
func (f *mountFS) ownerRefused(in *fuse.SetAttrIn) syscall.Errno {
	if uid, ok := in.GetUID(); ok && uid != f.opts.UID {
		return syscall.EPERM
	}
	if gid, ok := in.GetGID(); ok && gid != f.opts.GID {
		return syscall.EPERM
	}
	return 0
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
	if !n.b.standsFor() {
		return 0 // nothing to keep them on: an unlinked file, an event not yet written
	}
	if _, err := n.fs.b.SetLocalAttrs(n.b.key, ch); err != nil {
		return n.fs.fail("setattr", &n.node, "", err)
	}
	if ch.Mtime != nil {
		n.stepLocked(bufEvent{kind: evSetMtime, mtime: *ch.Mtime})
	}
	return 0
}

// liveDirAttr fills the attributes of a live directory numbered ino: its mode (DirMode unless
// one was set) and its times, which the backend keeps the same across restarts.
func (f *mountFS) liveDirAttr(out *fuse.Attr, ino uint64, nlink uint32) {
	la := f.b.DirAttrs(ino)
	f.dirAttr(out, ino, nlink, f.opts.DirMode)
	switch {
	case la.HasPerm && la.Chmod:
		out.Mode = out.Mode&^0o7777 | la.Perm
	case la.HasPerm:
		out.Mode = out.Mode&^0o7777 | la.Perm&^f.opts.Umask
	}
	out.SetTimes(&la.Atime, &la.Mtime, &la.Ctime)
}

// setDirAttrs keeps the times and mode a setattr sets on a live directory.
func (f *mountFS) setDirAttrs(n *node, ino uint64, in *fuse.SetAttrIn) syscall.Errno {
	if errno := f.ownerRefused(in); errno != 0 {
		return errno
	}
	ch, ok := attrChange(in)
	if !ok {
		return 0
	}
	if err := f.b.SetDirAttrs(ino, ch); err != nil {
		return f.fail("setattr", n, "", err)
	}
	return 0
}

package fs

import (
	"context"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"kintfs/replica/vault"
)

// rootNode is the mount's top directory. It lists exactly the four tiers; .kint and the
// @<block> history views are reachable by name only, so that grep -r, find, backups and
// indexers never walk them.
type rootNode struct {
	node
	fixedDir // fixedShape: EPERM, or EROFS on a read-only mount
}

var (
	_ = (fusefs.NodeLookuper)((*rootNode)(nil))
	_ = (fusefs.NodeReaddirer)((*rootNode)(nil))
	_ = (fusefs.NodeGetattrer)((*rootNode)(nil))
	_ = (fusefs.NodeCreater)((*rootNode)(nil))
	_ = (fusefs.NodeMkdirer)((*rootNode)(nil))
	_ = (fusefs.NodeUnlinker)((*rootNode)(nil))
	_ = (fusefs.NodeRmdirer)((*rootNode)(nil))
	_ = (fusefs.NodeRenamer)((*rootNode)(nil))
	_ = (fusefs.NodeSetattrer)((*rootNode)(nil))
)

// tierNlink is the link count of a directory holding the four tier directories.
const tierNlink = 2 + 4

// rootAttrTimeout keeps the mountpoint's own attributes short-lived: a stat of it is how a
// dead mount is told (ENOTCONN), and the kernel answers from its cache while they last.
const rootAttrTimeout = time.Second

func (r *rootNode) Getattr(ctx context.Context, f fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	r.fs.liveDirAttr(&out.Attr, inoRoot, tierNlink)
	out.SetTimeout(rootAttrTimeout)
	return 0
}

func (r *rootNode) Setattr(ctx context.Context, f fusefs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if r.fs.opts.ReadOnly {
		return syscall.EROFS
	}
	if errno := r.fs.setDirAttrs(&r.node, inoRoot, in); errno != 0 {
		return errno
	}
	return r.Getattr(ctx, f, out)
}

func (r *rootNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	switch {
	case isTier(name):
		return newTierDir(ctx, &r.node, r.fs.live, name, out)
	case name == ".kint":
		return newKintDir(ctx, &r.node, out), 0
	case isTrashName(name):
		if !r.fs.b.HasTrashDir(name) {
			return nil, syscall.ENOENT
		}
		return newTrashDir(ctx, r.EmbeddedInode(), r.fs, name, out), 0
	case len(name) > 1 && name[0] == '@':
		block, tree, errno := r.fs.historyView(name)
		if errno != 0 {
			return nil, errno
		}
		return newHistRoot(ctx, &r.node, block, tree, out), 0
	}
	return nil, syscall.ENOENT
}

func (r *rootNode) Readdir(ctx context.Context) (fusefs.DirStream, syscall.Errno) {
	return fusefs.NewListDirStream(tierEntries(r.fs.live, inoRoot)), 0
}

// tierEntries lists a root: ".", ".." and the tiers, in the order the spec gives them.
func tierEntries(v *view, self uint64) []fuse.DirEntry {
	out := []fuse.DirEntry{
		{Name: ".", Mode: syscall.S_IFDIR, Ino: self},
		{Name: "..", Mode: syscall.S_IFDIR, Ino: inoRoot},
	}
	for _, t := range vault.Tiers {
		out = append(out, fuse.DirEntry{Name: t, Mode: syscall.S_IFDIR, Ino: v.tree.DirIno(t, nil)})
	}
	return out
}

// The root's shape is fixed, but for the trash directories.

func (r *rootNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	if isTrashName(name) && !r.fs.opts.ReadOnly {
		return r.fs.mkTrashDir(ctx, &r.node, name, mode, out)
	}
	return nil, r.fs.fixedShape()
}

func (r *rootNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	if isTrashName(name) && !r.fs.opts.ReadOnly {
		return r.fs.rmTrashDir(&r.node, name)
	}
	return r.fs.fixedShape()
}

// fixedShape is the answer to changing a directory whose entries are fixed.
func (f *mountFS) fixedShape() syscall.Errno {
	if f.opts.ReadOnly {
		return syscall.EROFS
	}
	return syscall.EPERM
}

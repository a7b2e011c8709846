package fs

import (
	"context"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"kintfs/seal"
)

// catDir is one entity category, entity/<category>/, live or under @<block>. Its files are the
// entities of that category; it has no subdirectories.
type catDir struct {
	rowDir
	name string // the category, unescaped
}

var (
	_ = (fusefs.NodeGetxattrer)((*catDir)(nil))
	_ = (fusefs.NodeListxattrer)((*catDir)(nil))
)

// newCatDir makes the node of category cat under the entity directory d, filling out.
func newCatDir(ctx context.Context, d *rowDir, cat string, out *fuse.EntryOut) *fusefs.Inode {
	c := cat
	ino := d.v.tree.DirIno(seal.TierEntity, &c)
	cd := &catDir{rowDir: rowDir{node: node{fs: d.fs}, v: d.v, tier: seal.TierEntity, category: &c, ino: ino}, name: c}
	if d.v.history {
		d.fs.dirAttr(&out.Attr, ino, 2, 0755)
	} else {
		d.fs.liveDirAttr(&out.Attr, ino, 2)
	}
	return d.NewInode(ctx, cd, d.fs.stable(syscall.S_IFDIR, ino))
}

// Getxattr answers user.kint.key, the category's true name (its directory name may be
// escaped or shortened).
func (c *catDir) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if errno, refused := c.fs.xattrRefused(attr); refused {
		return 0, errno
	}
	if attr != xattrKey {
		return 0, fusefs.ENOATTR
	}
	return xattrValue(c.name, dest)
}

func (c *catDir) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	if !c.fs.opts.Xattrs {
		return 0, syscall.ENOSYS
	}
	return xattrList(nil, dest) // user.kint.key is read by name, not copied (see listed)
}

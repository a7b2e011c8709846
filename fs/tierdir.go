package fs

import (
	"context"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// tierDir is one tier: entity/, state/, reference/ or journal/, live or under @<block>.
//
// entity/ holds both the null-category entities and the categories. A category directory
// always keeps its plain name. A null-category entity whose name equals a category's is listed
// as that name with a trailing '%' (entity/person% next to entity/person/); escaping never
// ends a name with a lone '%', so the spelling is unambiguous, and creating entity/name%
// addresses the null-category entity name whether or not the category exists. Without such a
// category, entity/name and entity/name% are the same file. mkdir of a name that a
// null-category entity holds fails with EEXIST, as on any file system.
type tierDir struct {
	rowDir
}

var _ = (fusefs.NodeLookuper)((*tierDir)(nil))

// newTierDir makes the node of a tier directory of view v, filling out.
func newTierDir(ctx context.Context, parent *node, v *view, tier string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	f := parent.fs
	ino := v.tree.DirIno(tier, nil)
	d := &tierDir{rowDir{node: node{fs: f}, v: v, tier: tier, ino: ino}}
	var a fuse.AttrOut
	if errno := d.Getattr(ctx, nil, &a); errno != 0 {
		return nil, errno
	}
	out.Attr = a.Attr
	entryTimeouts(v, out)
	return parent.NewInode(ctx, d, f.stable(syscall.S_IFDIR, ino)), 0
}

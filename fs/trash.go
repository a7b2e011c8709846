package fs

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"kintfs/replica/vault"
)

// The trash, as file managers expect it (the freedesktop trash specification): MNT/.Trash-$UID,
// made on demand by mkdir, with files/ and info/ (and whatever else a trash implementation
// makes there, such as gvfs's expunged/). It is local to this machine and never anchored; the
// root does not list it, so grep -r, find and backups of the mount never walk it.
//
// A row moved into a directory of the trash is deleted from the vault at the next flush; its
// content, status and meta stay here. Moving it back out (what "Restore" does) brings the
// row back; deleting it ("Empty Trash") frees the local copy, and the row's history stays
// under @<block>/. Files keep their inode number, times and mode through both moves.

// trashDir is a directory of the trash: a top one (.Trash-1000), holding directories only,
// or one inside it, holding files.
type trashDir struct {
	node
	path string // ".Trash-1000" or ".Trash-1000/files"
	ino  uint64
}

var (
	_ = (fusefs.NodeLookuper)((*trashDir)(nil))
	_ = (fusefs.NodeGetattrer)((*trashDir)(nil))
	_ = (fusefs.NodeSetattrer)((*trashDir)(nil))
	_ = (fusefs.NodeReaddirer)((*trashDir)(nil))
	_ = (fusefs.NodeMkdirer)((*trashDir)(nil))
	_ = (fusefs.NodeRmdirer)((*trashDir)(nil))
	_ = (fusefs.NodeCreater)((*trashDir)(nil))
	_ = (fusefs.NodeUnlinker)((*trashDir)(nil))
	_ = (fusefs.NodeRenamer)((*trashDir)(nil))
)

// isTrashName reports whether a name of the root is a trash directory: .Trash-<uid>.
func isTrashName(name string) bool {
	digits, ok := strings.CutPrefix(name, ".Trash-")
	if !ok || digits == "" || len(digits) > 10 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (d *trashDir) top() bool { return !strings.Contains(d.path, "/") }

// newTrashDir makes the node of the trash directory path under parent, filling out.
func newTrashDir(ctx context.Context, parent *fusefs.Inode, f *mountFS, path string, out *fuse.EntryOut) *fusefs.Inode {
	p := path
	ino := f.b.DirIno(vault.TrashTier, &p)
	td := &trashDir{node: node{fs: f}, path: path, ino: ino}
	var a fuse.AttrOut
	td.Getattr(ctx, nil, &a)
	out.Attr = a.Attr
	return parent.NewInode(ctx, td, f.stable(syscall.S_IFDIR, ino))
}

func (d *trashDir) key(name string) vault.Key {
	return vault.Key{Tier: vault.TrashTier, Category: d.path, HasCategory: true, Key: name, Local: true}
}

func (d *trashDir) Getattr(ctx context.Context, f fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	nlink := uint32(2)
	if d.top() {
		if list, err := d.fs.b.TrashList(d.path); err == nil {
			nlink += uint32(len(list))
		}
	}
	d.fs.liveDirAttr(&out.Attr, d.ino, nlink)
	return 0
}

func (d *trashDir) Setattr(ctx context.Context, f fusefs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if d.fs.opts.ReadOnly {
		return syscall.EROFS
	}
	if errno := d.fs.setDirAttrs(&d.node, d.ino, in); errno != 0 {
		return errno
	}
	return d.Getattr(ctx, f, out)
}

func (d *trashDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	if d.top() {
		if !d.fs.b.HasTrashDir(d.path + "/" + name) {
			noNegative(out) // the trash is small: nothing to gain
			return nil, syscall.ENOENT
		}
		return newTrashDir(ctx, d.EmbeddedInode(), d.fs, d.path+"/"+name, out), 0
	}
	k := d.key(name)
	v, err := d.fs.b.Get(k)
	if err != nil {
		noNegative(out)
		return nil, d.fs.fail("lookup", &d.node, name, err)
	}
	return d.child(ctx, name, k, v, out)
}

// child is the file node for name, as rowDir.child makes it.
func (d *trashDir) child(ctx context.Context, name string, k vault.Key, v *vault.Version, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	if fn := d.childFile(name, k); fn != nil && fn.StableAttr().Ino == v.Ino {
		if errno := fn.attr(&out.Attr); errno != 0 {
			return nil, errno
		}
		return fn.EmbeddedInode(), 0
	}
	fn := newFileNode(d.fs, d.fs.live, k)
	fn.versionAttr(&out.Attr, v)
	return d.NewInode(ctx, fn, d.fs.stable(syscall.S_IFREG, v.Ino)), 0
}

func (d *trashDir) childFile(name string, k vault.Key) *fileNode {
	ch := d.GetChild(name)
	if ch == nil {
		return nil
	}
	fn, ok := ch.Operations().(*fileNode)
	if !ok || !fn.is(k) {
		return nil
	}
	return fn
}

func (d *trashDir) Readdir(ctx context.Context) (fusefs.DirStream, syscall.Errno) {
	list, err := d.fs.b.TrashList(d.path)
	if err != nil {
		return nil, d.fs.fail("readdir", &d.node, "", err)
	}
	out := make([]fuse.DirEntry, 0, len(list))
	for _, e := range list {
		mode := uint32(syscall.S_IFREG)
		if e.Dir {
			mode = syscall.S_IFDIR
		}
		out = append(out, fuse.DirEntry{Name: e.Name, Mode: mode, Ino: e.Ino})
	}
	return fusefs.NewListDirStream(out), 0
}

func (d *trashDir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	if d.fs.opts.ReadOnly {
		return nil, syscall.EROFS
	}
	if !d.top() {
		return nil, syscall.EPERM // the trash keeps files, not directories
	}
	return d.fs.mkTrashDir(ctx, &d.node, d.path+"/"+name, mode, out)
}

// mkTrashDir makes the trash directory path with mode, under the node at.
func (f *mountFS) mkTrashDir(ctx context.Context, at *node, path string, mode uint32, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	if err := f.b.TrashMkdir(path); err != nil {
		return nil, f.fail("mkdir", at, path, err)
	}
	p := path
	perm := f.createPerm(mode)
	if err := f.b.SetDirAttrs(f.b.DirIno(vault.TrashTier, &p), vault.AttrChange{Perm: &perm, Create: true}); err != nil {
		return nil, f.fail("mkdir", at, path, err)
	}
	return newTrashDir(ctx, at.EmbeddedInode(), f, path, out), 0
}

func (d *trashDir) Rmdir(ctx context.Context, name string) syscall.Errno {
	if d.fs.opts.ReadOnly {
		return syscall.EROFS
	}
	if !d.top() {
		return syscall.ENOTDIR
	}
	return d.fs.rmTrashDir(&d.node, d.path+"/"+name)
}

func (f *mountFS) rmTrashDir(at *node, path string) syscall.Errno {
	if err := f.b.TrashRmdir(path); err != nil {
		return f.fail("rmdir", at, path, err)
	}
	p := path
	f.retire(f.b.DirIno(vault.TrashTier, &p))
	return 0
}

func (d *trashDir) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fusefs.Inode, fusefs.FileHandle, uint32, syscall.Errno) {
	if d.fs.opts.ReadOnly {
		return nil, nil, 0, syscall.EROFS
	}
	if d.top() {
		return nil, nil, 0, syscall.EPERM
	}
	k := d.key(name)
	v, err := d.fs.b.Get(k)
	var fn *fileNode
	switch {
	case err == nil:
		if flags&syscall.O_EXCL != 0 {
			return nil, nil, 0, syscall.EEXIST
		}
		fn = d.childFile(name, k)
	case errors.Is(err, vault.ErrNotFound):
		if v, err = d.fs.b.Create(k, d.fs.createPerm(mode), time.Now()); err != nil {
			return nil, nil, 0, d.fs.fail("create", &d.node, name, err)
		}
	default:
		return nil, nil, 0, d.fs.fail("create", &d.node, name, err)
	}
	var ch *fusefs.Inode
	if fn != nil {
		ch = fn.EmbeddedInode()
	} else {
		fn = newFileNode(d.fs, d.fs.live, k)
		ch = d.NewInode(ctx, fn, d.fs.stable(syscall.S_IFREG, v.Ino))
	}
	fh, fflags, errno := fn.open(flags, v, false)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if errno := fn.attr(&out.Attr); errno != 0 {
		return nil, nil, 0, errno
	}
	return ch, fh, fflags, 0
}

// Unlink frees the local copy of a trashed file.
func (d *trashDir) Unlink(ctx context.Context, name string) syscall.Errno {
	if d.fs.opts.ReadOnly {
		return syscall.EROFS
	}
	if d.top() {
		return syscall.ENOENT
	}
	k := d.key(name)
	v, err := d.fs.b.Get(k)
	if err == nil {
		err = d.fs.b.Remove(k)
	}
	if err != nil {
		return d.fs.fail("unlink", &d.node, name, err)
	}
	if fn := d.childFile(name, k); fn != nil {
		fn.detach()
	}
	d.fs.retire(v.Ino)
	return 0
}

// Rename moves a trashed file within the trash, or out of it: a rename into a tier restores
// the row.
func (d *trashDir) Rename(ctx context.Context, name string, newParent fusefs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if d.fs.opts.ReadOnly {
		return syscall.EROFS
	}
	if flags&fusefs.RENAME_EXCHANGE != 0 {
		return syscall.EINVAL
	}
	if d.top() {
		return syscall.EXDEV // a directory of the trash itself
	}
	from := d.key(name)
	src, err := d.fs.b.Get(from)
	if err != nil {
		return d.fs.fail("rename", &d.node, name, err)
	}
	to, dstDir, errno := d.renameTarget(newParent, newName)
	if errno != 0 {
		return errno
	}
	if from == to {
		return 0
	}
	dst, err := d.fs.b.Get(to)
	switch {
	case err == nil && flags&renameNoreplace != 0:
		return syscall.EEXIST
	case err != nil && !errors.Is(err, vault.ErrNotFound):
		return d.fs.fail("rename", &d.node, name, err)
	}
	srcNode := d.childFile(name, from)
	if srcNode != nil {
		if errno := srcNode.flush("rename"); errno != 0 {
			return errno
		}
	}
	if err := d.fs.b.Rename(from, to); err != nil {
		return d.fs.fail("rename", &d.node, name, err)
	}
	if srcNode != nil {
		srcNode.setKey(to)
	}
	if dst != nil && dst.Ino != src.Ino {
		if old := dstDir.childFile(newName, to); old != nil {
			old.detach()
		}
		d.fs.retire(dst.Ino)
	}
	return 0
}

// childFiler is a directory that holds file nodes: a row directory or a trash directory.
type childFiler interface {
	childFile(string, vault.Key) *fileNode
}

// renameTarget is the key a rename out of d onto newName in newParent moves to: in the trash,
// or a row of the live tree (restored).
func (d *trashDir) renameTarget(newParent fusefs.InodeEmbedder, newName string) (vault.Key, childFiler, syscall.Errno) {
	if t, ok := newParent.(*trashDir); ok {
		if t.top() {
			return vault.Key{}, nil, syscall.EPERM
		}
		return t.key(newName), t, 0
	}
	rd := asRowDir(newParent)
	if rd == nil || rd.v.history {
		return vault.Key{}, nil, syscall.EXDEV
	}
	r, err := rd.resolve(newName, false)
	if err != nil {
		return vault.Key{}, nil, d.fs.fail("rename", &rd.node, newName, err)
	}
	if r.isCat {
		return vault.Key{}, nil, syscall.EISDIR
	}
	return r.key, rd, 0
}

// renameToTrash moves a row (or a local file) of d into the trash directory td: the row is
// deleted from the vault at the next flush and kept here.
func (d *rowDir) renameToTrash(name string, td *trashDir, newName string, flags uint32) syscall.Errno {
	if d.fs.opts.ReadOnly {
		return syscall.EROFS
	}
	if td.top() {
		return syscall.EPERM
	}
	src, errno := d.renameSource(name, flags)
	if errno != 0 {
		return errno
	}
	to := td.key(newName)
	dst, err := d.fs.b.Get(to)
	switch {
	case err == nil && flags&renameNoreplace != 0:
		return syscall.EEXIST
	case err != nil && !errors.Is(err, vault.ErrNotFound):
		return d.fs.fail("rename", &td.node, newName, err)
	}
	srcNode, errno := d.flushMoved(name, src.key)
	if errno != 0 {
		return errno
	}
	if err := d.fs.b.Rename(src.key, to); err != nil {
		return d.fs.fail("rename", &d.node, name, err)
	}
	if dst != nil && dst.Ino != src.v.Ino {
		if old := td.childFile(newName, to); old != nil {
			old.detach()
		}
		d.fs.retire(dst.Ino)
	}
	if srcNode != nil {
		srcNode.setKey(to)
	}
	d.leftCategory()
	return 0
}

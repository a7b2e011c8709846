package fs

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// rowDir is what a tier directory and an entity category share: a directory of rows, live or
// under @<block>. Names map to keys through EscapeName; names starting with '.' are local files.
type rowDir struct {
	node
	v        *view
	tier     string
	category *string // the category this directory is; nil for a tier directory
	ino      uint64

	// journal/ only: created names whose files are still open (see journal.go).
	pmu     sync.Mutex
	pending map[string]*fileNode
}

var (
	_ = (fusefs.NodeLookuper)((*rowDir)(nil))
	_ = (fusefs.NodeGetattrer)((*rowDir)(nil))
	_ = (fusefs.NodeSetattrer)((*rowDir)(nil))
	_ = (fusefs.NodeOpendirHandler)((*rowDir)(nil))
	_ = (fusefs.NodeCreater)((*rowDir)(nil))
	_ = (fusefs.NodeMknoder)((*rowDir)(nil))
	_ = (fusefs.NodeUnlinker)((*rowDir)(nil))
	_ = (fusefs.NodeRenamer)((*rowDir)(nil))
	_ = (fusefs.NodeMkdirer)((*rowDir)(nil))
	_ = (fusefs.NodeRmdirer)((*rowDir)(nil))
)

// entityRoot reports whether d is entity/ itself, the one directory holding categories.
func (d *rowDir) entityRoot() bool { return d.tier == seal.TierEntity && d.category == nil }

// resolved is what a name in a row directory stands for.
type resolved struct {
	key   vault.Key
	isCat bool
	cat   string
	v     *vault.Version // the row as it stands; nil when it does not exist yet
}

// parseName reads a name literally, without asking whether the row exists.
func (d *rowDir) parseName(name string) (resolved, error) {
	n, err := parseRowName(name, d.entityRoot())
	if err != nil {
		return resolved{}, err
	}
	if d.entityRoot() && !n.local && !n.collided && d.v.tree.HasCategory(n.key) {
		return resolved{isCat: true, cat: n.key}, nil
	}
	return resolved{key: vault.Key{Tier: d.tier, Key: n.key, Local: n.local}.InCategory(d.category)}, nil
}

// resolve finds what name stands for. With existing, a missing row is ErrNotFound, and a
// shortened name is looked for in the listing; without, a missing row is a name to create.
func (d *rowDir) resolve(name string, existing bool) (resolved, error) {
	r, err := d.parseName(name)
	if err != nil {
		// a name that escapes no key can still be a local-only file ("~$50%.docx")
		if lr, ok, lerr := d.resolveLocal(name, vault.Key{}, existing); ok {
			return lr, lerr
		}
		return r, err
	}
	if r.isCat {
		return r, err
	}
	v, err := d.v.tree.Get(r.key)
	if err == nil {
		r.v = v
		return r, nil
	}
	if !errors.Is(err, vault.ErrNotFound) {
		return r, err
	}
	if lr, ok, err := d.resolveLocal(name, r.key, existing); err != nil || ok {
		return lr, err
	}
	if existing && d.maybeShort(name) {
		if sr, ok, err := d.findShort(name); err != nil || ok {
			return sr, err
		}
	}
	if existing {
		return r, err
	}
	return r, nil
}

// resolveLocal finds whether name, which no row has, is a local-only file: one kept under
// a local-only rule before (whatever the rules say now), or, unless existing, a new name a
// rule matches (existing: ErrNotFound). Rows come first: a rule never hides a row, staged or
// anchored, of the same name.
func (d *rowDir) resolveLocal(name string, row vault.Key, existing bool) (resolved, bool, error) {
	if d.v.history || row.Local || d.tier == seal.TierJournal {
		return resolved{}, false, nil
	}
	k := vault.Key{Tier: d.tier, Key: name, Local: true}.InCategory(d.category)
	v, err := d.v.tree.Get(k)
	switch {
	case err == nil:
		return resolved{key: k, v: v}, true, nil
	case !errors.Is(err, vault.ErrNotFound):
		return resolved{}, false, err
	}
	if d.fs.b.LocalRule(localPath(k)) != "" {
		if existing {
			return resolved{key: k}, true, vault.ErrNotFound
		}
		return resolved{key: k}, true, nil
	}
	return resolved{}, false, nil
}

// maybeShort reports whether name may be a shortened name, the '%' of a collided name aside.
func (d *rowDir) maybeShort(name string) bool { return shortRowName(name, d.entityRoot()) }

// findShort finds the entry whose shortened name is name.
func (d *rowDir) findShort(name string) (resolved, bool, error) {
	list, err := d.entries()
	if err != nil {
		return resolved{}, false, err
	}
	for _, e := range list {
		if e.name != name {
			continue
		}
		if e.d.Dir {
			return resolved{isCat: true, cat: e.d.Name}, true, nil
		}
		r := resolved{key: vault.Key{Tier: d.tier, Key: e.d.Name, Local: e.d.Local}.InCategory(d.category)}
		r.v, err = d.v.tree.Get(r.key)
		return r, err == nil, err
	}
	return resolved{}, false, nil
}

// rowNames are the names the rows of list are shown under, for a local file of the same name.
func rowNames(list []vault.Dirent, cats map[string]bool) map[string]bool {
	names := map[string]bool{}
	for _, e := range list {
		switch {
		case e.Local || e.Dir:
		case cats[EscapeName(e.Name)]:
			names[collidedName(e.Name)] = true
		default:
			names[EscapeName(e.Name)] = true
		}
	}
	return names
}

// dirEntry is one listed entry: the name shown and the replica's entry.
type dirEntry struct {
	name string
	d    vault.Dirent
}

// entries lists d with the names the mount shows, sorted by name. In entity/, a null-category
// entity whose name a category has taken is shown with a trailing '%'.
func (d *rowDir) entries() ([]dirEntry, error) {
	list, err := d.v.tree.List(d.tier, d.category)
	if err != nil {
		return nil, err
	}
	cats := map[string]bool{}
	if d.entityRoot() {
		for _, e := range list {
			if e.Dir {
				cats[EscapeName(e.Name)] = true
			}
		}
	}
	out := make([]dirEntry, 0, len(list))
	var rows map[string]bool // the names rows take, once a local file a row could collide with is listed
	for _, e := range list {
		if e.Local && rows == nil && !isLocalName(e.Name) && d.tier != vault.TrashTier {
			rows = rowNames(list, cats)
		}
		var name string
		switch {
		case e.Local:
			// A conflict copy of a long key can pass NAME_MAX too.
			name = fitName(e.Name, e.Name, maxName)
		case !e.Dir && cats[EscapeName(e.Name)]:
			name = collidedName(e.Name)
		default:
			name = EscapeName(e.Name)
		}
		if e.Local && rows[name] {
			// a row another machine anchored under a local-only file's name: the row is what
			// the name opens, and the local file waits, unlisted, until the row is gone
			continue
		}
		out = append(out, dirEntry{name: name, d: e})
	}
	sortEntries(out)
	return out, nil
}

func (d *rowDir) Getattr(ctx context.Context, f fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	nlink := uint32(2)
	if d.entityRoot() {
		cats, err := d.v.tree.CategoryCount()
		if err != nil {
			return d.fs.fail("getattr", &d.node, "", err)
		}
		nlink += uint32(cats)
	}
	if d.v.history {
		d.fs.dirAttr(&out.Attr, d.ino, nlink, 0755)
	} else {
		d.fs.liveDirAttr(&out.Attr, d.ino, nlink)
	}
	attrTimeout(d.v, out)
	return 0
}

// Setattr keeps the times and mode of a directory as local attributes: a directory has no row.
func (d *rowDir) Setattr(ctx context.Context, f fusefs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if d.fs.readOnly(d.v) {
		return syscall.EROFS
	}
	if errno := d.fs.setDirAttrs(&d.node, d.ino, in); errno != 0 {
		return errno
	}
	return d.Getattr(ctx, f, out)
}

func (d *rowDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	if p := d.pendingFile(name); p != nil {
		if errno := p.attr(&out.Attr); errno != 0 {
			return nil, errno
		}
		return p.EmbeddedInode(), 0
	}
	r, err := d.resolve(name, true)
	if errors.Is(err, vault.ErrNotFound) && !d.v.history {
		waited, errno := d.fs.waitCurrent(ctx)
		if errno != 0 {
			return nil, errno
		}
		if waited {
			r, err = d.resolve(name, true) // the start-up pull may have brought it
		}
	}
	if errors.Is(err, errBadName) && d.tier == seal.TierJournal && !d.v.history {
		// Any name can be created in journal/; the event then takes its content key.
		err = vault.ErrNotFound
	}
	if err != nil {
		errno := d.fs.fail("lookup", &d.node, name, err)
		if !d.cacheListing() {
			noNegative(out)
		}
		return nil, errno
	}
	return d.child(ctx, name, r, out)
}

// noNegative keeps the kernel from remembering that a name does not exist, in a directory
// where names come in no call on them (a category in entity/, an event's content key in
// journal/). Any entry timeout set on ENOENT makes go-fuse answer it as an error, which the
// kernel does not keep.
func noNegative(out *fuse.EntryOut) {
	out.SetEntryTimeout(time.Nanosecond)
}

// child is the node for a resolved name: the one the kernel already has when it still stands
// for the same row under the row's own number, else a new one (a node renamed onto the name
// keeps its old number, and stays only for the descriptors open on it).
func (d *rowDir) child(ctx context.Context, name string, r resolved, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	entryTimeouts(d.v, out)
	if r.isCat {
		return newCatDir(ctx, d, r.cat, out), 0
	}
	if fn := d.childFile(name, r.key); fn != nil && fn.StableAttr().Ino == r.v.Ino {
		if errno := fn.attr(&out.Attr); errno != 0 {
			return nil, errno
		}
		return fn.EmbeddedInode(), 0
	}
	fn := newFileNode(d.fs, d.v, r.key)
	fn.versionAttr(&out.Attr, r.v)
	return d.NewInode(ctx, fn, d.fs.stable(syscall.S_IFREG, r.v.Ino)), 0
}

// childFile is the file node the tree holds under name when it still stands for key.
func (d *rowDir) childFile(name string, key vault.Key) *fileNode {
	ch := d.GetChild(name)
	if ch == nil {
		return nil
	}
	fn, ok := ch.Operations().(*fileNode)
	if !ok || !fn.is(key) {
		return nil
	}
	return fn
}

func (d *rowDir) OpendirHandle(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	if !d.v.history {
		// a listing during the start-up pull lists what it brings
		if _, errno := d.fs.waitCurrent(ctx); errno != 0 {
			return nil, 0, errno
		}
	}
	h := &dirHandle{d: d}
	var fflags uint32
	if d.cacheListing() {
		fflags = fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
	}
	return h, fflags, 0
}

// cacheListing reports whether the kernel may keep d's listing across opendirs, and the names
// that do not exist in it. It drops them by
// itself when a change goes through it in d; a pull drops it with a notification (see
// invalidate). entity/ and journal/ are left out: a category comes or goes with the rows in
// it, and a new event takes its content key when written, changes made in no call on them.
func (d *rowDir) cacheListing() bool {
	return d.v.history || (!d.entityRoot() && d.tier != seal.TierJournal)
}

func (d *rowDir) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fusefs.Inode, fusefs.FileHandle, uint32, syscall.Errno) {
	if d.fs.readOnly(d.v) {
		return nil, nil, 0, syscall.EROFS
	}
	if d.tier == seal.TierJournal && !isLocalName(name) {
		return d.createPending(ctx, name, flags, out)
	}
	r, err := d.resolve(name, false)
	if err != nil {
		return nil, nil, 0, d.fs.fail("create", &d.node, name, err)
	}
	if r.isCat {
		return nil, nil, 0, syscall.EISDIR
	}
	fn := (*fileNode)(nil)
	created := r.v == nil
	if r.v != nil {
		if flags&syscall.O_EXCL != 0 {
			return nil, nil, 0, syscall.EEXIST
		}
		fn = d.childFile(name, r.key)
	} else {
		// Written at once, empty: the file exists and is listed from create on, durable from
		// its first close, fsync or rename (or any later change) on.
		v, err := d.fs.b.Create(r.key, d.fs.createPerm(mode), time.Now())
		if err != nil {
			return nil, nil, 0, d.fs.fail("create", &d.node, name, err)
		}
		r.v = v
	}
	var ch *fusefs.Inode
	if fn != nil {
		ch = fn.EmbeddedInode()
	} else {
		fn = newFileNode(d.fs, d.v, r.key)
		ch = d.NewInode(ctx, fn, d.fs.stable(syscall.S_IFREG, r.v.Ino))
	}
	fh, fflags, errno := fn.open(flags, r.v, created)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if created {
		fflags = newFileFlags(flags, fflags)
	}
	if errno := fn.attr(&out.Attr); errno != 0 {
		return nil, nil, 0, errno
	}
	return ch, fh, fflags, 0
}

// Mknod makes an empty regular file, as a create without an open does: tar --xattrs makes a
// file this way to set its attributes before it writes the content. Other kinds of node have
// no place in a vault.
func (d *rowDir) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	switch {
	case d.fs.readOnly(d.v):
		return nil, syscall.EROFS
	case mode&syscall.S_IFMT != syscall.S_IFREG && mode&syscall.S_IFMT != 0:
		return nil, syscall.EPERM
	case d.tier == seal.TierJournal && !isLocalName(name):
		return nil, syscall.EPERM // an event is its content, written through an open file
	}
	r, err := d.resolve(name, false)
	if err != nil {
		return nil, d.fs.fail("mknod", &d.node, name, err)
	}
	if r.isCat || r.v != nil {
		return nil, syscall.EEXIST
	}
	v, err := d.fs.b.Create(r.key, d.fs.createPerm(mode), time.Now())
	if err == nil {
		err = d.fs.b.Sync() // no close follows to make it durable
	}
	if err != nil {
		return nil, d.fs.fail("mknod", &d.node, name, err)
	}
	fn := newFileNode(d.fs, d.v, r.key)
	ch := d.NewInode(ctx, fn, d.fs.stable(syscall.S_IFREG, v.Ino))
	if errno := fn.attr(&out.Attr); errno != 0 {
		return nil, errno
	}
	return ch, 0
}

func (d *rowDir) Unlink(ctx context.Context, name string) syscall.Errno {
	if d.fs.readOnly(d.v) {
		return syscall.EROFS
	}
	if d.dropPendingName(name) {
		return 0
	}
	r, err := d.resolve(name, true)
	if err != nil {
		return d.fs.fail("unlink", &d.node, name, err)
	}
	if r.isCat {
		return syscall.EISDIR
	}
	if err := d.fs.b.Remove(r.key); err != nil {
		return d.fs.fail("unlink", &d.node, name, err)
	}
	// A node still open on the old row writes nowhere, and the number makes fresh nodes.
	if fn := d.childFile(name, r.key); fn != nil {
		fn.detach()
	}
	d.fs.retire(r.v.Ino)
	d.leftCategory()
	return 0
}

// leftCategory tells the kernel when the last row leaving a category took the category with
// it (one exists while it has rows or was made by mkdir): its entry in entity/ would
// otherwise stand for as long as the kernel keeps entries.
func (d *rowDir) leftCategory() {
	if d.category == nil || d.v.history || d.v.tree.HasCategory(*d.category) {
		return
	}
	name, parent := d.Parent()
	if parent == nil {
		return
	}
	d.fs.later(func() {
		parent.NotifyEntry(name)
		parent.NotifyContent(0, 0)
	})
}

func (d *rowDir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	if d.fs.readOnly(d.v) {
		return nil, syscall.EROFS
	}
	if !d.entityRoot() || isLocalName(name) {
		// Categories are the only directories, and they live in entity/.
		return nil, syscall.EPERM
	}
	cat, err := UnescapeName(name)
	if err == nil {
		err = d.fs.b.Mkdir(cat)
	}
	if err != nil {
		return nil, d.fs.fail("mkdir", &d.node, name, err)
	}
	entryTimeouts(d.v, out)
	return newCatDir(ctx, d, cat, out), 0
}

func (d *rowDir) Rmdir(ctx context.Context, name string) syscall.Errno {
	if d.fs.readOnly(d.v) {
		return syscall.EROFS
	}
	if !d.entityRoot() {
		return syscall.ENOTDIR
	}
	r, err := d.resolve(name, true)
	if err != nil {
		return d.fs.fail("rmdir", &d.node, name, err)
	}
	if !r.isCat {
		return syscall.ENOTDIR
	}
	if err := d.fs.b.Rmdir(r.cat); err != nil {
		return d.fs.fail("rmdir", &d.node, name, err)
	}
	d.fs.retire(d.v.tree.DirIno(seal.TierEntity, &r.cat))
	return 0
}

// asRowDir is the row directory behind a node, or nil for the root, .kint and history roots.
func asRowDir(n fusefs.InodeEmbedder) *rowDir {
	switch t := n.(type) {
	case *tierDir:
		return &t.rowDir
	case *catDir:
		return &t.rowDir
	case *rowDir:
		return t
	}
	return nil
}

package fs

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"kintfs/replica/vault"
)

// histRoot is @<block>/: the tree as anchored at or before a block, read-only. Any decimal
// block number is accepted, not only those of epochs; the root lists none of them. Nothing
// under it ever changes, so the kernel may cache it for long, and every change is EROFS.
type histRoot struct {
	node
	fixedDir // EROFS
	v        *view
}

var (
	_ = (fusefs.NodeLookuper)((*histRoot)(nil))
	_ = (fusefs.NodeReaddirer)((*histRoot)(nil))
	_ = (fusefs.NodeGetattrer)((*histRoot)(nil))
	_ = (fusefs.NodeSetattrer)((*histRoot)(nil))
	_ = (fusefs.NodeCreater)((*histRoot)(nil))
	_ = (fusefs.NodeMkdirer)((*histRoot)(nil))
	_ = (fusefs.NodeUnlinker)((*histRoot)(nil))
	_ = (fusefs.NodeRmdirer)((*histRoot)(nil))
	_ = (fusefs.NodeRenamer)((*histRoot)(nil))
)

// historyView resolves the name of a history root, @<block> or @<time> (RFC 3339 in UTC with
// a Z), to a block and its tree, which the engine refuses when this machine does not hold its
// history. Like a block past the head, a time past the newest epoch shows the newest state.
func (f *mountFS) historyView(name string) (uint64, TreeReader, syscall.Errno) {
	arg := name[1:]
	block, err := strconv.ParseUint(arg, 10, 64)
	if err != nil || arg[0] == '+' {
		t, terr := time.Parse(time.RFC3339, arg)
		if terr != nil || !strings.HasSuffix(arg, "Z") {
			return 0, nil, syscall.ENOENT
		}
		if block, err = f.b.BlockAt(t); err != nil {
			return 0, nil, f.refuseHistory(name, err)
		}
	}
	tree, err := f.b.HistoryView(block)
	if err != nil {
		return 0, nil, f.refuseHistory(name, err)
	}
	return block, tree, 0
}

// refuseHistory answers a lookup of @<block> that this machine cannot show truthfully:
// ENODATA, and one log line for each block asked for (up to a bound) naming the way out.
func (f *mountFS) refuseHistory(name string, err error) syscall.Errno {
	if !errors.Is(err, vault.ErrHistoryIncomplete) {
		return f.fail("lookup", nil, name, err)
	}
	f.mu.Lock()
	first := !f.refused[name] && len(f.refused) < 256
	if first {
		f.refused[name] = true
	}
	f.mu.Unlock()
	if first {
		f.logf("%s: %v", name, err)
	}
	return syscall.ENODATA
}

func newHistRoot(ctx context.Context, parent *node, block uint64, tree TreeReader, out *fuse.EntryOut) *fusefs.Inode {
	f := parent.fs
	h := &histRoot{node: node{fs: f}, fixedDir: fixedDir{syscall.EROFS}, v: &view{tree: tree, history: true, block: block}}
	f.dirAttr(&out.Attr, inoHistory, tierNlink, 0755)
	entryTimeouts(h.v, out)
	// One inode number for all history roots; the block tells them apart.
	return parent.NewInode(ctx, h, fusefs.StableAttr{Mode: syscall.S_IFDIR, Ino: inoHistory, Gen: block})
}

func (h *histRoot) Getattr(ctx context.Context, f fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	h.fs.dirAttr(&out.Attr, inoHistory, tierNlink, 0755)
	attrTimeout(h.v, out)
	return 0
}

func (h *histRoot) Setattr(ctx context.Context, f fusefs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return syscall.EROFS
}

func (h *histRoot) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	if !isTier(name) {
		return nil, syscall.ENOENT
	}
	return newTierDir(ctx, &h.node, h.v, name, out)
}

func (h *histRoot) Readdir(ctx context.Context) (fusefs.DirStream, syscall.Errno) {
	return fusefs.NewListDirStream(tierEntries(h.v, inoHistory)), 0
}

// Rename is EXDEV, not EROFS: mv then copies out of the history view, which it may.
func (h *histRoot) Rename(ctx context.Context, name string, newParent fusefs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return syscall.EXDEV
}

package fs

import (
	"context"
	"log"
	"path"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// Inode numbers of the nodes the mount makes up itself. The replica hands out row and directory
// numbers from 100 up (and history numbers from 2^56), so these never meet one of its own.
const (
	inoRoot     = 1
	inoKint     = 2
	inoCtl      = 3
	inoStatus   = 4
	inoBlocks   = 5
	inoHistory  = 6 // every @<block> root; the block is its generation
	inoRequests = 7
)

// mountFS is the state one mount shares between its nodes.
type mountFS struct {
	b       Backend
	opts    MountOptions
	log     *log.Logger
	started time.Time
	live    *view
	root    *rootNode

	// ctx lives as long as the mount; ctl commands run under it, not under the request's
	// context, which the kernel cancels on any signal the writer receives.
	ctx      context.Context
	cancel   context.CancelFunc
	stopOnce sync.Once

	mu   sync.Mutex
	gens map[uint64]uint64 // bumped when a node stops standing for its row (rename, unlink)
	// refused are the @<block> names refused for missing history and logged once
	refused map[string]bool

	inv   invalidator
	files fileNodes
	// head is the block of the newest epoch applied, as of the last change told (see changed)
	head atomic.Uint64
	// times are the requests answered, with MountOptions.TimeRequests; nil without
	times *requestTimes
}

// view is one tree: the live one, or a history view under @<block>.
type view struct {
	tree    vault.TreeReader
	history bool
	block   uint64
}

func (v *view) same(o *view) bool {
	return v.history == o.history && (!v.history || v.block == o.block)
}

func newMountFS(b Backend, o MountOptions) *mountFS {
	f := &mountFS{
		b:       b,
		opts:    o,
		log:     o.Logger,
		started: time.Now(),
		live:    &view{tree: b},
		gens:    map[uint64]uint64{},
		refused: map[string]bool{},
	}
	if o.TimeRequests {
		f.times = &requestTimes{}
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.inv.init()
	f.root = &rootNode{node: node{fs: f}, fixedDir: fixedDir{f.fixedShape()}}
	return f
}

// stop ends the mount's background work; it is safe to call more than once.
func (f *mountFS) stop() {
	f.stopOnce.Do(func() {
		f.cancel()
		f.inv.stop()
	})
}

// readOnly reports whether changes under v are refused with EROFS.
func (f *mountFS) readOnly(v *view) bool { return v.history || f.opts.ReadOnly }

// stable is the identity of a node. go-fuse merges nodes with equal identities, so a number
// that stops standing for a node's row (rename, unlink) gets a new generation.
func (f *mountFS) stable(mode uint32, ino uint64) fusefs.StableAttr {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fusefs.StableAttr{Mode: mode, Ino: ino, Gen: f.gens[ino]}
}

// retire gives ino a new generation: later lookups make a fresh node for it.
func (f *mountFS) retire(ino uint64) {
	f.mu.Lock()
	f.gens[ino]++
	f.mu.Unlock()
}

// dirAttr fills the attributes of a directory.
func (f *mountFS) dirAttr(out *fuse.Attr, ino uint64, nlink uint32, perm uint32) {
	out.Ino = ino
	out.Mode = syscall.S_IFDIR | perm&^f.opts.Umask
	out.Nlink = nlink
	out.Size = 4096
	f.owner(out)
	out.SetTimes(nil, &f.started, &f.started)
}

// fileAttr fills the attributes of a regular file.
func (f *mountFS) fileAttr(out *fuse.Attr, ino uint64, size int64, mtime time.Time, perm uint32) {
	out.Ino = ino
	out.Mode = syscall.S_IFREG | perm&^f.opts.Umask
	out.Nlink = 1
	if size > 0 {
		out.Size = uint64(size)
	}
	f.owner(out)
	out.SetTimes(&mtime, &mtime, &mtime)
}

func (f *mountFS) owner(out *fuse.Attr) {
	out.Uid, out.Gid = f.opts.UID, f.opts.GID
	out.Blksize = 4096
	out.Blocks = (out.Size + 511) / 512 // du and sparse-file checks read it
}

// entryTimeouts sets the kernel's cache times for one lookup answer.
func entryTimeouts(v *view, out *fuse.EntryOut) {
	if v != nil && v.history {
		out.SetEntryTimeout(historyTimeout)
		out.SetAttrTimeout(historyTimeout)
	}
}

func attrTimeout(v *view, out *fuse.AttrOut) {
	if v != nil && v.history {
		out.SetTimeout(historyTimeout)
	}
}

// node is what every node of the tree shares.
type node struct {
	fusefs.Inode
	fs *mountFS
}

var _ = (fusefs.NodeStatfser)((*node)(nil))

// Statfs answers with generous made-up numbers: df and tools that check for room or for
// NAME_MAX must not see zeros.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	const blocks = 1 << 30
	out.Bsize, out.Frsize = 4096, 4096
	out.Blocks, out.Bfree, out.Bavail = blocks, blocks, blocks
	out.Files, out.Ffree = 1<<32, 1<<32
	out.NameLen = maxName
	return 0
}

// where is the path of name under n, for log lines.
func (n *node) where(name string) string {
	p := "/" + n.Path(nil)
	if name != "" {
		p = path.Join(p, name)
	}
	return p
}

// isTier reports whether s names a tier directory.
func isTier(s string) bool {
	for _, t := range vault.Tiers {
		if t == s {
			return true
		}
	}
	return false
}

// tierHasAttrs reports whether rows of a tier carry status and meta.
func tierHasAttrs(tier string) bool { return tier != seal.TierJournal }

// waitCurrent waits, while the start-up pull runs, for it to end (at most currentWait); it
// reports whether it waited, so that a lookup that missed looks again. A request interrupted
// while it waits (a signal to the caller) gets EINTR: the kernel restarts the call once the
// signal is handled, and it waits again, where an answer from a pull half done would say a
// row that is coming does not exist.
func (f *mountFS) waitCurrent(ctx context.Context) (waited bool, errno syscall.Errno) {
	c := f.opts.Current
	if c == nil {
		return false, 0
	}
	select {
	case <-c:
		return false, 0
	default:
	}
	t := time.NewTimer(currentWait)
	defer t.Stop()
	select {
	case <-c:
	case <-t.C:
	case <-ctx.Done():
		return true, syscall.EINTR
	case <-f.ctx.Done():
	}
	return true, 0
}

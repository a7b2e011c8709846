package fs

import (
	"sync/atomic"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
)

// DefaultMaxCachedFiles is how many file nodes a mount keeps by default (MountOptions.MaxCachedFiles).
const DefaultMaxCachedFiles = 20000

// fileNodes counts the file nodes go-fuse holds: one for each file whose name the kernel
// caches, kept until the kernel forgets it. The kernel forgets only under memory pressure, so
// after a find or grep -r over the whole tree every file of the vault would keep a node (about
// 460 bytes with go-fuse's own tables). Past the bound, the mount has the kernel drop the names
// of idle files (closed, nothing unsaved) until a quarter of the bound is free again: their
// nodes go, and a later use looks them up again (one round trip each).
type fileNodes struct {
	live    atomic.Int64 // nodes made less nodes forgotten; set to the count a prune walked
	next    atomic.Int64 // the count from which a node made starts a prune (0: the bound)
	pruning atomic.Bool
}

// maxCachedFiles is the bound in force; zero or less is none.
func (f *mountFS) maxCachedFiles() int64 {
	switch n := f.opts.MaxCachedFiles; {
	case n == 0:
		return DefaultMaxCachedFiles
	case n < 0:
		return 0
	default:
		return int64(n)
	}
}

// fileNodeMade counts a new file node and starts a prune once the bound is passed (and, after
// a prune that found too few idle files, once a quarter of the bound more were made).
func (f *mountFS) fileNodeMade() {
	max := f.maxCachedFiles()
	n := f.files.live.Add(1)
	if max > 0 && n > max && n >= f.files.next.Load() && f.files.pruning.CompareAndSwap(false, true) {
		go f.prune(max)
	}
}

// OnForget: the kernel forgot the file (or go-fuse dropped the node); a LOOKUP may revive
// it, which the next prune's count corrects.
func (n *fileNode) OnForget() { n.fs.files.live.Add(-1) }

// pruneSettle is how long a prune waits after its notifications for the kernel's FORGETs,
// before another may start.
const pruneSettle = 100 * time.Millisecond

// prune has the kernel drop idle files' names, a round at a time, until the nodes are within
// max or no round finds one to drop.
func (f *mountFS) prune(max int64) {
	for f.pruneRound(max) > 0 {
		// the kernel forgets what it dropped while the round's notifications settle
		f.settle()
		time.Sleep(pruneSettle)
		if f.files.live.Load() <= max {
			break
		}
	}
	f.files.next.Store(f.files.live.Load() + max/4)
	f.files.pruning.Store(false)
}

// pruneRound counts the file nodes by walking the tree and, past max, has the kernel drop the
// names of idle files until a quarter of max would be free; it returns how many it dropped.
// A category whose files are all idle goes whole, first: the kernel forgets the directory with
// its files, and go-fuse frees its table of children with it, which dropping the files one by
// one leaves at its largest (about 100 bytes a file it ever held). The notifications go
// through the invalidation goroutine: sent from here while a request holds a directory, they
// could wait on it.
func (f *mountFS) pruneRound(max int64) int {
	type entry struct {
		dir   *fusefs.Inode
		name  string
		files int64 // the file nodes it takes with it: 1, or a category's
	}
	var idleDirs, idleFiles []entry
	var count int64
	var walk func(dir *fusefs.Inode) (files int64, allIdle bool)
	walk = func(dir *fusefs.Inode) (files int64, allIdle bool) {
		allIdle = true
		var idle []entry
		for name, ch := range dir.Children() {
			if ch.IsDir() {
				n, whole := walk(ch)
				if _, isCat := ch.Operations().(*catDir); isCat && whole && n > 0 {
					idleDirs = append(idleDirs, entry{dir, name, n})
				}
				allIdle = false // only a directory of files goes whole
				continue
			}
			fn, ok := ch.Operations().(*fileNode)
			if !ok {
				allIdle = false
				continue
			}
			files++
			if fn.idle() {
				idle = append(idle, entry{dir, name, 1})
			} else {
				allIdle = false
			}
		}
		count += files
		if !allIdle {
			idleFiles = append(idleFiles, idle...)
		}
		return files, allIdle
	}
	walk(f.root.EmbeddedInode())
	f.files.live.Store(count)
	drop := count - max*3/4
	if drop <= 0 {
		return 0
	}
	var chosen []entry
	dropped := 0
	for _, e := range append(idleDirs, idleFiles...) {
		if drop <= 0 {
			break
		}
		chosen = append(chosen, e)
		drop -= e.files
		dropped += int(e.files)
	}
	f.later(func() {
		for _, e := range chosen {
			e.dir.NotifyEntry(e.name)
		}
	})
	return dropped
}

// idle reports whether nothing of the file lives only in its node: no open handle, no
// unsaved content, no new journal event waiting for its name.
func (n *fileNode) idle() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.b.opens == 0 && n.b.phase != bufDirty && n.pending == nil
}

package fs

import (
	"sync"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// invalidator runs kernel cache invalidations on a goroutine of its own. A notification
// waits on the kernel, which may be waiting on a FUSE request in turn; sent from inside a
// handler, or while holding a lock a handler needs, it deadlocks. Queuing never blocks, so
// the replica's Subscribe callback can call it from wherever it runs.
type invalidator struct {
	mu      sync.Mutex
	queue   []func()
	stopped bool
	started bool
	wake    chan struct{}
	done    chan struct{}
}

func (v *invalidator) init() {
	v.wake = make(chan struct{}, 1)
	v.done = make(chan struct{})
}

// later queues fn to run on the invalidation goroutine.
func (f *mountFS) later(fn func()) {
	v := &f.inv
	v.mu.Lock()
	if v.stopped {
		v.mu.Unlock()
		return
	}
	v.queue = append(v.queue, fn)
	v.mu.Unlock()
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

func (f *mountFS) startInvalidator() {
	v := &f.inv
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.started || v.stopped {
		return
	}
	v.started = true
	go v.run()
}

func (v *invalidator) run() {
	for {
		select {
		case <-v.done:
			return
		case <-v.wake:
		}
		v.mu.Lock()
		q := v.queue
		v.queue = nil
		v.mu.Unlock()
		for _, fn := range q {
			fn()
		}
	}
}

// settleTimeout bounds how long a command waits for the kernel to take its invalidations.
const settleTimeout = 10 * time.Second

// settle waits until the invalidations queued so far have run (or settleTimeout passed): a
// command that changed rows returns only once the kernel no longer holds their old pages,
// attributes and names, so that the very next read sees the change.
func (f *mountFS) settle() {
	v := &f.inv
	done := make(chan struct{})
	v.mu.Lock()
	if v.stopped || !v.started {
		v.mu.Unlock()
		return
	}
	v.queue = append(v.queue, func() { close(done) })
	v.mu.Unlock()
	select {
	case v.wake <- struct{}{}:
	default:
	}
	select {
	case <-done:
	case <-v.done:
	case <-time.After(settleTimeout):
	}
}

func (v *invalidator) stop() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.stopped {
		v.stopped = true
		v.queue = nil
		close(v.done)
	}
}

// changed is the Subscribe callback: an epoch (pulled, or this machine's own flush) changed
// these rows.
func (f *mountFS) changed(keys []vault.Key) {
	keys = append([]vault.Key(nil), keys...)
	f.later(func() {
		prev := f.head.Load()
		f.noteHead()
		f.invalidate(keys)
		f.invalidateHistory(prev)
	})
}

// noteHead records the block of the newest epoch applied.
func (f *mountFS) noteHead() {
	if h, err := f.b.MirrorHead(); err == nil {
		f.head.Store(h.Block)
	}
}

// invalidateHistory drops what the kernel holds under the history roots an epoch may have
// changed: @<block> at or past prev, the head before it, shows the newest state there was, and
// @<time> past the newest epoch resolves to its block. Those under prev never change.
func (f *mountFS) invalidateHistory(prev uint64) {
	root := f.root.EmbeddedInode()
	for name, ch := range root.Children() {
		if h, ok := ch.Operations().(*histRoot); ok && h.v.block >= prev {
			dropSubtree(ch)
			root.NotifyEntry(name) // its names, the ones that do not exist included
		}
	}
}

// dropSubtree drops the pages, attributes and listings the kernel keeps of every node under in.
func dropSubtree(in *fusefs.Inode) {
	for _, ch := range in.Children() {
		if fn, ok := ch.Operations().(*fileNode); ok {
			fn.invalidate()
		}
		ch.NotifyContent(0, 0)
		dropSubtree(ch)
	}
}

// invalidate drops what the kernel caches about changed rows: the pages and attributes of
// files it holds, the buffers of files open here that hold no unsaved change, names that came
// or went (so the next access looks them up again), and the listings of the directories they
// are in. A name that still stands for the same file keeps its entry: dropping it would show
// an open file or a shell's working directory as deleted. A file whose row is the one its
// pages were read or written as (the same leaf: the same body and fields) keeps its pages, so
// a file just flushed is read again from the page cache; its attributes are dropped all the
// same. Only the live tree changes.
func (f *mountFS) invalidate(keys []vault.Key) {
	root := f.root.EmbeddedInode()
	dirs := map[*fusefs.Inode]bool{}
	for _, k := range keys {
		dir := root.GetChild(k.Tier)
		if dir == nil {
			continue
		}
		if k.Tier == seal.TierEntity && k.HasCategory {
			catName := EscapeName(k.Category)
			cat := dir.GetChild(catName)
			if cat == nil || !f.live.tree.HasCategory(k.Category) {
				dir.NotifyEntry(catName)
				dirs[dir] = true // entity/'s link count counts its categories
			}
			if cat == nil {
				continue
			}
			dir = cat
		}
		dirs[dir] = true
		var names []string
		switch {
		case k.Local:
			names = []string{fitName(k.Key, k.Key, maxName)}
		case k.Tier == seal.TierEntity && !k.HasCategory:
			names = []string{EscapeName(k.Key), collidedName(k.Key)}
		default:
			names = []string{EscapeName(k.Key)}
		}
		v, err := f.live.tree.Get(k)
		for _, name := range names {
			ch := dir.GetChild(name)
			if ch == nil {
				dir.NotifyEntry(name)
				continue
			}
			fn, ok := ch.Operations().(*fileNode)
			if ok && err == nil && v.Ino == ch.StableAttr().Ino && fn.holds(v.Leaf) {
				// the same row as the kernel's pages hold (this machine's own flush anchored
				// what it wrote): the pages stay, only the attributes are read again
				ch.NotifyContent(-1, 0)
				continue
			}
			if ok {
				fn.invalidate()
			}
			ch.NotifyContent(0, 0)
			if err != nil || v.Ino != ch.StableAttr().Ino {
				dir.NotifyEntry(name)
			}
		}
	}
	for dir := range dirs {
		dir.NotifyContent(0, 0) // its listing, when the kernel keeps it
	}
}

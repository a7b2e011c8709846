package fs

import (
	"errors"
	"kintfs/replica/vault"
	"syscall"
	"time"

	"kintfs/seal"
)

// The content of an open file is a fileBuffer: one state (what the content is, what it belongs
// to, how many handles hold it) whose transitions all live in step. Every request on a file
// is an event given to step under the node's lock; step reads and writes the row through
// bufferIO, and returns what the node has to do besides (refuse, log, drop the kernel's pages,
// forget a journal event's created name). Nothing in it waits on anything but bufferIO.

// bufPhase is what the buffer holds.
type bufPhase uint8

const (
	bufUnloaded bufPhase = iota // nothing: the content is the row's, read on first use
	bufClean                    // the row's content, as stored
	bufStale                    // the row's content as it was before a pull changed it: read again before use
	bufDirty                    // changed here and not yet handed to the backend
)

// bufBinding is what the content belongs to.
type bufBinding uint8

const (
	bindRow       bufBinding = iota // the row (or local file) of key
	bindEvent                       // a new journal event under its created name, until its last release
	bindGone                        // unlinked or replaced: the content goes nowhere
	bindGoneEvent                   // a new event unlinked before its last release: goes nowhere, its name is forgotten at release
)

// bufferIO is what a buffer needs from the backend: reading the row and storing it.
type bufferIO interface {
	Get(k vault.Key) (*vault.Version, error)
	Content(k vault.Key) ([]byte, error)
	Read(k vault.Key) (*vault.Version, []byte, error) // Get and Content in one lookup
	Write(k vault.Key, content []byte, mtime time.Time) (*vault.Version, error)
}

// fileBuffer is the state of one file's content, shared by all its handles. Every file node
// of a mount holds one, open or not, so what a closed file needs stays small: the content and
// its mtime live in a bufData allocated when the file is loaded and dropped with it at the last
// release (or a discard). The leaf stays: it decides whether the next open keeps the kernel's
// pages.
type fileBuffer struct {
	key  vault.Key
	leaf [32]byte // the leaf the kernel's page cache holds, for FOPEN_KEEP_CACHE
	*bufData
	opens   int32
	bind    bufBinding
	phase   bufPhase
	history bool // a file of a history view: read-only, and the kernel keeps its pages
	// opened is set by an open for writing and cleared by the next request on the file. The
	// kernel (without atomic O_TRUNC, which go-fuse does not offer) sends open(O_TRUNC) as an
	// open followed by a truncate to 0 that names no handle; that truncate then cuts the
	// open buffer like one through the handle, and is stored at close, so a write that is
	// refused afterwards (EFBIG) leaves the file as it was.
	opened bool
	leafOK bool
	// heldLater: the last store made an empty row that will not be anchored, before the last
	// close; it is said at the last release if the row is still held then.
	heldLater bool
}

// bufData is the content of a loaded buffer: non-nil exactly while the phase is not
// bufUnloaded.
type bufData struct {
	buf   []byte
	mtime time.Time
}

// hold gives the buffer its bufData, before the content is set.
func (b *fileBuffer) hold() {
	if b.bufData == nil {
		b.bufData = &bufData{}
	}
}

// unload drops the content: the next use reads the row again.
func (b *fileBuffer) unload() { b.bufData, b.phase = nil, bufUnloaded }

// bufEventKind is a request on the file, or something that happened to its row.
type bufEventKind uint8

const (
	evOpen       bufEventKind = iota + 1 // write, trunc; v: the row's version when the caller has it
	evRead                               // dest, off
	evWrite                              // data, off, now
	evTruncate                           // size, viaHandle, now
	evFlush                              // flush, fsync, or a rename storing the buffer first
	evRelease                            // the release of a handle
	evSetMtime                           // mtime: a setattr of the times, kept locally by the node
	evInvalidate                         // a pull changed the row
	evDetach                             // unlinked or replaced
	evRebind                             // key: renamed
)

type bufEvent struct {
	kind         bufEventKind
	write, trunc bool
	v            *vault.Version
	dest, data   []byte
	off, size    int64
	viaHandle    bool
	now, mtime   time.Time
	key          vault.Key
	created      bool // evOpen: v was just created, empty, by this open
}

// bufResult is what a step tells the node.
type bufResult struct {
	errno   syscall.Errno  // a refusal
	journal bool           // errno is the refusal of a change to a journal event
	err     error          // the backend failed
	keep    bool           // evOpen: the kernel may keep its pages
	n       int            // evRead, evWrite: bytes read or written
	held    *vault.Version // a version just stored that will not be anchored: say so now
	dropped bool           // unsaved changes were dropped: the kernel's pages must go too
	forget  bool           // the last release of a new event: forget its created name
}

func (b *fileBuffer) loaded() bool    { return b.phase != bufUnloaded }
func (b *fileBuffer) gone() bool      { return b.bind == bindGone || b.bind == bindGoneEvent }
func (b *fileBuffer) isEvent() bool   { return b.bind == bindEvent || b.bind == bindGoneEvent }
func (b *fileBuffer) standsFor() bool { return b.bind == bindRow }

// journalEvent reports whether the file is an anchored-or-staged journal event, which never
// changes.
func (b *fileBuffer) journalEvent() bool {
	return b.key.Tier == seal.TierJournal && !b.key.Local && !b.isEvent()
}

// step applies one event: the only place the buffer's state changes.
func (b *fileBuffer) step(io bufferIO, ev bufEvent) (r bufResult) {
	switch ev.kind {
	case evOpen:
		if (ev.write || ev.trunc) && b.journalEvent() {
			return bufResult{errno: syscall.EPERM, journal: true}
		}
		keep, v, err := b.noteLeaf(io, ev.v)
		if err != nil {
			return bufResult{err: err}
		}
		switch {
		case ev.trunc:
			keep = false
			b.hold()
			b.buf, b.phase, b.mtime = b.buf[:0], bufDirty, ev.now
		case b.gone() && !b.loaded():
			return bufResult{errno: syscall.ENOENT}
		case !ev.write && !b.loaded():
			// Loaded on the first read that reaches us: with the kernel keeping its pages, a
			// warm read never does, and grep opens many files it reads from the page cache.
		case ev.created && !b.loaded():
			b.hold() // empty: nothing to read back
			b.buf, b.phase, b.mtime = b.buf[:0], bufClean, v.Mtime
		case !b.loaded() || b.phase == bufStale:
			if err := b.load(io, v); err != nil {
				return bufResult{err: err}
			}
		}
		b.opens++
		b.opened = ev.write
		return bufResult{keep: keep}
	case evRead:
		b.opened = false
		if err := b.fresh(io); err != nil {
			return bufResult{err: err}
		}
		if ev.off >= int64(len(b.buf)) {
			return bufResult{}
		}
		return bufResult{n: copy(ev.dest, b.buf[ev.off:])}
	case evWrite:
		b.opened = false
		end := ev.off + int64(len(ev.data))
		if ev.off < 0 || end > maxFileSize {
			return bufResult{errno: syscall.EFBIG, dropped: b.discard()}
		}
		if err := b.fresh(io); err != nil {
			return bufResult{err: err}
		}
		if end > int64(len(b.buf)) {
			b.buf = resize(b.buf, end)
		}
		copy(b.buf[ev.off:], ev.data)
		b.phase, b.mtime = bufDirty, ev.now
		return bufResult{n: len(ev.data)}
	case evTruncate:
		openTrunc := b.opened && ev.size == 0 && b.loaded() && b.opens > 0
		b.opened = false
		if ev.size > maxFileSize {
			return bufResult{errno: syscall.EFBIG}
		}
		if b.journalEvent() {
			return bufResult{errno: syscall.EPERM, journal: true}
		}
		if !b.loaded() {
			if b.gone() {
				return bufResult{errno: syscall.ENOENT}
			}
			// A closed file: read, cut, write back at once.
			content, err := io.Content(b.key)
			if err != nil {
				return bufResult{err: err}
			}
			v, err := io.Write(b.key, resize(content, ev.size), ev.now)
			if err != nil {
				return bufResult{err: err}
			}
			b.leaf, b.leafOK = v.Leaf, false
			return bufResult{held: heldOf(v)}
		}
		// a stale buffer is read again first: what is cut is the row as a pull left it
		if err := b.fresh(io); err != nil {
			return bufResult{err: err}
		}
		b.buf = resize(b.buf, ev.size)
		b.phase, b.mtime = bufDirty, ev.now
		if ev.viaHandle || openTrunc || b.isEvent() {
			return bufResult{}
		}
		return b.store(io)
	case evFlush:
		b.opened = false
		return b.sayHeldLater(b.store(io))
	case evRelease:
		b.opens--
		if b.opens > 0 {
			return bufResult{}
		}
		r = b.store(io)
		if b.heldLater && r.held == nil && r.err == nil {
			if v, err := io.Get(b.key); err == nil {
				r.held = heldOf(v)
			}
		}
		b.heldLater = false
		b.unload()
		switch b.bind {
		case bindEvent:
			b.bind, r.forget = bindRow, true
		case bindGoneEvent:
			b.bind, r.forget = bindGone, true
		}
		return r
	case evSetMtime:
		if b.loaded() {
			b.mtime = ev.mtime
		}
	case evInvalidate:
		if b.phase == bufClean {
			b.phase = bufStale
		}
	case evDetach:
		switch b.bind {
		case bindRow:
			b.bind = bindGone
		case bindEvent:
			b.bind = bindGoneEvent
		}
	case evRebind:
		b.key = ev.key
	}
	return bufResult{}
}

// holds reports whether the kernel's pages and the buffer hold the row of leaf, with no change
// of their own, for a file that still stands for its row.
func (b *fileBuffer) holds(leaf [32]byte) bool {
	return b.leafOK && b.leaf == leaf && b.phase != bufDirty && b.phase != bufStale && b.standsFor()
}

// noteLeaf records the leaf of the row as it stands (v, read when nil) and reports whether
// the kernel may keep its pages: when the row is the one they were read from. A history
// view always may; a new event, a gone or a history file is not looked up, and v is then
// returned as given.
func (b *fileBuffer) noteLeaf(io bufferIO, v *vault.Version) (keep bool, _ *vault.Version, _ error) {
	if !b.standsFor() || b.history {
		return b.history, v, nil
	}
	if v == nil {
		var err error
		if v, err = io.Get(b.key); err != nil {
			return false, nil, err
		}
	}
	keep = b.leafOK && v.Leaf == b.leaf && b.phase != bufDirty && b.phase != bufStale
	b.leaf, b.leafOK = v.Leaf, true
	return keep, v, nil
}

// fresh reloads a buffer a pull made stale, or loads one opened for reading only.
func (b *fileBuffer) fresh(io bufferIO) error {
	if !b.loaded() || b.phase == bufStale {
		return b.load(io, nil)
	}
	return nil
}

// load reads the row into the buffer. A stale buffer whose row has gone keeps its content:
// an open file reads on after the row disappears, as on any file system.
func (b *fileBuffer) load(io bufferIO, v *vault.Version) error {
	var content []byte
	var err error
	if v == nil {
		v, content, err = io.Read(b.key)
	} else {
		content, err = io.Content(b.key)
	}
	if err != nil {
		if b.phase == bufStale {
			b.phase = bufClean
			return nil
		}
		return err
	}
	b.hold()
	b.buf, b.phase, b.mtime = content, bufClean, v.Mtime
	return nil
}

// discard drops the unsaved changes of a file a write tried to take past maxFileSize: the
// file is left as it was last stored (an empty file, for a new one), not cut at the limit.
// It reports whether there were any: the kernel's cached pages and size go with them.
func (b *fileBuffer) discard() bool {
	if b.phase != bufDirty {
		return false
	}
	if b.standsFor() {
		b.unload()
	} else {
		b.buf, b.phase = b.buf[:0], bufClean
	}
	b.leafOK = false
	return true
}

// store hands a changed buffer that still belongs to a row to the backend; once it returns
// the change is durable.
func (b *fileBuffer) store(io bufferIO) bufResult {
	if b.phase != bufDirty || b.gone() {
		return bufResult{}
	}
	if b.isEvent() && len(b.buf) == 0 {
		// A new event nothing was written to yet: the shell's close of the descriptor it
		// duplicated, before echo writes. There is nothing to append.
		return bufResult{}
	}
	v, err := io.Write(b.key, b.buf, b.mtime)
	if errors.Is(err, vault.ErrKeptInvalid) {
		b.phase = bufClean // kept as a local file, which the error names: not dropped
	}
	if err != nil {
		return bufResult{err: err}
	}
	b.phase = bufClean
	b.leaf, b.leafOK = v.Leaf, true
	if b.isEvent() {
		// The event now lives under its content key.
		b.key = v.Key
	}
	b.heldLater = false
	return bufResult{held: heldOf(v)}
}

// heldOf is v when it will not be anchored, nil otherwise.
func heldOf(v *vault.Version) *vault.Version {
	if v.Held != "" && !v.Key.Local {
		return v
	}
	return nil
}

// sayHeldLater keeps for the last release the news of an empty row held by a store before it.
// The shell's `echo '{}' > f` opens f, moves the descriptor and closes the first one: that
// close stores the file empty, and an empty entity body is not JSON yet. The write that
// follows makes it so.
func (b *fileBuffer) sayHeldLater(r bufResult) bufResult {
	if r.held != nil && len(b.buf) == 0 && b.opens > 0 {
		r.held, b.heldLater = nil, true
	}
	return r
}

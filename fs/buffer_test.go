package fs

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"kintfs/replica/vault"
	"math/rand"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"kintfs/seal"
)

// The file buffer's state machine without a mount: fakeRows is the part of the backend a
// buffer uses (bufferIO), kept in a map.

type fakeRow struct {
	content []byte
	mtime   time.Time
}

type fakeRows struct {
	rows     map[string]fakeRow
	failNext error // the next Write fails with it (and stores nothing, or keeps a local copy for vault.ErrKeptInvalid)
	writes   int
	reads    int // Content calls
}

func newFakeRows() *fakeRows { return &fakeRows{rows: map[string]fakeRow{}} }

func fakeID(k vault.Key) string { return k.Tier + "/" + k.Key }

// version is the version of a row; an entity whose body is not JSON is held, as the store's is.
func (f *fakeRows) version(k vault.Key, r fakeRow) *vault.Version {
	v := &vault.Version{Key: k, Size: int64(len(r.content)), Mtime: r.mtime, Leaf: sha256.Sum256(r.content)}
	if k.Tier == seal.TierEntity && !json.Valid(r.content) {
		v.Held = "not JSON"
	}
	return v
}

func (f *fakeRows) Get(k vault.Key) (*vault.Version, error) {
	r, ok := f.rows[fakeID(k)]
	if !ok {
		return nil, vault.ErrNotFound
	}
	return f.version(k, r), nil
}

func (f *fakeRows) Content(k vault.Key) ([]byte, error) {
	f.reads++
	r, ok := f.rows[fakeID(k)]
	if !ok {
		return nil, vault.ErrNotFound
	}
	return bytes.Clone(r.content), nil
}

func (f *fakeRows) Read(k vault.Key) (*vault.Version, []byte, error) {
	v, err := f.Get(k)
	if err != nil {
		return nil, nil, err
	}
	content, err := f.Content(k)
	return v, content, err
}

// Write stores content; a journal event is stored under a key made of its content, as the
// replica's content key is.
func (f *fakeRows) Write(k vault.Key, content []byte, mtime time.Time) (*vault.Version, error) {
	if err := f.failNext; err != nil {
		f.failNext = nil
		return nil, err
	}
	f.writes++
	if k.Tier == seal.TierJournal {
		k = vault.Key{Tier: k.Tier, Key: fmt.Sprintf("ev-%x", sha256.Sum256(content))[:11]}
	}
	r := fakeRow{content: bytes.Clone(content), mtime: mtime}
	f.rows[fakeID(k)] = r
	return f.version(k, r), nil
}

func (f *fakeRows) put(k vault.Key, content string, mtime time.Time) {
	f.rows[fakeID(k)] = fakeRow{content: []byte(content), mtime: mtime}
}

func (f *fakeRows) content(k vault.Key) string { return string(f.rows[fakeID(k)].content) }

// bufT drives one buffer through events.
type bufT struct {
	t   *testing.T
	io  *fakeRows
	b   *fileBuffer
	now time.Time
}

func newBufT(t *testing.T, k vault.Key, content string) *bufT {
	io := newFakeRows()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if content != "" {
		io.put(k, content, now)
	}
	return &bufT{t: t, io: io, b: &fileBuffer{key: k}, now: now}
}

func (bt *bufT) step(ev bufEvent) bufResult {
	bt.now = bt.now.Add(time.Second)
	if ev.now.IsZero() {
		ev.now = bt.now
	}
	return bt.b.step(bt.io, ev)
}

// ok steps and fails the test on any refusal or failure.
func (bt *bufT) ok(what string, ev bufEvent) bufResult {
	bt.t.Helper()
	r := bt.step(ev)
	if r.errno != 0 || r.err != nil {
		bt.t.Fatalf("%s: errno %v, err %v", what, r.errno, r.err)
	}
	return r
}

func (bt *bufT) read() string {
	bt.t.Helper()
	dest := make([]byte, 1<<10)
	r := bt.ok("read", bufEvent{kind: evRead, dest: dest})
	return string(dest[:r.n])
}

func (bt *bufT) write(off int64, s string) {
	bt.t.Helper()
	bt.ok("write", bufEvent{kind: evWrite, off: off, data: []byte(s)})
}

var rowA = vault.Key{Tier: seal.TierState, Key: "a"}

// open(O_TRUNC) arrives as an open and a truncate to 0 naming no handle: the truncate is
// kept in the buffer, so a write refused with EFBIG afterwards leaves the file as stored.
func TestBufferOpenTruncThenTooBig(t *testing.T) {
	bt := newBufT(t, rowA, "kept")
	bt.ok("open", bufEvent{kind: evOpen, write: true})
	bt.ok("truncate", bufEvent{kind: evTruncate, size: 0})
	if got := bt.io.content(rowA); got != "kept" {
		t.Fatalf("the truncate after open(O_TRUNC) was stored at once: %q", got)
	}
	r := bt.step(bufEvent{kind: evWrite, off: maxFileSize - 1, data: []byte("xy")})
	if r.errno != syscall.EFBIG || !r.dropped {
		t.Fatalf("write past the limit: %+v, want EFBIG dropping the changes", r)
	}
	bt.ok("flush", bufEvent{kind: evFlush})
	bt.ok("release", bufEvent{kind: evRelease})
	if got := bt.io.content(rowA); got != "kept" || bt.io.writes != 0 {
		t.Fatalf("after a refused write: %q (%d writes), want the file as it was", got, bt.io.writes)
	}
	if r := bt.step(bufEvent{kind: evTruncate, size: maxFileSize + 1}); r.errno != syscall.EFBIG {
		t.Fatalf("truncate past the limit: %+v", r)
	}
}

// A truncate naming no handle on an open file is stored at once; one through the handle at
// the next flush; one on a closed file is read, cut and stored.
func TestBufferTruncate(t *testing.T) {
	bt := newBufT(t, rowA, "0123456789")
	bt.ok("closed truncate", bufEvent{kind: evTruncate, size: 4})
	if got := bt.io.content(rowA); got != "0123" || bt.b.loaded() {
		t.Fatalf("closed truncate: %q, loaded %v", got, bt.b.loaded())
	}
	bt.ok("open", bufEvent{kind: evOpen, write: true})
	bt.write(4, "45")
	bt.ok("path truncate", bufEvent{kind: evTruncate, size: 5})
	if got := bt.io.content(rowA); got != "01234" {
		t.Fatalf("a truncate by path of an open file: stored %q", got)
	}
	bt.ok("ftruncate", bufEvent{kind: evTruncate, size: 2, viaHandle: true})
	if got := bt.io.content(rowA); got != "01234" {
		t.Fatalf("ftruncate stored before the flush: %q", got)
	}
	bt.ok("fsync", bufEvent{kind: evFlush})
	if got := bt.io.content(rowA); got != "01" || bt.b.phase != bufClean {
		t.Fatalf("after fsync: %q, phase %d", got, bt.b.phase)
	}
}

// A pull that changes the row makes a clean buffer stale: the next read, write or truncate
// reads the row again. A dirty buffer is not touched: its close stores it over the pull.
func TestBufferStale(t *testing.T) {
	bt := newBufT(t, rowA, "old")
	bt.ok("open", bufEvent{kind: evOpen})
	if got := bt.read(); got != "old" {
		t.Fatalf("read %q", got)
	}
	bt.io.put(rowA, "pulled", bt.now)
	bt.ok("invalidate", bufEvent{kind: evInvalidate})
	if bt.b.phase != bufStale {
		t.Fatalf("phase %d after a pull, want stale", bt.b.phase)
	}
	if got := bt.read(); got != "pulled" {
		t.Fatalf("read after a pull %q", got)
	}
	bt.io.put(rowA, "pulled again", bt.now)
	bt.ok("invalidate", bufEvent{kind: evInvalidate})
	bt.ok("path truncate", bufEvent{kind: evTruncate, size: 6})
	if got := bt.io.content(rowA); got != "pulled" {
		t.Fatalf("truncate of a stale buffer stored %q, want the pulled row cut", got)
	}
	bt.ok("open for writing", bufEvent{kind: evOpen, write: true})
	bt.write(0, "W")
	bt.io.put(rowA, "another pull", bt.now)
	bt.ok("invalidate", bufEvent{kind: evInvalidate})
	if bt.b.phase != bufDirty {
		t.Fatalf("a pull made a dirty buffer %d", bt.b.phase)
	}
	bt.ok("flush", bufEvent{kind: evFlush})
	if got := bt.io.content(rowA); got != "Wulled" {
		t.Fatalf("stored %q, want the write over what it read", got)
	}
	// the row goes away under a stale buffer: an open file reads on
	bt.ok("invalidate", bufEvent{kind: evInvalidate})
	delete(bt.io.rows, fakeID(rowA))
	if got := bt.read(); got != "Wulled" {
		t.Fatalf("read after the row went: %q", got)
	}
}

// A failed store keeps the change for the next flush; the last release drops it and says so.
// A file kept as a local copy (vault.ErrKeptInvalid) is not stored again.
func TestBufferStoreFails(t *testing.T) {
	bt := newBufT(t, rowA, "x")
	bt.ok("open", bufEvent{kind: evOpen, write: true})
	bt.write(0, "y")
	bt.io.failNext = errors.New("disk full")
	if r := bt.step(bufEvent{kind: evFlush}); r.err == nil || bt.b.phase != bufDirty {
		t.Fatalf("failed flush: %+v, phase %d", r, bt.b.phase)
	}
	bt.ok("flush again", bufEvent{kind: evFlush})
	if got := bt.io.content(rowA); got != "y" {
		t.Fatalf("stored %q", got)
	}
	bt.write(0, "z")
	bt.io.failNext = vault.ErrKeptInvalid
	if r := bt.step(bufEvent{kind: evFlush}); !errors.Is(r.err, vault.ErrKeptInvalid) || bt.b.phase != bufClean {
		t.Fatalf("kept invalid: %+v, phase %d", r, bt.b.phase)
	}
	bt.write(0, "w")
	bt.io.failNext = errors.New("disk full")
	if r := bt.step(bufEvent{kind: evRelease}); r.err == nil || bt.b.loaded() {
		t.Fatalf("failed release: %+v, loaded %v", r, bt.b.loaded())
	}
}

// An unlinked or replaced file's content goes nowhere; a closed one cannot be opened or cut.
func TestBufferDetached(t *testing.T) {
	bt := newBufT(t, rowA, "x")
	bt.ok("open", bufEvent{kind: evOpen, write: true})
	bt.ok("detach", bufEvent{kind: evDetach})
	bt.write(0, "gone")
	bt.ok("flush", bufEvent{kind: evFlush})
	if r := bt.ok("release", bufEvent{kind: evRelease}); r.forget || bt.io.writes != 0 {
		t.Fatalf("a detached file stored: %+v, %d writes", r, bt.io.writes)
	}
	if r := bt.step(bufEvent{kind: evOpen}); r.errno != syscall.ENOENT {
		t.Fatalf("open of a detached closed file: %+v", r)
	}
	if r := bt.step(bufEvent{kind: evTruncate, size: 0}); r.errno != syscall.ENOENT {
		t.Fatalf("truncate of a detached closed file: %+v", r)
	}
}

// A new journal event: nothing is stored for an empty close; what is written is stored
// under its content key, which the buffer then stands for; its created name is forgotten at
// the last release. An event in the journal refuses every change.
func TestBufferJournalEvent(t *testing.T) {
	created := vault.Key{Tier: seal.TierJournal, Key: "new.json"}
	bt := newBufT(t, created, "")
	bt.b.hold()
	bt.b.bind, bt.b.phase = bindEvent, bufClean
	bt.ok("open", bufEvent{kind: evOpen, write: true})
	bt.ok("open the duplicate", bufEvent{kind: evOpen, write: true})
	bt.ok("close the duplicate", bufEvent{kind: evFlush})
	if bt.io.writes != 0 {
		t.Fatal("an empty event was stored")
	}
	bt.ok("release the duplicate", bufEvent{kind: evRelease})
	bt.write(0, `{"e":1}`)
	bt.ok("truncate by path", bufEvent{kind: evTruncate, size: 7})
	if bt.io.writes != 0 {
		t.Fatal("a truncate of a new event was stored before its close")
	}
	r := bt.ok("flush", bufEvent{kind: evFlush})
	if bt.io.writes != 1 || !strings.HasPrefix(bt.b.key.Key, "ev-") || bt.b.bind != bindEvent {
		t.Fatalf("after the flush: %+v, key %v, bind %d", r, bt.b.key, bt.b.bind)
	}
	if r := bt.ok("release", bufEvent{kind: evRelease}); !r.forget || bt.b.bind != bindRow {
		t.Fatalf("last release: %+v, bind %d", r, bt.b.bind)
	}
	for _, ev := range []bufEvent{{kind: evOpen, write: true}, {kind: evOpen, trunc: true}, {kind: evTruncate, size: 1}} {
		if r := bt.step(ev); r.errno != syscall.EPERM || !r.journal {
			t.Fatalf("change %d of an event in the journal: %+v, want EPERM", ev.kind, r)
		}
	}
	bt.ok("read-only open", bufEvent{kind: evOpen})
	if got := bt.read(); got != `{"e":1}` {
		t.Fatalf("event reads %q", got)
	}
	// an event unlinked before its last release still has its name forgotten then
	ev := newBufT(t, created, "")
	ev.b.hold()
	ev.b.bind, ev.b.phase = bindEvent, bufClean
	ev.ok("open", bufEvent{kind: evOpen, write: true})
	ev.ok("detach", bufEvent{kind: evDetach})
	ev.write(0, "{}")
	if r := ev.ok("release", bufEvent{kind: evRelease}); !r.forget || ev.b.bind != bindGone || ev.io.writes != 0 {
		t.Fatalf("release of an unlinked event: %+v, bind %d, %d writes", r, ev.b.bind, ev.io.writes)
	}
}

// A held row is said at the store that made it, except an empty one stored before the last
// close (the shell's close of the descriptor it moved, before echo writes): that one is said
// at the last release, and only if the row is still held then.
func TestBufferHeldSaid(t *testing.T) {
	ent := vault.Key{Tier: seal.TierEntity, Key: "c/x"}
	for _, c := range []struct {
		name, before, write string
		atFlush, atRelease  bool
	}{
		{"echo into a new file", "", `{"x":1}`, false, false},
		{"echo over a file", `{"x":0}`, `{"x":1}`, false, false},
		{"an empty file", `{"x":0}`, "", false, true},
		{"not JSON", "", "text", true, false},
	} {
		bt := newBufT(t, ent, c.before)
		v, err := bt.io.Get(ent)
		if c.before == "" {
			v, err = bt.io.Write(ent, nil, bt.now)
		}
		if err != nil {
			t.Fatal(err)
		}
		bt.ok("open", bufEvent{kind: evOpen, write: true, trunc: c.before != "", v: v, created: c.before == ""})
		if r := bt.ok("close of the first descriptor", bufEvent{kind: evFlush}); r.held != nil {
			t.Errorf("%s: the empty file was said held before its write", c.name)
		}
		if c.write != "" {
			bt.write(0, c.write)
		}
		if r := bt.ok("close", bufEvent{kind: evFlush}); (r.held != nil) != c.atFlush {
			t.Errorf("%s: held said at the last close: %v, want %v", c.name, r.held != nil, c.atFlush)
		}
		if r := bt.ok("release", bufEvent{kind: evRelease}); (r.held != nil) != c.atRelease {
			t.Errorf("%s: held said at the release: %v, want %v", c.name, r.held != nil, c.atRelease)
		}
		if got := bt.io.content(ent); got != c.write {
			t.Errorf("%s: stored %q, want %q", c.name, got, c.write)
		}
	}
}

// The kernel keeps its pages when the row is the one they were read from.
func TestBufferKeepCache(t *testing.T) {
	bt := newBufT(t, rowA, "x")
	if r := bt.ok("open", bufEvent{kind: evOpen}); r.keep {
		t.Fatal("first open kept pages never read")
	}
	bt.ok("release", bufEvent{kind: evRelease})
	if r := bt.ok("open", bufEvent{kind: evOpen}); !r.keep {
		t.Fatal("the same row did not keep its pages")
	}
	bt.ok("release", bufEvent{kind: evRelease})
	bt.io.put(rowA, "changed", bt.now)
	if r := bt.ok("open", bufEvent{kind: evOpen}); r.keep {
		t.Fatal("a changed row kept the old pages")
	}
	if r := bt.ok("open(O_TRUNC)", bufEvent{kind: evOpen, write: true, trunc: true}); r.keep {
		t.Fatal("open(O_TRUNC) kept the pages")
	}
	hist := &fileBuffer{key: rowA, history: true}
	if r := hist.step(bt.io, bufEvent{kind: evOpen}); !r.keep {
		t.Fatal("a history file did not keep its pages")
	}
}

// bufModel is what a file must look like, whatever the buffer does inside: what is stored,
// and the changes not stored yet.
type bufModel struct {
	stored      string
	storedMtime time.Time
	opens       int
	writers     int // handles open for writing
	dirty       bool
	buf         string
	bufMtime    time.Time
	opened      bool // open for writing was the last request: the kernel's O_TRUNC truncate follows
	loaded      bool // the content was read (or emptied) for a handle: a truncate through one waits for its close
}

func (m *bufModel) view() string {
	if m.dirty {
		return m.buf
	}
	return m.stored
}

func (m *bufModel) store() {
	if m.dirty {
		m.stored, m.storedMtime, m.dirty = m.buf, m.bufMtime, false
	}
}

func resizeString(s string, size int64) string {
	return string(resize([]byte(s), size))
}

// Seeded interleavings of open, read, write, truncate, flush, fsync, release, rename,
// setattr and pulls against bufModel. A failure names its seed and the steps that led to it.
func TestBufferRandom(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		randomBuffer(t, seed, 150)
		if t.Failed() {
			return
		}
	}
}

func randomBuffer(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	bt := newBufT(t, rowA, "start")
	m := &bufModel{stored: "start", storedMtime: bt.now}
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, after %s: %s", seed, strings.Join(log, ", "), fmt.Sprintf(format, args...))
	}
	renames := 0
	for i := 0; i < steps; i++ {
		var r bufResult
		bt.io.failNext = nil
		failing := rng.Intn(12) == 0
		if failing {
			bt.io.failNext = errors.New("disk full")
		}
		var what string
		switch op := rng.Intn(11); {
		case op == 0 || (op == 1 && m.opens > 3):
			if m.opens == 0 {
				continue
			}
			what = "release"
			r = bt.step(bufEvent{kind: evRelease})
			m.opens--
			if m.writers > m.opens {
				m.writers = m.opens
			}
			if m.opens == 0 {
				if !failing {
					m.store()
				}
				m.dirty, m.loaded = false, false
			}
		case op == 1:
			write, trunc := rng.Intn(2) == 0, rng.Intn(4) == 0
			what = fmt.Sprintf("open(write %v, trunc %v)", write, trunc)
			r = bt.step(bufEvent{kind: evOpen, write: write, trunc: trunc})
			m.opens++
			if write {
				m.writers++
			}
			if trunc {
				m.buf, m.bufMtime, m.dirty = "", bt.now, true
			}
			m.opened = write
			m.loaded = m.loaded || write || trunc
		case op == 2 && m.opens > 0:
			what = "read"
			dest := make([]byte, 64)
			r = bt.step(bufEvent{kind: evRead, dest: dest})
			if got := string(dest[:r.n]); r.err == nil && got != m.view() {
				fail("read %q, want %q", got, m.view())
			}
			m.opened, m.loaded = false, true
		case op == 3 && m.writers > 0:
			off, data := int64(rng.Intn(12)), strings.Repeat(string(rune('a'+rng.Intn(26))), 1+rng.Intn(4))
			tooBig := rng.Intn(15) == 0
			if tooBig {
				off, data = maxFileSize-1, "x"+data
			}
			what = fmt.Sprintf("write(%d, %q)", off, data)
			r = bt.step(bufEvent{kind: evWrite, off: off, data: []byte(data)})
			m.opened = false
			if tooBig {
				if r.errno != syscall.EFBIG {
					fail("write past the limit: %+v", r)
				}
				if m.dirty {
					m.dirty, m.loaded = false, false
				}
				break
			}
			b := []byte(m.view())
			if end := off + int64(len(data)); end > int64(len(b)) {
				b = resize(b, end)
			}
			copy(b[off:], data)
			m.buf, m.bufMtime, m.dirty, m.loaded = string(b), bt.now, true, true
		case op == 4 || op == 5:
			// a truncate by path (setattr of the size), or through a handle open for writing
			viaHandle := op == 5 && m.writers > 0
			size := int64(rng.Intn(10))
			what = fmt.Sprintf("truncate(%d, via handle %v)", size, viaHandle)
			openTrunc := m.opened && size == 0 && m.opens > 0
			r = bt.step(bufEvent{kind: evTruncate, size: size, viaHandle: viaHandle})
			m.opened = false
			cut := resizeString(m.view(), size)
			switch {
			case !m.loaded && !failing:
				m.stored, m.storedMtime = cut, bt.now // a closed file is cut at once
			case !m.loaded:
			case viaHandle || openTrunc:
				m.buf, m.bufMtime, m.dirty = cut, bt.now, true
			case !failing:
				m.stored, m.storedMtime, m.dirty = cut, bt.now, false
			default:
				m.buf, m.bufMtime, m.dirty = cut, bt.now, true // the store failed: kept for the next flush
			}
		case op == 6:
			what = [...]string{"flush", "fsync"}[rng.Intn(2)] // the same event: both store the buffer
			r = bt.step(bufEvent{kind: evFlush})
			m.opened = false
			if !failing {
				m.store()
			}
		case op == 7:
			// a rename stores the buffer, moves the row, and the buffer follows it
			renames++
			to := vault.Key{Tier: seal.TierState, Key: fmt.Sprint("r", renames)}
			what = "rename to " + to.Key
			r = bt.step(bufEvent{kind: evFlush})
			m.opened = false
			if r.err != nil {
				break
			}
			m.store()
			bt.io.rows[fakeID(to)] = bt.io.rows[fakeID(bt.b.key)]
			delete(bt.io.rows, fakeID(bt.b.key))
			bt.step(bufEvent{kind: evRebind, key: to})
		case op == 8:
			// setattr of the times: kept locally by the backend, and by an open buffer
			at := bt.now.Add(-time.Hour)
			what = "setattr mtime"
			row := bt.io.rows[fakeID(bt.b.key)]
			row.mtime = at
			bt.io.rows[fakeID(bt.b.key)] = row
			r = bt.step(bufEvent{kind: evSetMtime, mtime: at})
			m.storedMtime = at
			if m.dirty {
				m.bufMtime = at
			}
		case op == 9:
			// another machine's change comes in with a pull
			what = "pull"
			pulled := fmt.Sprint("pulled ", i)
			at := bt.now
			bt.io.put(bt.b.key, pulled, at)
			r = bt.step(bufEvent{kind: evInvalidate})
			m.stored, m.storedMtime = pulled, at
		default:
			continue
		}
		if failing && bt.io.failNext == nil {
			what += " (store failed)"
		}
		bt.io.failNext = nil
		log = append(log, what)
		if r.errno != 0 && r.errno != syscall.EFBIG {
			fail("%s: errno %v", what, r.errno)
		}
		if r.err != nil && !strings.Contains(r.err.Error(), "disk full") {
			fail("%s: %v", what, r.err)
		}
		checkBuffer(bt, m, fail)
	}
}

// checkBuffer holds the buffer to the model, and to the rules every state keeps.
func checkBuffer(bt *bufT, m *bufModel, fail func(string, ...any)) {
	b := bt.b
	row := bt.io.rows[fakeID(b.key)]
	switch {
	case string(row.content) != m.stored:
		fail("stored %q, want %q", row.content, m.stored)
	case !row.mtime.Equal(m.storedMtime):
		fail("stored mtime %v, want %v", row.mtime, m.storedMtime)
	case int(b.opens) != m.opens:
		fail("%d opens, want %d", b.opens, m.opens)
	case (b.phase == bufDirty) != m.dirty:
		fail("phase %d, model dirty %v", b.phase, m.dirty)
	case m.dirty && string(b.buf) != m.buf:
		fail("buffer %q, want %q", b.buf, m.buf)
	case m.dirty && !b.mtime.Equal(m.bufMtime):
		fail("buffer mtime %v, want %v", b.mtime, m.bufMtime)
	case b.phase == bufClean && string(b.buf) != m.stored:
		fail("a clean buffer %q is not the row %q", b.buf, m.stored)
	case b.opens == 0 && b.phase != bufUnloaded:
		fail("no handle, but phase %d", b.phase)
	case b.phase == bufUnloaded && b.bufData != nil:
		fail("an unloaded buffer holds %q", b.buf)
	case b.phase != bufUnloaded && b.bufData == nil:
		fail("phase %d without content", b.phase)
	case b.bind != bindRow:
		fail("binding %d", b.bind)
	}
}

// TestFileNodeSize bounds what every file node of a mount costs, open or not: a mount that
// has looked up 100,000 files holds 100,000 of them. The content of an open file (bufData)
// and a new event's created name (pendingEvent) live apart; 368 bytes and a 32-byte boxed
// bufferIO a node before they did.
func TestFileNodeSize(t *testing.T) {
	const most = 288 // a size class of the Go allocator
	if got := unsafe.Sizeof(fileNode{}); got > most {
		t.Errorf("a fileNode is %d bytes, want at most %d", got, most)
	}
}

// A file the open itself created starts empty without reading the backend; a file that was
// already there is read.
func TestBufferCreatedOpensWithoutReading(t *testing.T) {
	for _, c := range []struct {
		before  string
		created bool
		reads   int
		stored  string
	}{{"", true, 0, "new"}, {"there", false, 1, "therenew"}} {
		bt := newBufT(t, rowA, c.before)
		v, err := bt.io.Get(rowA)
		if c.created {
			v, err = bt.io.Write(rowA, nil, bt.now)
		}
		if err != nil {
			t.Fatal(err)
		}
		bt.ok("open", bufEvent{kind: evOpen, write: true, v: v, created: c.created})
		if bt.io.reads != c.reads {
			t.Fatalf("created %v: read %d times at open, want %d", c.created, bt.io.reads, c.reads)
		}
		bt.write(int64(len(c.before)), "new")
		bt.ok("flush", bufEvent{kind: evFlush})
		if got := bt.io.content(rowA); got != c.stored {
			t.Fatalf("created %v: stored %q, want %q", c.created, got, c.stored)
		}
	}
}

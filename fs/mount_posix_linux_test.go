package fs

import (
	"log"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestModesAsSet: a create with mode 0000 and chmod 000 show 0000, as any other mode shows as
// set (go-fuse would fill a mode without permission bits in with 0644).
func TestModesAsSet(t *testing.T) {
	tm := mountForTest(t)
	p := tm.path("state", "zero")
	fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_EXCL, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd)
	wantPerm(t, "create with mode 0000", p, 0)
	q := tm.path("state", "chmodded")
	if err := os.WriteFile(q, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range []os.FileMode{0, 0o640, 0o000, 0o755} {
		if err := os.Chmod(q, m); err != nil {
			t.Fatal(err)
		}
		wantPerm(t, "chmod", q, m)
	}
	cat := tm.path("entity", "people")
	if err := os.Mkdir(cat, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cat, 0); err != nil {
		t.Fatal(err)
	}
	wantPerm(t, "chmod 000 of a category", cat, 0)
}

func wantPerm(t *testing.T, what, p string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != want {
		t.Fatalf("%s: mode %v, want %v", what, st.Mode().Perm(), want)
	}
}

// dirTimes are a directory's mtime and ctime in nanoseconds.
func dirTimes(t *testing.T, p string) (mtime, ctime int64) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Mtim.Nano(), st.Ctim.Nano()
}

// TestDirTimesFollowEntries: a directory's mtime and ctime move on when a file is created,
// removed or renamed in it, and a category made or removed moves the entity directory's.
func TestDirTimesFollowEntries(t *testing.T) {
	tm := mountForTest(t)
	state, entity := tm.path("state"), tm.path("entity")
	if err := os.Mkdir(tm.path("entity", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tm.path("entity", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Each directory is first given a time long past (so that a coarse clock cannot hide a
	// change): the change must move its mtime to now, and its ctime must not go back.
	past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	changes := func(what string, dirs []string, change func() error) {
		t.Helper()
		var ctimes []int64
		for _, d := range dirs {
			if err := os.Chtimes(d, past, past); err != nil {
				t.Fatal(err)
			}
			_, c := dirTimes(t, d)
			ctimes = append(ctimes, c)
		}
		if err := change(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for i, d := range dirs {
			m, c := dirTimes(t, d)
			if m <= past.UnixNano() || c < ctimes[i] || c < m {
				t.Errorf("%s: %s mtime %d (set to %d before), ctime %d -> %d: want both now", what, d, m, past.UnixNano(), ctimes[i], c)
			}
		}
	}
	changes("create", []string{state}, func() error { return os.WriteFile(tm.path("state", "x"), []byte("x"), 0o644) })
	changes("rename within", []string{state}, func() error { return os.Rename(tm.path("state", "x"), tm.path("state", "y")) })
	changes("remove", []string{state}, func() error { return os.Remove(tm.path("state", "y")) })
	changes("create in a category", []string{tm.path("entity", "a")}, func() error {
		return os.WriteFile(tm.path("entity", "a", "e"), []byte(`{}`), 0o644)
	})
	changes("rename across categories", []string{tm.path("entity", "a"), tm.path("entity", "b")}, func() error {
		return os.Rename(tm.path("entity", "a", "e"), tm.path("entity", "b", "e"))
	})
	changes("mkdir", []string{entity}, func() error { return os.Mkdir(tm.path("entity", "c"), 0o755) })
	changes("rmdir", []string{entity}, func() error { return os.Remove(tm.path("entity", "c")) })
	// a time set on a directory holds until the next change in it
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(state, at, at); err != nil {
		t.Fatal(err)
	}
	if m, _ := dirTimes(t, state); m != at.UnixNano() {
		t.Fatalf("mtime after touch -d: %d, want %d", m, at.UnixNano())
	}
	changes("create after touch -d", []string{state}, func() error { return os.WriteFile(tm.path("state", "z"), nil, 0o644) })
}

// TestChownKeepsTheOwner: a chown to the owner every file shows is accepted; any other owner
// is refused with EPERM, on files and directories (kintfs keeps no owners).
func TestChownKeepsTheOwner(t *testing.T) {
	tm := mountForTest(t)
	p := tm.path("state", "x")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	for _, q := range []string{p, tm.path("state")} {
		if err := os.Chown(q, uid, gid); err != nil {
			t.Errorf("chown %s to its owner: %v", q, err)
		}
		if err := os.Chown(q, -1, -1); err != nil {
			t.Errorf("chown %s -1 -1: %v", q, err)
		}
		wantErrno(t, "chown to another user", os.Chown(q, uid+1000, -1), syscall.EPERM)
		wantErrno(t, "chgrp to another group", os.Chown(q, -1, gid+1000), syscall.EPERM)
		var st syscall.Stat_t
		if err := syscall.Stat(q, &st); err != nil || int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("%s owner after refused chowns: %d:%d %v", q, st.Uid, st.Gid, err)
		}
	}
}

// TestHeldWriteSaidAtClose: a write whose row will be held succeeds (held, never lost), and the
// close logs the path and the reason at once, not only at the next flush.
func TestHeldWriteSaidAtClose(t *testing.T) {
	tm := mountForTest(t)
	if err := os.Mkdir(tm.path("entity", "people"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ rel, body, reason string }{
		{"entity/people/bad", "not json", "/entity/people/bad will not be anchored: entity body is not a JSON value"},
		{"state/binary", "\xff\xfe", "/state/binary will not be anchored: not valid UTF-8"},
	} {
		if err := os.WriteFile(tm.path(c.rel), []byte(c.body), 0o644); err != nil {
			t.Fatalf("write %s: %v", c.rel, err)
		}
		if !strings.Contains(tm.log.String(), "warn: held: "+c.reason) {
			t.Errorf("no held line at the close of %s:\n%s", c.rel, tm.log.String())
		}
	}
	// a good write logs nothing
	before := tm.log.String()
	if err := os.WriteFile(tm.path("entity", "people", "good"), []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if after := tm.log.String(); after != before {
		t.Errorf("a write that will be anchored logged: %q", strings.TrimPrefix(after, before))
	}
	if strings.Contains(tm.log.String(), "not json") {
		t.Errorf("the log quotes a body:\n%s", tm.log.String())
	}
	// The shell's redirection closes the file once, empty, before echo writes: a new file and
	// one written over log nothing; one left empty is said at its close.
	for _, name := range []string{"new", "good"} {
		before := tm.log.String()
		mustSh(t, `echo '{"x":1}' > `+tm.path("entity", "people", name))
		if after := tm.log.String(); after != before {
			t.Errorf("echo into %s logged: %q", name, strings.TrimPrefix(after, before))
		}
	}
	// The line of a file left empty comes at the last release, which the kernel sends after
	// close has returned: it is waited for, and a moment more lets a second one (or a late one
	// about the echoes above) show.
	mustSh(t, ": > "+tm.path("entity", "people", "good"))
	const emptied = "warn: held: /entity/people/good will not be anchored"
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(tm.log.String(), emptied) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if log := tm.log.String(); strings.Count(log, emptied) != 1 || strings.Contains(log, "/entity/people/new will not") {
		t.Errorf("an entity left empty is not said held once, or an echo was said held:\n%s", log)
	}
}

// debugLog collects go-fuse's record of every request of a mount made with Debug.
type debugLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *debugLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *debugLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// TestNewFileWriteOnly: a file created write-only (cp, tar, rsync, a shell redirection) is
// written around the page cache, so the kernel does not ask for its security.capability before
// the first write; one created read-write stays cached and can be mapped shared. Both read back
// what was written.
func TestNewFileWriteOnly(t *testing.T) {
	dl := &debugLog{}
	tm := mountForTest(t, func(o *MountOptions) { o.Debug, o.Logger = true, log.New(dl, "", 0) })
	const capability = `"security.capability"`
	for _, c := range []struct {
		name  string
		flags int
		asks  bool
	}{{"wronly", os.O_WRONLY, false}, {"rdwr", os.O_RDWR, true}} {
		p := tm.path("state", c.name)
		before := dl.count(capability)
		f, err := os.OpenFile(p, c.flags|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("first ")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("second")); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if asked := dl.count(capability) > before; asked != c.asks {
			t.Errorf("%s: the kernel asked for %s: %v, want %v", c.name, capability, asked, c.asks)
		}
		if got, err := os.ReadFile(p); err != nil || string(got) != "first second" {
			t.Errorf("%s reads %q, %v", c.name, got, err)
		}
	}
	// a file created read-write is mapped shared and written through the map
	p := tm.path("state", "mapped")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(5); err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, 5, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatalf("map a file created read-write: %v", err)
	}
	copy(m, "hello")
	if err := unix.Msync(m, unix.MS_SYNC); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Munmap(m); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "hello" {
		t.Errorf("mapped file reads %q, %v", got, err)
	}
}

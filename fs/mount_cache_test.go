package fs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kintfs/replica/vault"
)

// eventually retries check until it passes or a few seconds have gone.
func eventually(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPullInvalidates changes rows behind the mount's back, as a pull does, and tells the
// mount through its Subscribe callback. The kernel may cache for an hour here, so only the
// invalidation can make the new content visible.
func TestPullInvalidates(t *testing.T) {
	tm := mountForTest(t, func(o *MountOptions) {
		o.EntryTimeout, o.AttrTimeout = time.Hour, time.Hour
	})
	p := tm.path("state", "x")
	mustSh(t, "echo v1 > "+p)
	for i := 0; i < 2; i++ {
		if got := mustRun(t, "cat", p); got != "v1\n" {
			t.Fatalf("cat: %q", got)
		}
	}
	// An open reader whose buffer is clean sees the change too.
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	// The kernel keeps state/'s listing; a row a pull brings must still show in it.
	if got := lsNames(t, tm.path("state")); len(got) != 1 {
		t.Fatalf("state lists %q", got)
	}
	if _, err := tm.r.Write(stateKey("y"), []byte("y"), time.Now()); err != nil {
		t.Fatal(err)
	}
	tm.m.fs.changed([]vault.Key{stateKey("y")})
	eventually(t, "a new row listed after a pull", func() bool { return len(lsNames(t, tm.path("state"))) == 2 })

	k := stateKey("x")
	const v2 = "version two, longer than the first\n"
	if _, err := tm.r.Write(k, []byte(v2), time.Now()); err != nil {
		t.Fatal(err)
	}
	tm.m.fs.changed([]vault.Key{k})
	eventually(t, "new content after a pull", func() bool { return mustRun(t, "cat", p) == v2 })
	buf := make([]byte, 100)
	n, err := f.ReadAt(buf, 0)
	if string(buf[:n]) != v2 {
		t.Fatalf("open reader sees %q (%v)", buf[:n], err)
	}

	// A row that appears, in a category that appears.
	ck := vault.Key{Tier: "entity", Category: "fresh", HasCategory: true, Key: "k"}
	if _, err := os.Stat(tm.path("entity", "fresh")); err == nil {
		t.Fatal("category exists too early")
	}
	if _, err := tm.r.Write(ck, []byte("{}"), time.Now()); err != nil {
		t.Fatal(err)
	}
	tm.m.fs.changed([]vault.Key{ck})
	eventually(t, "new category after a pull", func() bool {
		_, err := os.Stat(tm.path("entity", "fresh", "k"))
		return err == nil
	})

	// A row that goes away.
	if err := tm.r.Remove(k); err != nil {
		t.Fatal(err)
	}
	tm.m.fs.changed([]vault.Key{k})
	eventually(t, "removed row after a pull", func() bool {
		_, err := os.Stat(p)
		return err != nil
	})
	_, err = os.Stat(p)
	wantErrno(t, "stat removed row", err, syscall.ENOENT)
}

// TestNegativeEntries: a name looked up and missing is remembered by the kernel (the row made
// behind the mount's back without telling it stays unseen), until a pull tells the mount or
// the name is made through it. In entity/, where a category comes with rows made elsewhere,
// nothing is remembered.
func TestNegativeEntries(t *testing.T) {
	tm := mountForTest(t)
	for _, rel := range [][]string{{"state", "a"}, {"state", "b"}, {"entity", "c", "e"}} {
		_, err := os.Stat(tm.path(rel...))
		if rel[0] == "entity" {
			if err := os.Mkdir(tm.path("entity", "c"), 0o755); err != nil {
				t.Fatal(err)
			}
			_, err = os.Stat(tm.path(rel...))
		}
		wantErrno(t, "stat of a missing name", err, syscall.ENOENT)
	}
	ka, ke := stateKey("a"), vault.Key{Tier: "entity", Category: "c", HasCategory: true, Key: "e"}
	for _, k := range []vault.Key{ka, ke} {
		if _, err := tm.r.Write(k, []byte(`{"v":1}`), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// Not told: the kernel answers from its negative entries.
	for _, rel := range [][]string{{"state", "a"}, {"entity", "c", "e"}} {
		_, err := os.Stat(tm.path(rel...))
		wantErrno(t, "stat of a row made unseen (the kernel keeps the missing name)", err, syscall.ENOENT)
	}
	tm.m.fs.changed([]vault.Key{ka, ke})
	for _, rel := range [][]string{{"state", "a"}, {"entity", "c", "e"}} {
		eventually(t, "a pulled row whose name was missing", func() bool {
			b, err := os.ReadFile(tm.path(rel...))
			return err == nil && string(b) == `{"v":1}`
		})
	}
	// Made through the mount: at once.
	mustSh(t, "echo made > "+tm.path("state", "b"))
	if got := readFile(t, tm.path("state", "b")); got != "made\n" {
		t.Fatalf("state/b: %q", got)
	}
	// entity/ keeps no negative entry: a category made behind the mount shows at once.
	_, err := os.Stat(tm.path("entity", "later"))
	wantErrno(t, "stat of a missing category", err, syscall.ENOENT)
	if err := tm.r.Mkdir("later"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(tm.path("entity", "later")); err != nil || !st.IsDir() {
		t.Fatalf("a category made behind the mount: %v %v", st, err)
	}
}

// TestSameMountChangesWithLongCaches: with the kernel keeping entries, attributes and pages
// for an hour, every change made through the mount shows at once: writes of the same and of
// another size, a rename over a cached file, a name freed by a rename and taken again, an
// unlink, and the last row leaving a category.
func TestSameMountChangesWithLongCaches(t *testing.T) {
	tm := mountForTest(t)
	x, y := tm.path("state", "x"), tm.path("state", "y")
	mustSh(t, "echo one > "+x+"; echo why > "+y)
	for i := 0; i < 2; i++ {
		if readFile(t, x) != "one\n" || readFile(t, y) != "why\n" {
			t.Fatal("first contents")
		}
	}
	mustSh(t, "echo two > "+x) // same size
	if got := readFile(t, x); got != "two\n" {
		t.Fatalf("same-size rewrite reads %q", got)
	}
	mustSh(t, "echo three, longer > "+x)
	if got := readFile(t, x); got != "three, longer\n" {
		t.Fatalf("longer rewrite reads %q", got)
	}
	if err := os.Rename(x, y); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, y); got != "three, longer\n" {
		t.Fatalf("renamed over: %q", got)
	}
	_, err := os.Stat(x)
	wantErrno(t, "the name a rename left", err, syscall.ENOENT)
	mustSh(t, "echo four > "+x)
	if got := readFile(t, x); got != "four\n" {
		t.Fatalf("the name taken again: %q", got)
	}
	if err := os.Remove(y); err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(y)
	wantErrno(t, "unlinked", err, syscall.ENOENT)

	// A category that exists only through its one row goes with it.
	solo := vault.Key{Tier: "entity", Category: "solo", HasCategory: true, Key: "only"}
	if _, err := tm.r.Write(solo, []byte(`{}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	tm.m.fs.changed([]vault.Key{solo})
	eventually(t, "a pulled category", func() bool { _, err := os.Stat(tm.path("entity", "solo", "only")); return err == nil })
	if err := os.Remove(tm.path("entity", "solo", "only")); err != nil {
		t.Fatal(err)
	}
	if tm.r.HasCategory("solo") {
		t.Skip("the replica keeps an emptied category; nothing to drop")
	}
	eventually(t, "the emptied category gone", func() bool {
		_, err := os.Stat(tm.path("entity", "solo"))
		return errors.Is(err, syscall.ENOENT)
	})
}

// TestReadOnlyNoOpen: a --read-only mount answers OPEN with ENOSYS, so the kernel opens files
// itself and keeps their pages: a row changed behind the mount's back, untold, still reads
// old (which shows the kernel asks nothing), a pull's notification brings the new content at
// once, and the control files, which change unannounced, read fresh (a kernel clock tick after
// the last read at most).
func TestReadOnlyNoOpen(t *testing.T) {
	tm := mountForTest(t, func(o *MountOptions) { o.ReadOnly = true })
	k := stateKey("x")
	if _, err := tm.r.Write(k, []byte("v1"), time.Now()); err != nil {
		t.Fatal(err)
	}
	tm.m.fs.changed([]vault.Key{k})
	tm.m.Settle() // as kintfs pull does before it answers
	p := tm.path("state", "x")
	for i := 0; i < 3; i++ {
		if got := readFile(t, p); got != "v1" {
			t.Fatalf("warm read %d: %q", i, got)
		}
	}
	if _, err := tm.r.Write(k, []byte("v2"), time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, p); got != "v1" {
		t.Fatalf("an untold change reads %q: the kernel still asks the mount on open", got)
	}
	tm.m.fs.changed([]vault.Key{k})
	tm.m.Settle()
	if got := readFile(t, p); got != "v2" {
		t.Fatalf("after a pull: %q", got)
	}
	const v3 = "v3, longer than before"
	if _, err := tm.r.Write(k, []byte(v3), time.Now()); err != nil {
		t.Fatal(err)
	}
	tm.m.fs.changed([]vault.Key{k})
	tm.m.Settle()
	if got := readFile(t, p); got != v3 {
		t.Fatalf("after a pull that changed the size: %q", got)
	}

	staged := func() float64 {
		var st map[string]any
		if err := json.Unmarshal([]byte(readFile(t, tm.path(".kint", "status"))), &st); err != nil {
			t.Fatalf("status: %v", err)
		}
		return st["staged_rows"].(float64)
	}
	before := staged()
	for i := 0; i < 3; i++ {
		if _, err := tm.r.Write(stateKey(fmt.Sprintf("s%d", i)), []byte("s"), time.Now()); err != nil {
			t.Fatal(err)
		}
		// the kernel trusts a control file's attributes for one tick of its clock at most
		time.Sleep(20 * time.Millisecond)
		if got := staged(); got != before+float64(i+1) {
			t.Fatalf("status after %d more staged rows says %v, want %v", i+1, got, before+float64(i+1))
		}
	}
}

// TestXattrProbesRefused: names outside user.* get EOPNOTSUPP, which is what makes ls stop
// asking for security.selinux and system.posix_acl_access after the first file; user.kint.*
// still answers. ls -l of a directory of many files sends the mount two probes, not two per file.
func TestXattrProbesRefused(t *testing.T) {
	tm := mountForTest(t, func(o *MountOptions) { o.Debug = true })
	tm.expectLog(" rx ")
	tm.expectLog(" tx ")
	tm.expectLog("fusermount")
	tm.expectLog("ENODEV")
	for i := 0; i < 20; i++ {
		mustSh(t, fmt.Sprintf("echo %d > %s", i, tm.path("state", fmt.Sprintf("f%02d", i))))
	}
	p := tm.path("state", "f00")
	for _, name := range []string{"security.selinux", "system.posix_acl_access", "security.capability", "trusted.x"} {
		_, err := unix.Getxattr(p, name, make([]byte, 64))
		wantErrno(t, name, err, syscall.EOPNOTSUPP)
	}
	if v, err := getxattr(t, p, "user.kint.key"); err != nil || v != "f00" {
		t.Fatalf("user.kint.key: %q %v", v, err)
	}
	_, err := unix.Getxattr(tm.path("state"), "system.posix_acl_default", make([]byte, 64))
	wantErrno(t, "a directory's default ACL", err, syscall.EOPNOTSUPP)
	before := strings.Count(tm.log.String(), "GETXATTR")
	mustRun(t, "ls", "-l", tm.path("state"))
	if n := strings.Count(tm.log.String(), "GETXATTR") - before; n > 4 {
		t.Fatalf("ls -l of 20 files sent %d GETXATTR requests", n)
	}
}

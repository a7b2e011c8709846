package fs

import (
	"os"
	"syscall"
	"testing"
	"time"

	"kintfs/replica"
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
	tm.m.fs.changed([]replica.Key{stateKey("y")})
	eventually(t, "a new row listed after a pull", func() bool { return len(lsNames(t, tm.path("state"))) == 2 })

	k := stateKey("x")
	const v2 = "version two, longer than the first\n"
	if _, err := tm.r.Write(k, []byte(v2), time.Now()); err != nil {
		t.Fatal(err)
	}
	tm.m.fs.changed([]replica.Key{k})
	eventually(t, "new content after a pull", func() bool { return mustRun(t, "cat", p) == v2 })
	buf := make([]byte, 100)
	n, err := f.ReadAt(buf, 0)
	if string(buf[:n]) != v2 {
		t.Fatalf("open reader sees %q (%v)", buf[:n], err)
	}

	// A row that appears, in a category that appears.
	ck := replica.Key{Tier: "entity", Category: strp("fresh"), Key: "k"}
	if _, err := os.Stat(tm.path("entity", "fresh")); err == nil {
		t.Fatal("category exists too early")
	}
	if _, err := tm.r.Write(ck, []byte("{}"), time.Now()); err != nil {
		t.Fatal(err)
	}
	tm.m.fs.changed([]replica.Key{ck})
	eventually(t, "new category after a pull", func() bool {
		_, err := os.Stat(tm.path("entity", "fresh", "k"))
		return err == nil
	})

	// A row that goes away.
	if err := tm.r.Remove(k); err != nil {
		t.Fatal(err)
	}
	tm.m.fs.changed([]replica.Key{k})
	eventually(t, "removed row after a pull", func() bool {
		_, err := os.Stat(p)
		return err != nil
	})
	_, err = os.Stat(p)
	wantErrno(t, "stat removed row", err, syscall.ENOENT)
}

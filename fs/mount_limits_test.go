package fs

import (
	"bytes"
	"errors"
	"log"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"kintfs/replica"
	"kintfs/replica/replicatest"
	"kintfs/replica/vault"
)

// limitMarker is written into every body of these tests, so that a log line quoting a body
// is caught.
const limitMarker = "LIMIT-MARKER-7f3a"

// limitBody is n bytes that start with the marker and compress well.
func limitBody(n int, fill byte) []byte {
	b := bytes.Repeat([]byte{fill}, n)
	copy(b, limitMarker)
	return b
}

// remountable is a mount over a replica that can be unmounted, reopened and mounted again.
type remountable struct {
	t   *testing.T
	r   *replica.Replica
	dir string
	m   *Mounted
	log *testLog
}

func newRemountable(t *testing.T) *remountable {
	requireFuse(t)
	rm := &remountable{t: t, r: replicatest.New(t), dir: t.TempDir(), log: &testLog{t: t}}
	rm.mount()
	t.Cleanup(func() {
		rm.unmount()
		rm.log.close()
		rm.log.check()
		rm.noMarker()
	})
	return rm
}

func (rm *remountable) mount() {
	m, err := Mount(rm.dir, rm.r, MountOptions{Xattrs: true, Logger: log.New(rm.log, "", 0)})
	if err != nil {
		rm.t.Fatalf("mount: %v", err)
	}
	rm.m = m
}

func (rm *remountable) unmount() {
	if rm.m == nil {
		return
	}
	var err error
	for i := 0; i < 50; i++ {
		if err = rm.m.Unmount(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		rm.t.Errorf("unmount: %v", err)
	}
	rm.m = nil
}

// remount unmounts, closes the store, opens it again and mounts it.
func (rm *remountable) remount() {
	rm.unmount()
	rm.r = replicatest.Reopen(rm.t, rm.r)
	rm.mount()
}

// noMarker fails the test when a log line holds a body written here.
func (rm *remountable) noMarker() {
	rm.log.mu.Lock()
	defer rm.log.mu.Unlock()
	for _, line := range rm.log.lines {
		if strings.Contains(line, limitMarker) {
			rm.t.Errorf("the mount log quotes a body: %.200s", line)
		}
	}
}

func (rm *remountable) path(name string) string { return rm.dir + "/" + name }

// TestFileSizeLimit writes files of 1 MiB, 10 MiB and the limit -1, exactly, and +1 bytes.
// Up to the limit each is accepted, reads back byte for byte, and survives a remount; limit+1
// fails at the write with EFBIG, never at close, and leaves the file as it was. The limit is
// tested on a new file, over an existing one, by appending and by truncating.
func TestFileSizeLimit(t *testing.T) {
	rm := newRemountable(t)
	const limit = vault.MaxFileBytes
	sizes := []struct {
		name string
		n    int
	}{{"1MiB", 1 << 20}, {"10MiB", 10 << 20}, {"below", limit - 1}, {"at", limit}}
	for _, sz := range sizes {
		body := limitBody(sz.n, 'c')
		if err := os.WriteFile(rm.path("state/"+sz.name), body, 0o644); err != nil {
			t.Fatalf("%s: write %d bytes: %v", sz.name, sz.n, err)
		}
		got, err := os.ReadFile(rm.path("state/" + sz.name))
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%s: read back %d bytes (%v), want %d", sz.name, len(got), err, sz.n)
		}
	}

	// limit+1 to a new file: EFBIG at the write; the file stays as created, empty
	over := limitBody(limit+1, 'c')
	if err := os.WriteFile(rm.path("state/new-over"), over, 0o644); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("write %d bytes to a new file: %v, want EFBIG", limit+1, err)
	}
	// limit+1 over an existing file: EFBIG, the old content stays
	old := []byte("the old content " + limitMarker)
	if err := os.WriteFile(rm.path("state/old"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rm.path("state/old"), over, 0o644); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("write %d bytes over a file: %v, want EFBIG", limit+1, err)
	}
	// one byte appended to a file of exactly the limit: EFBIG at that write, close is clean
	f, err := os.OpenFile(rm.path("state/at"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("append past the limit: %v, want EFBIG", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close after EFBIG: %v", err)
	}
	// truncate: to the limit is fine, past it is EFBIG and changes nothing
	if err := os.Truncate(rm.path("state/below"), limit+1); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("truncate to limit+1: %v, want EFBIG", err)
	}
	if err := os.Truncate(rm.path("state/below"), limit); err != nil {
		t.Fatalf("truncate to the limit: %v", err)
	}
	if err := os.Truncate(rm.path("state/below"), limit-1); err != nil {
		t.Fatalf("truncate back: %v", err)
	}

	check := func(when string) {
		t.Helper()
		for _, sz := range sizes {
			got, err := os.ReadFile(rm.path("state/" + sz.name))
			if err != nil || !bytes.Equal(got, limitBody(sz.n, 'c')) {
				t.Fatalf("%s: %s reads %d bytes (%v), want %d", when, sz.name, len(got), err, sz.n)
			}
		}
		if got, err := os.ReadFile(rm.path("state/new-over")); err != nil || len(got) != 0 {
			t.Fatalf("%s: the new file refused at limit+1 reads %d bytes (%v), want 0", when, len(got), err)
		}
		if got, err := os.ReadFile(rm.path("state/old")); err != nil || !bytes.Equal(got, old) {
			t.Fatalf("%s: the file refused at limit+1 reads %d bytes (%v), want its old %d", when, len(got), err, len(old))
		}
		if st, err := os.Stat(rm.path("state/old")); err != nil || st.Size() != int64(len(old)) {
			t.Fatalf("%s: stat of the refused file: %v %v", when, st, err)
		}
	}
	check("before remount")
	rm.remount()
	check("after remount")

	// every one of them is staged, and the ones over an epoch's uncompressed bound are held
	// with the reason at once
	st, err := rm.r.Status()
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{}
	for _, h := range st.Held {
		held[h.Key] = h.Reason
	}
	for _, name := range []string{"at", "below"} {
		if !strings.Contains(held[name], "bytes uncompressed, more than the") {
			t.Errorf("%s: held %q, want the uncompressed-size reason", name, held[name])
		}
	}
	if _, ok := held["1MiB"]; ok {
		t.Errorf("1MiB is held at once: %q", held["1MiB"])
	}
}

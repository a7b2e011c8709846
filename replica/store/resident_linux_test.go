package store

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// mapFile writes size zero bytes to dir/name and maps them with flags, writable when write.
func mapFile(t *testing.T, dir, name string, size int, flags int, write bool) []byte {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	mode, prot := os.O_RDONLY, syscall.PROT_READ
	if write {
		mode, prot = os.O_RDWR, syscall.PROT_READ|syscall.PROT_WRITE
	}
	f, err := os.OpenFile(path, mode, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := syscall.Mmap(int(f.Fd()), 0, size, prot, flags)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(data) })
	return data
}

// TestReleaseMappedPages: the pages of a shared mapping leave the resident set, read or
// written, and keep their bytes (in the mapping and in the file); a private mapping's written
// pages keep theirs.
func TestReleaseMappedPages(t *testing.T) {
	dir := t.TempDir()
	const size = 8 << 20
	page := os.Getpagesize()
	read := mapFile(t, dir, "table.sst", size, syscall.MAP_SHARED, false)
	written := mapFile(t, dir, "000001.mem", size, syscall.MAP_SHARED, true)
	private := mapFile(t, dir, "private", size, syscall.MAP_PRIVATE, true)
	sum := 0
	for i := 0; i < size; i += page {
		sum += int(read[i])
		written[i] = byte(i/page) | 1 // dirty: not yet written back
		private[i] = 7
	}
	before := residentMapped()
	if !releaseMapped(dir) {
		t.Skip("the kernel has no MADV_PAGEOUT")
	}
	// as the releaser does every releaseCheck: a page the kernel is still writing back (the
	// disk busy with other tests) leaves on a later pass
	after := residentMapped()
	for pass := 0; pass < 50 && before-after < 2*size-size/8; pass++ {
		time.Sleep(20 * time.Millisecond)
		releaseMapped(dir)
		after = residentMapped()
	}
	if before-after < 2*size-size/8 { // both shared mappings, read and written
		t.Fatalf("resident mapped bytes %d before, %d after: the shared mappings' pages were not released", before, after)
	}
	if sum != 0 || read[size-1] != 0 {
		t.Fatal("the read mapping reads back changed")
	}
	for i := 0; i < size; i += page {
		if written[i] != byte(i/page)|1 || private[i] != 7 {
			t.Fatalf("page %d reads back %d (shared, written) and %d (private), want %d and 7", i/page, written[i], private[i], byte(i/page)|1)
		}
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, "000001.mem"))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, size)
	for i := 0; i < size; i += page {
		want[i] = byte(i/page) | 1
	}
	if !bytes.Equal(onDisk, want) {
		t.Fatal("the written mapping's bytes did not reach its file")
	}
}

// The releaser reads /proc/self/statm through one descriptor held open: each read must see
// the pages resident now, not those of the first read.
func TestStatmHeldOpenSeesGrowth(t *testing.T) {
	st := openStatm()
	defer st.close()
	before := st.mapped()
	if before <= 0 {
		t.Fatalf("resident mapped bytes read as %d", before)
	}
	const size = 8 << 20
	m := mapFile(t, t.TempDir(), "grow.sst", size, syscall.MAP_SHARED, true)
	for i := 0; i < size; i += os.Getpagesize() {
		m[i] = 1
	}
	if after := st.mapped(); after-before < size-size/8 {
		t.Fatalf("resident mapped bytes %d before and %d after touching %d bytes of a shared mapping, read through the same descriptor", before, after, size)
	}
}

// A store nobody uses is looked at once a second, not every releaseCheck; a call of the store
// makes the releaser look every releaseCheck again at once, and pages mapped meanwhile are
// released.
func TestReleaserIdlesAndWakes(t *testing.T) {
	dir := t.TempDir()
	r := startReleaser(dir)
	defer r.Stop()
	time.Sleep(releaseIdleAfter + 500*time.Millisecond)
	before := r.checks.Load()
	time.Sleep(time.Second)
	if idle := r.checks.Load() - before; idle > 3 {
		t.Fatalf("%d looks in a second with nothing happening: the releaser did not slow down", idle)
	}
	before = r.checks.Load()
	for start := time.Now(); time.Since(start) < time.Second; { // the store in use for a second
		r.active()
		time.Sleep(releaseCheck)
	}
	// one every releaseCheck would be 100; idle, it would be 1 (a loaded machine gives fewer)
	if busy := r.checks.Load() - before; busy < 10 {
		t.Fatalf("%d looks in a second of the store in use, want one every %v", busy, releaseCheck)
	}
	// pages mapped while busy leave within a moment
	const size = 16 << 20
	m := mapFile(t, dir, "000001.vlog", size, syscall.MAP_SHARED, false)
	sum := 0
	for i := 0; i < size; i += os.Getpagesize() {
		sum += int(m[i])
	}
	before = residentMapped()
	r.active()
	deadline := time.Now().Add(3 * time.Second)
	for residentMapped() > before-size/2 {
		if time.Now().After(deadline) {
			t.Fatalf("resident mapped bytes still %d, %d before a release, 3 s after the store was used", residentMapped(), before)
		}
		time.Sleep(20 * time.Millisecond)
		r.active()
	}
	if sum != 0 {
		t.Fatal("the mapping read back changed")
	}
}

// A store on a file system in memory (tmpfs) gets no releaser: its mapped pages are the files
// and cannot leave, and trying costs CPU at every look. A store on a disk, and one whose
// directory is not made yet (the store makes it), are looked at as ever.
func TestReleaserLeavesMemoryFileSystemsAlone(t *testing.T) {
	const shm = "/dev/shm"
	if !inMemory(shm) {
		msg := shm + " is not a file system in memory here: this test did NOT run"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	memDir, err := os.MkdirTemp(shm, "kintfs-releaser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(memDir) })
	for _, c := range []struct {
		dir      string
		releases bool
	}{
		{memDir, false},
		{filepath.Join(memDir, "db", "not-yet"), false},
		{t.TempDir(), !inMemory(os.TempDir())},
		{filepath.Join(t.TempDir(), "not-yet"), !inMemory(os.TempDir())},
	} {
		r := startReleaser(c.dir)
		for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
			r.active()
			time.Sleep(releaseCheck)
		}
		r.Stop()
		if looks := r.checks.Load(); (looks > 0) != c.releases {
			t.Errorf("%s: %d looks at the resident pages in 200 ms of the store in use; want them: %v", c.dir, looks, c.releases)
		}
	}
}

package replica

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"kintfs/replica/vault"
)

// TestPullFetchedBlobsDurableBeforeApply: when a pull applies the first epoch it fetched, the
// blobs of every epoch it is about to apply are already on the disk, not only in the page
// cache. The kernel may write the state database's pages back before any sync of the pull's,
// so an apply a power cut keeps must find its blob, from which the next open puts back what
// the cut took. The test reads the kernel's own flags for each page of each blob at that
// moment (/proc/self/pagemap for the page frame, /proc/kpageflags for KPF_DIRTY): none may
// be dirty.
func TestPullFetchedBlobsDurableBeforeApply(t *testing.T) {
	requirePageFlags(t)
	e := newChainEnv(t)
	a := e.machine()
	write := func(i int) {
		if _, err := a.Write(vault.Key{Tier: "reference", Key: fmt.Sprint("note", i)}, []byte(fmt.Sprint("body ", i)), time.Now()); err != nil {
			t.Fatal(err)
		}
		flushAll(t, a)
	}
	write(0)
	b := e.machine()
	// a first pull: the first epochs raise the bucket, and that syncs the file system, which
	// would hide a missing sync below
	if _, err := b.Pull(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	mirror, err := b.store.MirrorHead()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		write(i)
	}

	var checked, dirty []string
	calls := 0
	beforeApply = func(seq uint64) {
		calls++
		if calls > 1 {
			return
		}
		for s := mirror.Seq + 1; s <= mirror.Seq+5; s++ {
			path := b.opt.Home.Path("epochs", b.vault.Space16(), fmt.Sprintf("%08d.bin", s))
			n, err := dirtyPages(path)
			if err != nil {
				t.Errorf("epoch %d's blob at the first apply: %v", s, err)
				continue
			}
			checked = append(checked, filepath.Base(path))
			if n > 0 {
				dirty = append(dirty, fmt.Sprintf("%s: %d dirty pages", filepath.Base(path), n))
			}
		}
	}
	defer func() { beforeApply = nil }()
	rep, err := b.Pull(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Fetched != 5 || calls != 5 || len(checked) != 5 {
		t.Fatalf("the pull fetched %d epochs and applied %d; %d blobs checked at the first apply: want 5 of each", rep.Fetched, calls, len(checked))
	}
	if len(dirty) > 0 {
		t.Errorf("at the first apply of a pull, blobs it fetched were still only in the page cache: %v", dirty)
	}
}

// requirePageFlags fails the test in CI, and skips it elsewhere, when the page flags of the
// test's files cannot be read: the page frames in /proc/self/pagemap need CAP_SYS_ADMIN, and a
// file system in memory has no clean pages to tell from dirty ones.
func requirePageFlags(t *testing.T) {
	t.Helper()
	why := ""
	var st unix.Statfs_t
	switch {
	case os.Geteuid() != 0:
		why = "not root: the page frames of /proc/self/pagemap read as 0"
	case unix.Statfs(os.TempDir(), &st) == nil && (st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC):
		why = os.TempDir() + " is a file system in memory"
	default:
		if _, err := os.Stat("/proc/kpageflags"); err != nil {
			why = err.Error()
		}
	}
	if why == "" {
		return
	}
	msg := "PAGE FLAGS CANNOT BE READ HERE (" + why + "): this test did NOT run"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// pageSink takes the bytes dirtyPages reads to bring pages in, so that the reads stay.
var pageSink byte

// dirtyPages maps the file at path, brings each of its pages in and counts those the kernel
// flags as dirty: written in the page cache and not yet on the disk.
func dirtyPages(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return 0, fmt.Errorf("an empty blob (%v)", err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(m)
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return 0, err
	}
	defer pagemap.Close()
	kpageflags, err := os.Open("/proc/kpageflags")
	if err != nil {
		return 0, err
	}
	defer kpageflags.Close()
	const pageSize, kpfDirty = 4096, 4
	base := uintptr(unsafe.Pointer(&m[0]))
	dirty := 0
	var entry [8]byte
	for off := 0; off < len(m); off += pageSize {
		pageSink ^= m[off] // fault the page in
		if _, err := pagemap.ReadAt(entry[:], int64((base+uintptr(off))/pageSize*8)); err != nil {
			return 0, err
		}
		e := binary.LittleEndian.Uint64(entry[:])
		pfn := e & (1<<55 - 1)
		if e&(1<<63) == 0 || pfn == 0 {
			return 0, fmt.Errorf("page %d of the blob is not present, or its frame is hidden (pagemap %#x)", off/pageSize, e)
		}
		if _, err := kpageflags.ReadAt(entry[:], int64(pfn*8)); err != nil {
			return 0, err
		}
		if binary.LittleEndian.Uint64(entry[:])&(1<<kpfDirty) != 0 {
			dirty++
		}
	}
	return dirty, nil
}

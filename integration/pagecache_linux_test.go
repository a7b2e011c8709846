//go:build linux

package integration

import (
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cachedPages is how many of path's pages the kernel's page cache holds, and how many it has:
// mincore of a read-only mapping, which reads nothing itself.
func cachedPages(t *testing.T, path string) (held, pages int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap %s: %v", path, err)
	}
	defer unix.Munmap(m)
	ps := os.Getpagesize()
	vec := make([]byte, (len(m)+ps-1)/ps)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore %s: %v", path, errno)
	}
	for _, v := range vec {
		if v&1 != 0 {
			held++
		}
	}
	return held, len(vec)
}

// TestOwnFlushKeepsPageCache: a file this mount wrote and read keeps its pages in the kernel's
// page cache through the mount's own flush, which anchors exactly what it holds; another
// machine's epoch that changes it drops them, and the next read shows the new content.
func TestOwnFlushKeepsPageCache(t *testing.T) {
	dc := startDevchain(t)
	const tenant, pass = "pagecache", "pass pagecache"
	a := newMachine(t, dc, tenant)
	a.connect(pass)
	ma := a.mount("--poll", "1h")                                           // no background pull: only the commands below move it
	body := strings.Repeat("a line of the note that stays the same\n", 400) // 4 pages
	p := ma.path("state/note")
	writeFile(t, p, body)
	other := ma.path("state/other")
	writeFile(t, other, "o1")
	expectContent(t, "after the write", p, body)
	if held, pages := cachedPages(t, p); held != pages {
		t.Fatalf("before the flush the page cache holds %d of the file's %d pages", held, pages)
	}
	ma.mustCtl("flush")
	if held, pages := cachedPages(t, p); held != pages {
		t.Fatalf("after the mount's own flush the page cache holds %d of the file's %d pages, want all: the flush dropped pages whose content did not change", held, pages)
	}
	expectContent(t, "after the flush", p, body)
	if st := ma.status(); st["mirror"].(map[string]any)["seq"].(float64) != 1 {
		t.Fatalf("status says mirror %v after the flush, want seq 1", st["mirror"])
	}

	// Another machine changes the file: a pull here drops the pages, never serving them stale.
	b := newMachine(t, dc, tenant)
	b.connect(pass)
	b.pull()
	mb := b.mount("--poll", "1h")
	changed := strings.Repeat("another machine's line\n", 300)
	writeFile(t, mb.path("state/note"), changed)
	mb.mustCtl("flush")
	expectContent(t, "before the pull, the anchored content", p, body)
	ma.mustCtl("pull")
	expectContent(t, "after another machine's epoch", p, changed)
	expectContent(t, "a file the epoch did not touch", other, "o1")

	// And the other way: this mount's flush of a change the other machine then pulls.
	writeFile(t, p, body)
	ma.mustCtl("flush")
	expectContent(t, "after the second own flush", p, body)
	if held, pages := cachedPages(t, p); held != pages {
		t.Fatalf("after the second own flush the page cache holds %d of %d pages", held, pages)
	}
	mb.mustCtl("pull")
	expectContent(t, "on the other machine after its pull", mb.path("state/note"), body)
}

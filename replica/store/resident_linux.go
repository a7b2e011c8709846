package store

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Badger maps its tables and logs into memory, and every page of them this process has read
// or written stays in its resident set until the kernel runs short: after a mount has read
// every file once, its resident size holds the whole database. The releaser takes those pages
// out of the resident set, with MADV_DONTNEED, whenever the mapped pages resident have grown by
// releaseSlack since it last did. On a shared file mapping that only unmaps them: each stays in
// the page cache with its data, a dirty one (a table being written) is written back as ever,
// and a page used again is mapped again from the cache, without a read from disk; the kernel
// evicts them as it does any cached file. Private mappings are left alone (there it would
// discard what was written to them). MADV_PAGEOUT, used before, evicted the clean pages from the
// page cache as well, so that the next use of one read it from disk again. The check runs every
// 10 ms (a read of /proc/self/statm): at the start of a flush of 10,000 rows of a 100,000-row
// mount, the file-backed pages resident once grew by 90 MB within 30 ms, past a check every
// 50 ms.
const (
	releaseCheck = 10 * time.Millisecond
	releaseSlack = 8 << 20
)

type releaser struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// startReleaser starts releasing the pages of the files mapped from dir.
func startReleaser(dir string) *releaser {
	r := &releaser{stop: make(chan struct{}), done: make(chan struct{})}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	go func() {
		defer close(r.done)
		t := time.NewTicker(releaseCheck)
		defer t.Stop()
		floor := int64(0) // mapped bytes resident after the last release
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
			if mapped := residentMapped(); mapped >= 0 && mapped < floor+releaseSlack {
				continue
			}
			if !releaseMapped(dir) {
				return // the kernel refuses MADV_DONTNEED on these mappings
			}
			floor = residentMapped()
		}
	}()
	return r
}

// Stop stops the releaser and waits for it.
func (r *releaser) Stop() {
	r.once.Do(func() { close(r.stop) })
	<-r.done
}

// releaseMapped unmaps the pages of every shared mapping of a file under dir; it returns false
// when the kernel refuses.
func releaseMapped(dir string) bool {
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return true
	}
	defer maps.Close()
	prefix := []byte(dir + "/")
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		// start-end perms offset dev inode path: the path is all from the first '/' on
		line := sc.Bytes()
		slash := bytes.IndexByte(line, '/')
		if slash < 0 || !bytes.HasPrefix(line[slash:], prefix) {
			continue
		}
		addrs, rest, _ := bytes.Cut(line, []byte(" "))
		if len(rest) < 4 || rest[3] != 's' {
			continue // perms rwxs: private, or unknown
		}
		start, end, ok := addrRange(addrs)
		if !ok {
			continue
		}
		_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, syscall.MADV_DONTNEED)
		if errno == syscall.EINVAL {
			return false
		}
	}
	return true
}

// residentMapped is the bytes of file-backed pages resident in this process (the binary's own
// among them), or -1 when unknown.
func residentMapped() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return -1
	}
	// size resident shared text lib data dt, in pages
	f := bytes.Fields(b)
	if len(f) < 3 {
		return -1
	}
	shared, err := strconv.ParseInt(string(f[2]), 10, 64)
	if err != nil {
		return -1
	}
	return shared * int64(os.Getpagesize())
}

func addrRange(b []byte) (start, end uintptr, ok bool) {
	lo, hi, found := bytes.Cut(b, []byte("-"))
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(string(lo), 16, 64)
	e, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}

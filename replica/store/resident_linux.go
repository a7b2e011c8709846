package store

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Badger maps its tables and logs into memory, and every page of them this process has read
// or written stays in its resident set until the kernel runs short: after a mount has read
// every file once, its resident size holds the whole database. The releaser hands those pages
// back, with MADV_PAGEOUT, whenever the mapped pages resident have grown by releaseSlack
// since it last did: clean pages leave the page cache and are read again from disk when next
// needed. Nothing is lost whatever a range holds (dirty pages are kept, and anonymous memory
// without swap cannot be paged out), so a mapping that goes away between the read of
// /proc/self/maps and the call is harmless.
//
// MADV_DONTNEED would only unmap the pages and leave them in the page cache: reads through the
// mapping then map them back faster than the releaser looks (the mount that populates 100,000
// rows peaked at 358 MB with it, 241 MB with MADV_PAGEOUT). The check runs every 10 ms, a read
// of /proc/self/statm: with MADV_DONTNEED, at the start of a flush of 10,000 rows of a
// 100,000-row mount, the file-backed pages resident once grew by 90 MB within 30 ms, between
// two checks 50 ms apart.
//
// The slack is what those pages add to the mount's peak: on a 100,000-row mount (every file
// read, then 10,000 rows rewritten and flushed) the peak was 122-123 MB at 8 MB and is
// 116-117 MB at 4 MB, the process's CPU time and the flush's time the same.
//
// A mount left alone checks once a second, not 100 times: the checks were two thirds of an
// idle mount's CPU. Every read and commit of the store says the mount is busy (active), and a
// second after the last one, or after the last growth, the checks slow down again. What maps
// pages without the store asking (badger's own compactions) is seen within the second.
const (
	releaseCheck     = 10 * time.Millisecond
	releaseIdleCheck = time.Second
	releaseIdleAfter = time.Second
	releaseSlack     = 4 << 20
)

const madvPageout = 21 // MADV_PAGEOUT, Linux 5.4

type releaser struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
	busy chan struct{} // one slot: a store call since the releaser last looked
	// checks counts the looks at the resident size (tests read it)
	checks atomic.Int64
}

// startReleaser starts releasing the pages of the files mapped from dir, unless dir is on a file
// system in memory (tmpfs, ramfs): its pages are the files themselves and cannot leave, and
// MADV_PAGEOUT spends the CPU trying every time (0.95 of the 4.6 CPU-seconds of a flush of
// 10,000 rows with its KINT_HOME on tmpfs, for nothing).
func startReleaser(dir string) *releaser {
	r := &releaser{stop: make(chan struct{}), done: make(chan struct{}), busy: make(chan struct{}, 1)}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if inMemory(dir) {
		close(r.done)
		return r
	}
	go func() {
		defer close(r.done)
		st := openStatm()
		defer st.close()
		t := time.NewTimer(releaseCheck)
		defer t.Stop()
		floor := int64(0) // mapped bytes resident after the last release
		last, lastBusy := int64(-1), time.Now()
		next := releaseCheck
		for {
			wake := r.busy
			if next == releaseCheck {
				wake = nil // checking every releaseCheck already
			}
			select {
			case <-r.stop:
				return
			case <-t.C:
			case <-wake:
			}
			select {
			case <-r.busy:
				lastBusy = time.Now()
			default:
			}
			r.checks.Add(1)
			mapped := st.mapped()
			if mapped != last {
				lastBusy, last = time.Now(), mapped
			}
			if mapped < 0 || mapped >= floor+releaseSlack {
				if !releaseMapped(dir) {
					return // the kernel has no MADV_PAGEOUT
				}
				floor = st.mapped()
				last = floor
			}
			next = releaseCheck
			if time.Since(lastBusy) > releaseIdleAfter {
				next = releaseIdleCheck
			}
			t.Reset(next) // since Go 1.23 a reset timer never delivers an earlier time
		}
	}()
	return r
}

// inMemory says dir (or its nearest existing parent: the store may not have made it yet) is on
// a file system kept in memory.
func inMemory(dir string) bool {
	for {
		var st unix.Statfs_t
		err := unix.Statfs(dir, &st)
		if err == nil {
			return st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// active tells the releaser the store is in use: it checks every releaseCheck again.
func (r *releaser) active() {
	select {
	case r.busy <- struct{}{}:
	default:
	}
}

// Stop stops the releaser and waits for it.
func (r *releaser) Stop() {
	r.once.Do(func() { close(r.stop) })
	<-r.done
}

// releaseMapped pages out every mapping of a file under dir; it returns false when the kernel
// refuses MADV_PAGEOUT.
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
		addrs, _, _ := bytes.Cut(line, []byte(" "))
		start, end, ok := addrRange(addrs)
		if !ok {
			continue
		}
		_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvPageout)
		if errno == syscall.EINVAL {
			return false
		}
	}
	return true
}

// residentMapped is the bytes of file-backed pages resident in this process (the binary's own
// among them), or -1 when unknown.
func residentMapped() int64 {
	st := openStatm()
	defer st.close()
	return st.mapped()
}

// statm is /proc/self/statm held open: the releaser reads it 100 times a second, and
// os.ReadFile makes each read ten system calls (open, the poller's registration, stat, two
// reads, close), where a pread of the open file is one.
type statm struct{ fd int }

func openStatm() statm {
	fd, err := syscall.Open("/proc/self/statm", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		fd = -1
	}
	return statm{fd}
}

func (s statm) close() {
	if s.fd >= 0 {
		syscall.Close(s.fd)
	}
}

// mapped is the bytes of file-backed pages resident, or -1 when unknown.
func (s statm) mapped() int64 {
	if s.fd < 0 {
		return -1
	}
	var buf [256]byte
	n, err := syscall.Pread(s.fd, buf[:], 0)
	if err != nil || n <= 0 {
		return -1
	}
	// size resident shared text lib data dt, in pages
	f := bytes.Fields(buf[:n])
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

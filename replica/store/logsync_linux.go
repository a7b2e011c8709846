package store

import (
	"encoding/binary"
	"errors"
	"syscall"
)

// dirWatch tells a sync whether badger's directory may have gained or lost a file since the
// sync before it, so that a sync lists the directory only then: the listing (an open, two
// reads and a close) was 20 µs of each durable change. It watches with inotify, whose events
// are queued by the call that creates or removes a file, before that call returns: a log
// badger made before a sync started is always seen by it. An overflowed queue, or a watch the
// kernel dropped, says changed from then on.
type dirWatch struct {
	fd     int // -1: no watch (none left to this user, say), every sync lists
	broken bool
	buf    []byte
}

func newDirWatch(dir string) *dirWatch {
	w := &dirWatch{fd: -1}
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return w
	}
	const mask = syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO |
		syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF
	if _, err := syscall.InotifyAddWatch(fd, dir, mask); err != nil {
		syscall.Close(fd)
		return w
	}
	w.fd, w.buf = fd, make([]byte, 4096)
	return w
}

// changed drains the events queued since the last call and reports whether there were any.
func (w *dirWatch) changed() bool {
	if w.fd < 0 || w.broken {
		return true
	}
	changed := false
	for {
		n, err := syscall.Read(w.fd, w.buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.EAGAIN) {
			return changed
		}
		if err != nil || n <= 0 {
			w.broken = true
			return true
		}
		changed = true
		// each event: wd int32, mask uint32, cookie uint32, len uint32, then len bytes of name
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			mask := binary.NativeEndian.Uint32(w.buf[off+4:])
			if mask&(syscall.IN_Q_OVERFLOW|syscall.IN_IGNORED|syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF) != 0 {
				w.broken = true
			}
			off += syscall.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(w.buf[off+12:]))
		}
	}
}

func (w *dirWatch) close() {
	if w.fd >= 0 {
		syscall.Close(w.fd)
		w.fd = -1
	}
}

func fdatasync(fd int) error { return syscall.Fdatasync(fd) }

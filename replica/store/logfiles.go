package store

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// logFiles keeps open the logs a sync fsyncs, so that a durable change costs its fsyncs and
// not an open and a close of each log around them as well (with the runtime's poller
// registration in between: eight system calls a log). Only the newest logs stay open: a sync
// drops every other one once it covered it, so a log badger removes is not kept on disk by a
// descriptor held here. Badger never reuses a log's name (its file numbers only grow), so a
// name held is always the file badger writes.
type logFiles struct {
	mu  sync.Mutex
	fds map[string]int
}

// sync fsyncs the file at path, opening it the first time.
func (l *logFiles) sync(path string) error {
	fd, err := l.open(path)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	for {
		err = syscall.Fsync(fd)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return &os.PathError{Op: "fsync", Path: path, Err: err}
	}
	return nil
}

func (l *logFiles) open(path string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if fd, ok := l.fds[path]; ok {
		return fd, nil
	}
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if l.fds == nil {
		l.fds = map[string]int{}
	}
	l.fds[path] = fd
	return fd, nil
}

// keepOnly closes every file held but those named in keep (base names in dir).
func (l *logFiles) keepOnly(dir string, keep map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for path, fd := range l.fds {
		if filepath.Dir(path) != dir || !keep[filepath.Base(path)] {
			syscall.Close(fd)
			delete(l.fds, path)
		}
	}
}

// close closes every file held.
func (l *logFiles) close() { l.keepOnly("", nil) }

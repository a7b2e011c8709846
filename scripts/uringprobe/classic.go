//go:build linux && (amd64 || arm64)

package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// maxWrite is the largest WRITE the mounts accept; the kernel sizes a ring entry's payload
// buffer from it (and from 32 pages, its default largest request).
const maxWrite = 128 << 10

// rawMount is a file system mounted by the probe itself: /dev/fuse opened and mount(2) called
// directly (the probe runs as root), served by the classic loop or by io_uring queues.
type rawMount struct {
	dir     string
	fd      int
	fs      *trivialFS
	uring   *uringServer // nil on the classic transport
	classic sync.WaitGroup
	err     error // the first error of a serving loop
	errOnce sync.Once
	down    sync.Once // unmount's work, done once however often it is called
	downErr error
}

func (m *rawMount) fail(err error) {
	m.errOnce.Do(func() { m.err = err })
}

// mountRaw mounts the trivial file system at dir and answers FUSE_INIT; given uring options it
// then moves the connection to io_uring queues, one per possible CPU.
func mountRaw(dir string, fs *trivialFS, uo *uringOpts) (*rawMount, error) {
	withURing := uo != nil
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/fuse: %w", err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=%d,group_id=%d,default_permissions", fd, os.Getuid(), os.Getgid())
	name := "uringprobe-classic"
	if withURing {
		name = "uringprobe-uring"
	}
	if err := unix.Mount(name, dir, "fuse."+name, unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	m := &rawMount{dir: dir, fd: fd, fs: fs}
	buf := make([]byte, maxWrite+4096)
	n, err := readRequest(fd, buf)
	if err != nil {
		m.unmount()
		return nil, fmt.Errorf("read FUSE_INIT: %w", err)
	}
	h := parseInHeader(buf)
	if h.opcode != opInit {
		m.unmount()
		return nil, fmt.Errorf("first request is opcode %d, not FUSE_INIT", h.opcode)
	}
	out := make([]byte, outHeaderSize+64)
	rn, offered, errno := initReply(buf[inHeaderSize:n], out[outHeaderSize:], withURing, maxWrite)
	putOutHeader(out, uint32(outHeaderSize+rn), errno, h.unique)
	if errno != 0 {
		rn = 0
	}
	if _, err := unix.Write(fd, out[:outHeaderSize+rn]); err != nil {
		m.unmount()
		return nil, fmt.Errorf("answer FUSE_INIT: %w", err)
	}
	if withURing {
		if !offered {
			m.unmount()
			return nil, errURingOff
		}
		u, err := startURing(fd, fs, *uo)
		if err != nil {
			m.unmount()
			return nil, err
		}
		m.uring = u
	}
	// The classic loop runs on both transports: with io_uring the kernel still sends FORGET
	// and INTERRUPT through /dev/fuse.
	m.classic.Add(1)
	go m.serveClassic()
	return m, nil
}

var errURingOff = errors.New("the kernel did not offer FUSE_OVER_IO_URING in FUSE_INIT (/sys/module/fuse/parameters/enable_uring is N, or the kernel is built without CONFIG_FUSE_IO_URING)")

// readRequest reads one request, retrying the reads a signal or a finished request interrupts.
func readRequest(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR || err == unix.EAGAIN || err == unix.ENOENT {
			continue
		}
		if err == nil && n < inHeaderSize {
			return 0, fmt.Errorf("short request of %d bytes", n)
		}
		return n, err
	}
}

// serveClassic is the minimal /dev/fuse loop: one read, one write per request, on one thread.
func (m *rawMount) serveClassic() {
	defer m.classic.Done()
	runtime.LockOSThread()
	buf := make([]byte, maxWrite+4096)
	out := make([]byte, outHeaderSize+maxWrite)
	for {
		n, err := readRequest(m.fd, buf)
		if err != nil {
			if err != unix.ENODEV {
				m.fail(fmt.Errorf("read /dev/fuse: %w", err))
			}
			return
		}
		h := parseInHeader(buf)
		body := buf[inHeaderSize:n]
		split := min(opInSize[h.opcode], len(body))
		rn, errno, noReply := m.fs.handle(h, body[:split], body[split:], out[outHeaderSize:])
		if noReply {
			continue
		}
		if errno != 0 {
			rn = 0
		}
		putOutHeader(out, uint32(outHeaderSize+rn), errno, h.unique)
		if _, err := unix.Write(m.fd, out[:outHeaderSize+rn]); err != nil && err != unix.ENOENT {
			if err != unix.ENODEV {
				m.fail(fmt.Errorf("write /dev/fuse: %w", err))
			}
			return
		}
	}
}

// unmount detaches the mount, waits for the serving loops to see the connection end, and
// closes the device; calls after the first return the first's answer.
func (m *rawMount) unmount() error {
	m.down.Do(func() { m.downErr = m.doUnmount() })
	return m.downErr
}

func (m *rawMount) doUnmount() error {
	err := unix.Unmount(m.dir, 0)
	if err != nil {
		err = unix.Unmount(m.dir, unix.MNT_DETACH)
	}
	if m.uring != nil {
		m.uring.wait()
	}
	m.classic.Wait()
	unix.Close(m.fd)
	if err != nil {
		return fmt.Errorf("unmount %s: %w", m.dir, err)
	}
	if m.uring != nil && m.uring.err != nil {
		return m.uring.err
	}
	return m.err
}

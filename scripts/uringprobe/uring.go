//go:build linux && (amd64 || arm64)

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// io_uring, set up with raw system calls (include/uapi/linux/io_uring.h).
const (
	setupSQE128 = 1 << 10 // 128-byte SQEs: the 80-byte command area FUSE needs
	setupCQE32  = 1 << 11 // 32-byte CQEs

	setupCoopTaskrun  = 1 << 8  // no interrupt to run completions: they wait for the next enter
	setupSingleIssuer = 1 << 12 // one thread submits
	setupDeferTaskrun = 1 << 13 // completions run only when the thread waits in io_uring_enter

	featSingleMmap = 1 << 0

	offSQRing = 0
	offSQEs   = 0x10000000

	enterGetEvents = 1 << 0

	opURingCmd = 46 // IORING_OP_URING_CMD

	sqeSize = 128
	cqeSize = 32
)

// FUSE over io_uring (protocol 7.42, fs/fuse/dev_uring.c).
const (
	cmdRegister       = 1 // FUSE_IO_URING_CMD_REGISTER
	cmdCommitAndFetch = 2 // FUSE_IO_URING_CMD_COMMIT_AND_FETCH

	// struct fuse_uring_req_header: in_out[128], op_in[128], struct fuse_uring_ent_in_out
	hdrInOut    = 0
	hdrOpIn     = 128
	hdrEntInOut = 256
	headerBytes = 4096 // one page each, as libfuse does

	queueDepth = 4 // ring entries per queue: the client has one request in flight at a time
)

// ioURingParams is struct io_uring_params.
type ioURingParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  struct {
		head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
		userAddr                                                        uint64
	}
	cqOff struct {
		head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
		userAddr                                                        uint64
	}
}

// ring is one io_uring: the shared rings and the SQE array, mapped from the kernel.
type ring struct {
	fd                      int
	sq, cq, sqes            []byte
	sqHead, sqTail, sqArray uint32 // offsets in sq
	sqMask                  uint32
	cqHead, cqTail, cqCQEs  uint32 // offsets in cq
	cqMask                  uint32
	pending                 uint32 // SQEs written since the last enter
	maps                    [][]byte
}

func newRing(entries, flags uint32) (*ring, error) {
	var p ioURingParams
	p.flags = setupSQE128 | setupCQE32 | flags
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", e)
	}
	r := &ring{fd: int(fd)}
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*cqeSize)
	var err error
	if p.features&featSingleMmap != 0 {
		r.sq, err = r.mmap(max(sqSize, cqSize), offSQRing)
		r.cq = r.sq
	} else {
		// not on any kernel with FUSE over io_uring (5.4 brought the single mapping)
		err = errors.New("io_uring without IORING_FEAT_SINGLE_MMAP")
	}
	if err == nil {
		r.sqes, err = r.mmap(int(p.sqEntries)*sqeSize, offSQEs)
	}
	if err != nil {
		r.close()
		return nil, err
	}
	r.sqHead, r.sqTail, r.sqArray = p.sqOff.head, p.sqOff.tail, p.sqOff.array
	r.sqMask = r.u32(r.sq, p.sqOff.ringMask)
	r.cqHead, r.cqTail, r.cqCQEs = p.cqOff.head, p.cqOff.tail, p.cqOff.cqes
	r.cqMask = r.u32(r.cq, p.cqOff.ringMask)
	return r, nil
}

func (r *ring) mmap(size int, off int64) ([]byte, error) {
	b, err := unix.Mmap(r.fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap io_uring: %w", err)
	}
	r.maps = append(r.maps, b)
	return b, nil
}

func (r *ring) close() {
	for _, b := range r.maps {
		_ = unix.Munmap(b)
	}
	unix.Close(r.fd)
}

func (r *ring) u32(b []byte, off uint32) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[off])))
}

func (r *ring) setU32(b []byte, off, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[off])), v)
}

// nextSQE returns the next free SQE, zeroed, or nil when the ring is full.
func (r *ring) nextSQE() []byte {
	head, tail := r.u32(r.sq, r.sqHead), r.u32(r.sq, r.sqTail)+r.pending
	if tail-head > r.sqMask {
		return nil
	}
	i := tail & r.sqMask
	binary.LittleEndian.PutUint32(r.sq[r.sqArray+4*i:], i)
	r.pending++
	s := r.sqes[int(i)*sqeSize : int(i+1)*sqeSize]
	clear(s)
	return s
}

// enter publishes the SQEs written since the last call and waits for at least one completion.
func (r *ring) enter() error {
	n := r.pending
	if n > 0 {
		r.setU32(r.sq, r.sqTail, r.u32(r.sq, r.sqTail)+n)
		r.pending = 0
	}
	for {
		_, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(n), 1, enterGetEvents, 0, 0)
		if e == unix.EINTR {
			continue // the kernel takes at most the SQEs still unsubmitted: n again is safe
		}
		if e != 0 {
			return fmt.Errorf("io_uring_enter: %w", e)
		}
		return nil
	}
}

// reap hands each completion (user_data, res) to fn and frees the slots.
func (r *ring) reap(fn func(userData uint64, res int32)) {
	head := r.u32(r.cq, r.cqHead)
	tail := r.u32(r.cq, r.cqTail)
	for ; head != tail; head++ {
		c := r.cq[r.cqCQEs+(head&r.cqMask)*cqeSize:]
		fn(binary.LittleEndian.Uint64(c[0:]), int32(binary.LittleEndian.Uint32(c[8:])))
	}
	r.setU32(r.cq, r.cqHead, head)
}

// uringOpts are the io_uring server's settings.
type uringOpts struct {
	pin   bool   // pin each queue's thread to its CPU, as libfuse does
	flags uint32 // io_uring_setup flags beyond SQE128 and CQE32
}

// taskrunModes are the ways a completion can reach a queue's thread, for -taskrun.
var taskrunModes = map[string]uint32{
	"signal": 0, // the default: the kernel interrupts the thread to run it
	"coop":   setupCoopTaskrun,
	"defer":  setupSingleIssuer | setupDeferTaskrun,
}

// uringServer serves a FUSE connection through one io_uring queue per possible CPU, each on
// its own locked thread (pinned to its CPU when asked, as libfuse does).
type uringServer struct {
	fd      int
	fs      *trivialFS
	opts    uringOpts
	queues  int
	wg      sync.WaitGroup
	served  []atomic.Int64 // requests answered per queue
	err     error
	errOnce sync.Once
}

// possibleCPUs is the kernel's number of queues: one per possible CPU, every one registered
// before the ring is used.
func possibleCPUs() (int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, found := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("/sys/devices/system/cpu/possible: %q", b)
		}
		z := a
		if found {
			if z, err = strconv.Atoi(hi); err != nil {
				return 0, fmt.Errorf("/sys/devices/system/cpu/possible: %q", b)
			}
		}
		n = max(n, z+1)
	}
	return n, nil
}

func startURing(fd int, fs *trivialFS, o uringOpts) (*uringServer, error) {
	nq, err := possibleCPUs()
	if err != nil {
		return nil, err
	}
	u := &uringServer{fd: fd, fs: fs, opts: o, queues: nq, served: make([]atomic.Int64, nq)}
	ready := make(chan error, nq)
	for q := 0; q < nq; q++ {
		u.wg.Add(1)
		go u.queue(q, ready)
	}
	for q := 0; q < nq; q++ {
		if err := <-ready; err != nil {
			return nil, err
		}
	}
	return u, nil
}

// wait waits for the queues to see the connection end (every entry completed with ENOTCONN),
// for a minute at most.
func (u *uringServer) wait() {
	done := make(chan struct{})
	go func() { u.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		u.fail(errors.New("the io_uring queues did not end within a minute of the unmount"))
	}
}

func (u *uringServer) fail(err error) { u.errOnce.Do(func() { u.err = err }) }

// entry is one registered ring entry: its header and payload buffers, outside the Go heap so
// the kernel may write them whenever it completes a command.
type entry struct {
	header, payload []byte
	commitID        uint64
	last            uint32 // the command last submitted, to submit again after EINTR/EAGAIN
}

// queue registers queueDepth entries on queue q and serves them until the connection ends.
// Everything on one thread: the kernel completes a FUSE command in the task that submitted it.
func (u *uringServer) queue(q int, ready chan<- error) {
	defer u.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if u.opts.pin {
		var set unix.CPUSet
		set.Set(q)
		_ = unix.SchedSetaffinity(0, &set) // a CPU that is possible but offline refuses; serve anyway
	}
	r, err := newRing(2*queueDepth, u.opts.flags)
	if err != nil {
		ready <- err
		return
	}
	defer r.close()
	payloadBytes := max(maxWrite, 32*os.Getpagesize(), 8192)
	mem, err := unix.Mmap(-1, 0, queueDepth*(headerBytes+payloadBytes)+queueDepth*32, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		ready <- fmt.Errorf("mmap ring buffers: %w", err)
		return
	}
	defer unix.Munmap(mem)
	ents := make([]entry, queueDepth)
	iovs := mem[queueDepth*(headerBytes+payloadBytes):]
	for i := range ents {
		base := i * (headerBytes + payloadBytes)
		ents[i].header = mem[base : base+headerBytes]
		ents[i].payload = mem[base+headerBytes : base+headerBytes+payloadBytes]
		iov := iovs[i*32:]
		binary.LittleEndian.PutUint64(iov[0:], uint64(uintptr(unsafe.Pointer(&ents[i].header[0]))))
		binary.LittleEndian.PutUint64(iov[8:], headerBytes)
		binary.LittleEndian.PutUint64(iov[16:], uint64(uintptr(unsafe.Pointer(&ents[i].payload[0]))))
		binary.LittleEndian.PutUint64(iov[24:], uint64(payloadBytes))
	}
	submit := func(i int, cmd uint32) {
		s := r.nextSQE() // never nil: one SQE per entry, and twice as many slots
		s[0] = opURingCmd
		binary.LittleEndian.PutUint32(s[4:], uint32(u.fd))
		binary.LittleEndian.PutUint32(s[8:], cmd) // cmd_op
		if cmd == cmdRegister {
			binary.LittleEndian.PutUint64(s[16:], uint64(uintptr(unsafe.Pointer(&iovs[i*32]))))
			binary.LittleEndian.PutUint32(s[24:], 2) // header and payload
		}
		binary.LittleEndian.PutUint64(s[32:], uint64(i)) // user_data
		// struct fuse_uring_cmd_req in the command area at byte 48: flags, commit_id, qid
		binary.LittleEndian.PutUint64(s[56:], ents[i].commitID)
		binary.LittleEndian.PutUint16(s[64:], uint16(q))
		ents[i].last = cmd
	}
	for i := range ents {
		submit(i, cmdRegister)
	}
	// A registration that fails completes at once; a good one stays pending until a request
	// comes. Submit them and look for early failures before saying the queue is ready.
	n := r.pending
	r.setU32(r.sq, r.sqTail, r.u32(r.sq, r.sqTail)+n)
	r.pending = 0
	if _, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(n), 0, 0, 0, 0); e != 0 {
		ready <- fmt.Errorf("io_uring_enter (register): %w", e)
		return
	}
	var regErr error
	r.reap(func(ud uint64, res int32) {
		if res < 0 && regErr == nil {
			regErr = fmt.Errorf("FUSE_IO_URING_CMD_REGISTER on queue %d: %w", q, unix.Errno(-res))
		}
	})
	ready <- regErr
	if regErr != nil {
		return
	}
	live := len(ents)
	for live > 0 {
		if err := r.enter(); err != nil {
			u.fail(err)
			return
		}
		r.reap(func(ud uint64, res int32) {
			i := int(ud)
			if i < 0 || i >= len(ents) {
				u.fail(fmt.Errorf("completion for unknown entry %d", ud))
				return
			}
			e := &ents[i]
			switch {
			case res == -int32(unix.EINTR) || res == -int32(unix.EAGAIN):
				submit(i, e.last)
				return
			case res < 0:
				if res != -int32(unix.ENOTCONN) && res != -int32(unix.ECONNABORTED) {
					u.fail(fmt.Errorf("queue %d: %w", q, unix.Errno(-res)))
				}
				live-- // the connection is gone: this entry is done
				return
			}
			u.serve(q, e)
			submit(i, cmdCommitAndFetch)
		})
	}
}

// serve answers the request in e and writes the reply for COMMIT_AND_FETCH.
func (u *uringServer) serve(q int, e *entry) {
	le := binary.LittleEndian
	h := parseInHeader(e.header[hdrInOut:])
	ent := e.header[hdrEntInOut:]
	e.commitID = le.Uint64(ent[8:])
	psz := min(int(le.Uint32(ent[16:])), len(e.payload))
	opIn := e.header[hdrOpIn : hdrOpIn+opInSize[h.opcode]]
	// copy the request's payload out: the reply is written over the same buffer
	var in [256]byte
	payload := in[:copy(in[:], e.payload[:psz])]
	if psz > len(in) {
		payload = append([]byte(nil), e.payload[:psz]...)
	}
	n, errno, _ := u.fs.handle(h, opIn, payload, e.payload)
	u.served[q].Add(1)
	if errno != 0 {
		n = 0
	}
	putOutHeader(e.header[hdrInOut:], uint32(outHeaderSize+n), errno, h.unique)
	le.PutUint32(ent[16:], uint32(n)) // payload_sz of the reply
}

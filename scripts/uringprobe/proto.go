//go:build linux && (amd64 || arm64)

package main

import (
	"encoding/binary"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The FUSE protocol pieces the probe needs (include/uapi/linux/fuse.h). All little endian on
// the machines this runs on; the probe only builds for Linux.
const (
	opLookup      = 1
	opForget      = 2
	opGetattr     = 3
	opOpen        = 14
	opRead        = 15
	opRelease     = 18
	opGetxattr    = 22
	opFlush       = 25
	opInit        = 26
	opInterrupt   = 36
	opBatchForget = 42

	inHeaderSize  = 40 // struct fuse_in_header
	outHeaderSize = 16 // struct fuse_out_header
	attrSize      = 88 // struct fuse_attr

	initAsyncRead      = 1 << 0
	initBigWrites      = 1 << 5
	initParallelDirops = 1 << 18
	initExt            = 1 << 30
	initOverIOUring    = 1 << 41 // FUSE_OVER_IO_URING, protocol 7.42; in flags2 as bit 9

	fopenDirectIO = 1 << 0

	rootID = 1
	fileID = 2
)

// The trivial tree every transport serves: a root directory holding one file of 1 KB with one
// extended attribute. Attributes and names are valid for an hour, so after the first lookup
// the kernel sends only the requests measured.
const (
	fileName  = "file"
	xattrName = "user.probe"
	xattrVal  = "uring-probe-value"
	fileBytes = 1024
	validSecs = 3600
)

// fileData is the file's content: a pattern a short or shifted read cannot match by chance.
var fileData = func() []byte {
	b := make([]byte, fileBytes)
	for i := range b {
		b[i] = byte('a' + (i*7+i/26)%26)
	}
	return b
}()

// opInSize is the size of each request's fixed per-operation header (in_args[0]): io_uring
// carries it apart from the rest of the request (op_in in struct fuse_uring_req_header), the
// classic transport in one buffer, so the classic loop splits at this size.
var opInSize = map[uint32]int{
	opLookup:   0,
	opGetattr:  16, // fuse_getattr_in
	opOpen:     8,  // fuse_open_in
	opRead:     40, // fuse_read_in
	opRelease:  24, // fuse_release_in
	opGetxattr: 8,  // fuse_getxattr_in
	opFlush:    24, // fuse_flush_in
}

// inHeader is struct fuse_in_header, the fields the probe uses.
type inHeader struct {
	len    uint32
	opcode uint32
	unique uint64
	nodeid uint64
}

func parseInHeader(b []byte) inHeader {
	return inHeader{
		len:    binary.LittleEndian.Uint32(b[0:]),
		opcode: binary.LittleEndian.Uint32(b[4:]),
		unique: binary.LittleEndian.Uint64(b[8:]),
		nodeid: binary.LittleEndian.Uint64(b[16:]),
	}
}

// putOutHeader writes struct fuse_out_header.
func putOutHeader(b []byte, length uint32, errno unix.Errno, unique uint64) {
	binary.LittleEndian.PutUint32(b[0:], length)
	binary.LittleEndian.PutUint32(b[4:], uint32(-int32(errno)))
	binary.LittleEndian.PutUint64(b[8:], unique)
}

// trivialFS answers the requests of the tree above, writing each reply into out (large enough
// for any of them) and saying its length; noReply is set for the requests the kernel expects
// no answer to. It keeps no state: every transport shares one.
type trivialFS struct {
	served atomic.Int64 // requests answered, FORGETs included
}

func putAttr(b []byte, nodeid uint64) {
	clear(b[:attrSize])
	le := binary.LittleEndian
	le.PutUint64(b[0:], nodeid) // ino
	mode, nlink, size := uint32(unix.S_IFDIR|0o755), uint32(2), uint64(0)
	if nodeid == fileID {
		mode, nlink, size = unix.S_IFREG|0o644, 1, fileBytes
	}
	le.PutUint64(b[8:], size)
	le.PutUint64(b[16:], (size+511)/512) // blocks
	le.PutUint32(b[60:], mode)
	le.PutUint32(b[64:], nlink)
	le.PutUint32(b[68:], uint32(unix.Getuid()))
	le.PutUint32(b[72:], uint32(unix.Getgid()))
	le.PutUint32(b[80:], 4096) // blksize
}

func (f *trivialFS) handle(h inHeader, opIn, payload, out []byte) (n int, errno unix.Errno, noReply bool) {
	f.served.Add(1)
	le := binary.LittleEndian
	switch h.opcode {
	case opForget, opBatchForget, opInterrupt:
		return 0, 0, true
	case opLookup:
		name := payload
		if i := indexNUL(name); i >= 0 {
			name = name[:i]
		}
		if h.nodeid != rootID || string(name) != fileName {
			return 0, unix.ENOENT, false
		}
		clear(out[:40])
		le.PutUint64(out[0:], fileID)
		le.PutUint64(out[16:], validSecs) // entry_valid
		le.PutUint64(out[24:], validSecs) // attr_valid
		putAttr(out[40:], fileID)
		return 40 + attrSize, 0, false
	case opGetattr:
		if h.nodeid != rootID && h.nodeid != fileID {
			return 0, unix.ENOENT, false
		}
		clear(out[:16])
		le.PutUint64(out[0:], validSecs)
		putAttr(out[16:], h.nodeid)
		return 16 + attrSize, 0, false
	case opOpen:
		if h.nodeid != fileID {
			return 0, unix.EISDIR, false
		}
		clear(out[:16])
		le.PutUint32(out[8:], fopenDirectIO) // every read is a READ request
		return 16, 0, false
	case opRead:
		if len(opIn) < 20 || h.nodeid != fileID {
			return 0, unix.EINVAL, false
		}
		off, size := le.Uint64(opIn[8:]), uint64(le.Uint32(opIn[16:]))
		if off >= fileBytes {
			return 0, 0, false
		}
		end := min(off+size, fileBytes)
		return copy(out, fileData[off:end]), 0, false
	case opRelease, opFlush:
		return 0, 0, false
	case opGetxattr:
		if len(opIn) < 4 {
			return 0, unix.EINVAL, false
		}
		name := payload
		if i := indexNUL(name); i >= 0 {
			name = name[:i]
		}
		if h.nodeid != fileID || string(name) != xattrName {
			return 0, unix.ENODATA, false
		}
		size := le.Uint32(opIn[0:])
		if size == 0 {
			clear(out[:8])
			le.PutUint32(out[0:], uint32(len(xattrVal)))
			return 8, 0, false
		}
		if int(size) < len(xattrVal) {
			return 0, unix.ERANGE, false
		}
		return copy(out, xattrVal), 0, false
	}
	return 0, unix.ENOSYS, false
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// initReply answers FUSE_INIT (body is struct fuse_init_in) into out, asking for the io_uring
// transport when withURing is set. It returns the reply's length and whether the kernel
// offered io_uring (it does only while enable_uring is on).
func initReply(body, out []byte, withURing bool, maxWrite uint32) (n int, offered bool, errno unix.Errno) {
	le := binary.LittleEndian
	if len(body) < 16 {
		return 0, false, unix.EINVAL
	}
	major, minor := le.Uint32(body[0:]), le.Uint32(body[4:])
	if major != 7 || minor < 36 {
		return 0, false, unix.EPROTO
	}
	kflags := uint64(le.Uint32(body[12:]))
	if len(body) >= 20 && kflags&initExt != 0 {
		kflags |= uint64(le.Uint32(body[16:])) << 32
	}
	offered = kflags&initOverIOUring != 0
	want := uint64(initAsyncRead | initBigWrites | initParallelDirops | initExt)
	if withURing && offered {
		want |= initOverIOUring
	}
	want &= kflags | initExt
	clear(out[:64])
	le.PutUint32(out[0:], 7)
	le.PutUint32(out[4:], min(minor, 42))
	le.PutUint32(out[8:], le.Uint32(body[8:])) // max_readahead as offered
	le.PutUint32(out[12:], uint32(want))
	le.PutUint16(out[16:], 12)       // max_background
	le.PutUint16(out[18:], 9)        // congestion_threshold
	le.PutUint32(out[20:], maxWrite) // max_write
	le.PutUint32(out[24:], 1)        // time_gran
	le.PutUint32(out[32:], uint32(want>>32))
	return 64, offered, 0
}

package seal

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// gzipHeader is what Python's gzip.compress(data, 9, mtime=0) writes via
// zlib: no flags, mtime 0, XFL 2 (maximum compression) and OS 0x13. kint's
// vectors were produced where zlib reports OS 19 (macOS), and byte-identical
// blobs need the same byte; readers ignore it.
var gzipHeader = [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0x13}

// Compress gzips plaintext exactly as kint does (zlib level 9, mtime 0).
func Compress(plaintext []byte) []byte {
	return compressOn(newDeflater(), plaintext)
}

// compressOn is Compress on d, a compressor in its initial state, which it frees.
func compressOn(d *deflater, plaintext []byte) []byte {
	spare := d.bw.out
	d.bw.out = make([]byte, 0, len(plaintext)/3+64)
	d.bw.out = append(d.bw.out, gzipHeader[:]...)
	d.in = plaintext
	d.finish()
	out := appendGzipTrailer(d.bw.out, d.crc, d.total)
	d.bw.out = spare // the caller's from here
	freeDeflater(d)
	return out
}

func appendGzipTrailer(dst []byte, crc, size uint32) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, crc)
	return binary.LittleEndian.AppendUint32(dst, size)
}

// errDecompressLimit is returned when the output would pass the caller's limit.
var errDecompressLimit = errors.New("gzip payload decompresses past the limit")

// Decompress inflates one gzip member of at most limit bytes of output. Any
// bytes after the member are refused.
func Decompress(gz []byte, limit int) ([]byte, error) {
	br := bytes.NewReader(gz)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	zr.Multistream(false)
	var out bytes.Buffer
	n, err := io.Copy(&out, io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	if n > int64(limit) {
		return nil, errDecompressLimit
	}
	if err := zr.Close(); err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	if br.Len() != 0 {
		return nil, fmt.Errorf("gunzip: %d bytes after the gzip member", br.Len())
	}
	return out.Bytes(), nil
}

// gzipStream compresses incrementally. Its size after close is exactly
// len(Compress(everything written)), and a clone can be closed to measure a
// prefix without disturbing the stream.
type gzipStream struct {
	d       *deflater
	outBase int // bytes emitted before this clone was taken (clones only)
}

func newGzipStream() *gzipStream {
	d := newDeflater()
	d.bw.out = append(d.bw.out, gzipHeader[:]...)
	return &gzipStream{d: d}
}

func (g *gzipStream) write(p []byte) { g.d.write(p) }

// free gives the stream's compressor back to the pool; g is not used after.
func (g *gzipStream) free() {
	freeDeflater(g.d)
	g.d = nil
}

// clone snapshots the stream for measuring; it does not share mutable state
// with g, and it keeps none of g's output bytes.
func (g *gzipStream) clone() *gzipStream {
	return g.cloneInto(nil)
}

// cloneInto is clone made in the memory of spare (a stream cloneInto or clone made before,
// whose measurement is over; nil: new memory), so that measuring near a limit allocates
// nothing. spare must not be g.
func (g *gzipStream) cloneInto(spare *gzipStream) *gzipStream {
	if spare == nil {
		spare = &gzipStream{d: bareDeflater()}
	}
	spare.d.snapshotFrom(g.d)
	spare.outBase = g.outBase + len(g.d.bw.out)
	return spare
}

// closedSize is the stream's total compressed size once closed. It spends the stream: only a
// clone made to measure is closed so.
func (g *gzipStream) closedSize() int {
	return g.outBase + g.d.finishedSize() + 8
}

// estimate approximates the size the stream would have if closed now:
// emitted bytes, the open block costed with its own trees, the unprocessed
// lookahead at a byte each, and the trailer. On text it comes out a few
// hundred bytes high at most and only rarely a few bytes low; callers
// confirm with a clone before relying on it near a limit.
func (g *gzipStream) estimate(t *trees) int {
	block := 0
	if g.d.syms.n > 0 {
		block = t.blockBytes(&g.d.syms)
	}
	return g.closingWith(block)
}

// bound is never less than estimate, worked out without building a tree: the open block is
// costed with the fixed trees (see symbolBuffer.staticBytes).
func (g *gzipStream) bound() int {
	block := 0
	if g.d.syms.n > 0 {
		block = g.d.syms.staticBytes()
	}
	return g.closingWith(block)
}

// closingWith is the stream's size if closed now with its open block taking block bytes:
// emitted bytes, that block, the unprocessed lookahead at a byte each, and the trailer.
func (g *gzipStream) closingWith(block int) int {
	d := g.d
	n := g.outBase + d.bw.size() + 8 + block + d.lookahead
	if d.matchAvailable {
		n++
	}
	return n
}

package seal

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
	"sync"
	"unsafe"
)

// kint compresses with zlib at level 9 (Python's gzip.compress), and the test
// vectors pin the exact compressed bytes. compress/flate produces a different
// (equally valid) stream, so this file reproduces zlib's level-9 algorithm:
// windowBits 15, memLevel 8, the default strategy, lazy matching with
// good=32, lazy=258, nice=258, chain=4096. Every choice that can change the
// output (hash function, window sliding, match search order, block
// boundaries, tree construction) follows zlib; only the memory layout is Go's.

const (
	zWSize       = 1 << 15
	zWMask       = zWSize - 1
	zWindowSize  = 2 * zWSize
	zHashBits    = 15
	zHashSize    = 1 << zHashBits
	zHashMask    = zHashSize - 1
	zHashShift   = (zHashBits + zMinMatch - 1) / zMinMatch
	zMinMatch    = 3
	zMaxMatch    = 258
	zMinLook     = zMaxMatch + zMinMatch + 1
	zMaxDist     = zWSize - zMinLook
	zWinInit     = zMaxMatch
	zTooFar      = 4096
	zGoodMatch   = 32
	zMaxLazy     = 258
	zNiceMatch   = 258
	zMaxChain    = 4096
	zLitBufSize  = 1 << (8 + 6)
	zBlockSymbol = zLitBufSize - 1 // a block is flushed after this many symbols
)

// deflater holds the whole compressor state in fixed arrays, so that copying it (snapshotFrom)
// makes an independent snapshot: the chunker measures a stream's size as if closed on one.
//
// As in zlib, only the hash heads start cleared. A byte of the window past highWater is
// written or zeroed before anything reads it (fillWindow), a hash chain link is read only at a
// position that was inserted, and a symbol only below syms.n: what a pooled compressor left
// there from its last stream can never reach the output.
type deflater struct {
	window [zWindowSize]byte
	prev   [zWSize]uint16
	head   [zHashSize]uint16
	syms   symbolBuffer
	deflateState
}

// deflateState is the compressor's state apart from its arrays: small, copied whole.
type deflateState struct {
	highWater  int
	strstart   int
	lookahead  int
	blockStart int // may go negative after a slide: the block start left the window
	insert     int
	insH       uint32

	matchLength    int
	prevLength     int
	prevMatch      int
	matchStart     int
	matchAvailable bool

	in    []byte // caller input not yet copied into the window
	crc   uint32
	total uint32

	bw bitWriter
	t  *trees // scratch for building a block's trees
}

// deflaters keeps compressors between uses: one is a few hundred KB of arrays, and a flush
// seals an epoch or two a millisecond, each with a stream to cut it and one to seal it.
var deflaters = sync.Pool{New: func() any { return bareDeflater() }}

// bareDeflater is new memory for a compressor, with its scratch trees: reset or snapshotFrom
// puts it in a state to use.
func bareDeflater() *deflater { return &deflater{deflateState: deflateState{t: &trees{}}} }

// newDeflater is a compressor in its initial state, from the pool when it has one: its state
// as a new one has it, the hash heads cleared, but the block's scratch trees (rebuilt for each
// block) and the capacity of its output buffer kept, and the rest of its arrays as its last
// stream left them (see deflater).
func newDeflater() *deflater {
	d := deflaters.Get().(*deflater)
	d.reset()
	return d
}

// reset puts d in its initial state, as newDeflater describes.
func (d *deflater) reset() {
	d.deflateState = deflateState{t: d.t, bw: bitWriter{out: d.bw.out[:0]}}
	clear(d.head[:])
	d.matchLength = zMinMatch - 1
	d.prevLength = zMinMatch - 1
	d.syms.reset()
}

// snapshotFrom makes d an independent copy of s, copying of the arrays only what s can still
// read (see deflater): the window to its high-water mark, the hash chains of the positions
// below it (all of them once the window may have slid) and the open block's symbols. d keeps
// its own scratch trees and output buffer, emptied: a snapshot holds none of s's output.
func (d *deflater) snapshotFrom(s *deflater) {
	t, out := d.t, d.bw.out[:0]
	d.deflateState = s.deflateState
	d.t, d.bw.out = t, out
	hw := s.highWater
	copy(d.window[:hw], s.window[:hw])
	chains := zWSize // once the window may have slid, every link may be read
	if hw <= zWSize {
		chains = hw
	}
	copy(d.prev[:chains], s.prev[:chains])
	d.head = s.head
	d.syms.copyFrom(&s.syms)
}

// freeDeflater gives d back to the pool; nothing may use it, or the input it was given,
// after. Output handed to a caller must have been taken out of it first.
func freeDeflater(d *deflater) {
	d.in = nil
	deflaters.Put(d)
}

func (d *deflater) updateHash(h uint32, c byte) uint32 {
	return ((h << zHashShift) ^ uint32(c)) & zHashMask
}

// insertString links the string at str into its hash chain and returns the
// previous head of that chain.
func (d *deflater) insertString(str int) int {
	d.insH = d.updateHash(d.insH, d.window[str+zMinMatch-1])
	h := d.head[d.insH]
	d.prev[str&zWMask] = h
	d.head[d.insH] = uint16(str)
	return int(h)
}

func (d *deflater) slideHash() {
	for i, m := range d.head {
		if int(m) >= zWSize {
			d.head[i] = m - zWSize
		} else {
			d.head[i] = 0
		}
	}
	for i, m := range d.prev {
		if int(m) >= zWSize {
			d.prev[i] = m - zWSize
		} else {
			d.prev[i] = 0
		}
	}
}

func (d *deflater) readInput(dst []byte) int {
	n := copy(dst, d.in)
	d.crc = crc32.Update(d.crc, crc32.IEEETable, dst[:n])
	d.total += uint32(n)
	d.in = d.in[n:]
	return n
}

// fillWindow reads input when the lookahead runs short, sliding the window
// down by 32 KiB when the current position nears its end.
func (d *deflater) fillWindow() {
	for {
		more := zWindowSize - d.lookahead - d.strstart
		if d.strstart >= zWSize+zMaxDist {
			copy(d.window[:zWSize-more], d.window[zWSize:2*zWSize-more])
			d.matchStart -= zWSize
			d.strstart -= zWSize
			d.blockStart -= zWSize
			if d.insert > d.strstart {
				d.insert = d.strstart
			}
			d.slideHash()
			more += zWSize
		}
		if len(d.in) == 0 {
			break
		}
		pos := d.strstart + d.lookahead
		d.lookahead += d.readInput(d.window[pos : pos+more])

		if d.lookahead+d.insert >= zMinMatch {
			str := d.strstart - d.insert
			d.insH = uint32(d.window[str])
			d.insH = d.updateHash(d.insH, d.window[str+1])
			for d.insert > 0 {
				d.insH = d.updateHash(d.insH, d.window[str+zMinMatch-1])
				d.prev[str&zWMask] = d.head[d.insH]
				d.head[d.insH] = uint16(str)
				str++
				d.insert--
				if d.lookahead+d.insert < zMinMatch {
					break
				}
			}
		}
		if d.lookahead >= zMinLook || len(d.in) == 0 {
			break
		}
	}
	// Bytes just past the data are zeroed the first time they can be read,
	// as zlib does; the match search may look at them (never to the output's
	// detriment, but they must be the same bytes zlib would see).
	if d.highWater < zWindowSize {
		curr := d.strstart + d.lookahead
		if d.highWater < curr {
			init := min(zWindowSize-curr, zWinInit)
			clear(d.window[curr : curr+init])
			d.highWater = curr + init
		} else if d.highWater < curr+zWinInit {
			init := min(curr+zWinInit-d.highWater, zWindowSize-d.highWater)
			clear(d.window[d.highWater : d.highWater+init])
			d.highWater += init
		}
	}
}

// longestMatch walks the hash chain from curMatch and returns the length of
// the longest match (capped at the lookahead), setting matchStart.
func (d *deflater) longestMatch(curMatch int) int {
	chain := zMaxChain
	win := &d.window
	scan := d.strstart
	bestLen := d.prevLength
	nice := zNiceMatch
	limit := 0
	if d.strstart > zMaxDist {
		limit = d.strstart - zMaxDist
	}
	// The last two bytes of the best match so far and the first two of the string, each
	// compared as one 16-bit load: zlib's tests, in fewer instructions.
	scanEnd := window16(win, scan+bestLen-1)
	if d.prevLength >= zGoodMatch {
		chain >>= 2
	}
	if nice > d.lookahead {
		nice = d.lookahead
	}
	start := window16(win, scan)
	tail := win[scan+3 : scan+zMaxMatch]
	prev := &d.prev
	for {
		m := curMatch
		if window16(win, m+bestLen-1) == scanEnd && window16(win, m) == start {
			// Byte 2 equals by construction of the hash, as zlib assumes.
			n := 3 + commonPrefix(win[m+3:m+zMaxMatch], tail)
			if n > bestLen {
				d.matchStart = curMatch
				bestLen = n
				if n >= nice {
					break
				}
				scanEnd = window16(win, scan+bestLen-1)
			}
		}
		curMatch = int(prev[curMatch&zWMask])
		if curMatch <= limit {
			break
		}
		chain--
		if chain == 0 {
			break
		}
	}
	if bestLen <= d.lookahead {
		return bestLen
	}
	return d.lookahead
}

// window16 is the two window bytes at i and i+1 as one load, for comparing with another such
// load only (the byte order is the machine's). It checks no bounds: the hash chain walk, most
// of a flush's time, makes four such loads per candidate. zlib keeps every string it compares
// inside the window (strstart <= zWindowSize-zMinLook, a match at most zMaxMatch long), so
// i+1 < zWindowSize; the mask keeps even a broken invariant inside the deflater, whose prev
// follows the window.
func window16(w *[zWindowSize]byte, i int) uint16 {
	return *(*uint16)(unsafe.Pointer(&w[i&(zWindowSize-1)]))
}

// commonPrefix returns how many leading bytes a and b share (len(a) == len(b)).
func commonPrefix(a, b []byte) int {
	n := 0
	for len(a)-n >= 8 {
		x := binary.LittleEndian.Uint64(a[n:]) ^ binary.LittleEndian.Uint64(b[n:])
		if x != 0 {
			return n + bits.TrailingZeros64(x)/8
		}
		n += 8
	}
	for n < len(a) && a[n] == b[n] {
		n++
	}
	return n
}

// run is zlib's deflate_slow. Without finish it stops when it needs more
// input; with finish it drains everything and writes the last block, or, with sizeOnly,
// returns the stream's size once that block is written (and writes none).
func (d *deflater) run(finish, sizeOnly bool) int {
	for {
		if d.lookahead < zMinLook {
			d.fillWindow()
			if d.lookahead < zMinLook && !finish {
				return 0
			}
			if d.lookahead == 0 {
				break
			}
		}
		hashHead := 0
		if d.lookahead >= zMinMatch {
			hashHead = d.insertString(d.strstart)
		}
		d.prevLength, d.prevMatch = d.matchLength, d.matchStart
		d.matchLength = zMinMatch - 1
		if hashHead != 0 && d.prevLength < zMaxLazy && d.strstart-hashHead <= zMaxDist {
			d.matchLength = d.longestMatch(hashHead)
			// A 3-byte match far away costs more than three literals.
			if d.matchLength == zMinMatch && d.strstart-d.matchStart > zTooFar {
				d.matchLength = zMinMatch - 1
			}
		}
		switch {
		case d.prevLength >= zMinMatch && d.matchLength <= d.prevLength:
			maxInsert := d.strstart + d.lookahead - zMinMatch
			flush := d.syms.tallyDist(d.strstart-1-d.prevMatch, d.prevLength-zMinMatch)
			d.lookahead -= d.prevLength - 1
			for n := d.prevLength - 2; n > 0; n-- {
				d.strstart++
				if d.strstart <= maxInsert {
					d.insertString(d.strstart)
				}
			}
			d.matchAvailable = false
			d.matchLength = zMinMatch - 1
			d.strstart++
			if flush {
				d.flushBlock(false)
			}
		case d.matchAvailable:
			if d.syms.tallyLit(d.window[d.strstart-1]) {
				d.flushBlock(false)
			}
			d.strstart++
			d.lookahead--
		default:
			d.matchAvailable = true
			d.strstart++
			d.lookahead--
		}
	}
	if d.matchAvailable {
		d.syms.tallyLit(d.window[d.strstart-1])
		d.matchAvailable = false
	}
	d.insert = min(d.strstart, zMinMatch-1)
	if sizeOnly {
		return d.bw.lastBlockSize(d.t, &d.syms, d.stored(), d.blockStart >= 0)
	}
	d.flushBlock(true)
	return len(d.bw.out)
}

// stored is the open block's input, when it is still in the window (for a stored block).
func (d *deflater) stored() []byte {
	if d.blockStart >= 0 {
		return d.window[d.blockStart:d.strstart]
	}
	return nil
}

func (d *deflater) flushBlock(last bool) {
	d.bw.flushBlock(d.t, &d.syms, d.stored(), d.blockStart >= 0, last)
	d.blockStart = d.strstart
}

// write feeds input and compresses as far as it can without finishing.
func (d *deflater) write(p []byte) {
	d.in = p
	d.run(false, false)
	d.in = nil
}

// finish compresses what is left and closes the stream.
func (d *deflater) finish() {
	d.run(true, false)
}

// finishedSize is the stream's length in bytes once finished, leaving d only fit to be freed
// or overwritten: its last block is counted, not written.
func (d *deflater) finishedSize() int {
	return d.run(true, true)
}

package seal

// Huffman coding and block emission for the deflater, following zlib's
// trees.c: the same heap order and tie-breaks, the same bit-length overflow
// repair and the same choice between stored, fixed and dynamic blocks, so
// that the bits come out identical.

const (
	zLiterals   = 256
	zEndBlock   = 256
	zLengthCode = 29
	zLCodes     = zLiterals + 1 + zLengthCode // 286
	zDCodes     = 30
	zBLCodes    = 19
	zHeapSize   = 2*zLCodes + 1
	zMaxBits    = 15
	zMaxBLBits  = 7
	zRep3to6    = 16
	zRepZ3to10  = 17
	zRepZ11to   = 18
)

var (
	zExtraLBits  = [zLengthCode]int{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	zExtraDBits  = [zDCodes]int{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	zExtraBLBits = [zBLCodes]int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 7}
	zBLOrder     = [zBLCodes]int{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

// zTables are the constant lookup tables, computed once at start-up and
// never written afterwards.
type zTables struct {
	lengthCode [zMaxMatch - zMinMatch + 1]uint8
	distCode   [512]uint8
	baseLength [zLengthCode]int
	baseDist   [zDCodes]int
	staticLLen [zLCodes + 2]int
	staticLCod [zLCodes + 2]uint16
	staticDLen [zDCodes]int
	staticDCod [zDCodes]uint16
}

var zt = buildZTables()

func buildZTables() *zTables {
	t := &zTables{}
	length := 0
	code := 0
	for code = 0; code < zLengthCode-1; code++ {
		t.baseLength[code] = length
		for n := 0; n < 1<<zExtraLBits[code]; n++ {
			t.lengthCode[length] = uint8(code)
			length++
		}
	}
	// Length 258 has two encodings; zlib uses code 285.
	t.lengthCode[length-1] = uint8(code)

	dist := 0
	for code = 0; code < 16; code++ {
		t.baseDist[code] = dist
		for n := 0; n < 1<<zExtraDBits[code]; n++ {
			t.distCode[dist] = uint8(code)
			dist++
		}
	}
	dist >>= 7
	for ; code < zDCodes; code++ {
		t.baseDist[code] = dist << 7
		for n := 0; n < 1<<(zExtraDBits[code]-7); n++ {
			t.distCode[256+dist] = uint8(code)
			dist++
		}
	}

	var blCount [zMaxBits + 1]int
	for n := 0; n < zLCodes+2; n++ {
		l := 8
		switch {
		case n <= 143:
			l = 8
		case n <= 255:
			l = 9
		case n <= 279:
			l = 7
		}
		t.staticLLen[n] = l
		blCount[l]++
	}
	genCodes(t.staticLLen[:], t.staticLCod[:], zLCodes+1, &blCount)
	for n := 0; n < zDCodes; n++ {
		t.staticDLen[n] = 5
		t.staticDCod[n] = uint16(reverseBits(n, 5))
	}
	return t
}

func dCode(dist int) int {
	if dist < 256 {
		return int(zt.distCode[dist])
	}
	return int(zt.distCode[256+(dist>>7)])
}

func reverseBits(code, n int) int {
	res := 0
	for ; n > 0; n-- {
		res = res<<1 | code&1
		code >>= 1
	}
	return res
}

// genCodes assigns canonical codes (bit-reversed for LSB-first output) from
// the code lengths.
func genCodes(lens []int, codes []uint16, maxCode int, blCount *[zMaxBits + 1]int) {
	var next [zMaxBits + 1]int
	code := 0
	for b := 1; b <= zMaxBits; b++ {
		code = (code + blCount[b-1]) << 1
		next[b] = code
	}
	for n := 0; n <= maxCode; n++ {
		l := lens[n]
		if l == 0 {
			continue
		}
		codes[n] = uint16(reverseBits(next[l], l))
		next[l]++
	}
}

// symbolBuffer is the current block: its symbols and their frequencies.
type symbolBuffer struct {
	dist  [zBlockSymbol]uint16
	lc    [zBlockSymbol]uint8
	n     int
	lfreq [zLCodes]int
	dfreq [zDCodes]int
}

func (s *symbolBuffer) reset() {
	s.n = 0
	clear(s.lfreq[:])
	clear(s.dfreq[:])
	s.lfreq[zEndBlock] = 1
}

// copyFrom makes s a copy of o as far as o can be read: its symbols below o.n.
func (s *symbolBuffer) copyFrom(o *symbolBuffer) {
	copy(s.dist[:o.n], o.dist[:o.n])
	copy(s.lc[:o.n], o.lc[:o.n])
	s.n, s.lfreq, s.dfreq = o.n, o.lfreq, o.dfreq
}

// staticBytes is the size in bytes, header bits included, of the block in s coded with the
// fixed trees: never less than blockBytes, which takes the smaller of that and its own trees,
// and worked out from the frequencies alone, without building a tree.
func (s *symbolBuffer) staticBytes() int {
	bits := zLDesc.staticBits(s.lfreq[:]) + zDDesc.staticBits(s.dfreq[:])
	return (bits + 3 + 7) >> 3
}

// staticBits is what symbols of the frequencies freq cost coded with the tree's fixed code,
// extra bits included.
func (desc *treeDesc) staticBits(freq []int) int {
	bits := 0
	for n, f := range freq {
		if f != 0 {
			bits += f * (desc.staticLen[n] + desc.extraBits(n))
		}
	}
	return bits
}

// tallyLit records a literal and reports whether the block is full.
func (s *symbolBuffer) tallyLit(c byte) bool {
	s.dist[s.n] = 0
	s.lc[s.n] = c
	s.n++
	s.lfreq[c]++
	return s.n == zBlockSymbol
}

// tallyDist records a match (length already less 3) and reports whether the
// block is full.
func (s *symbolBuffer) tallyDist(dist, lenMinus3 int) bool {
	s.dist[s.n] = uint16(dist)
	s.lc[s.n] = uint8(lenMinus3)
	s.n++
	s.lfreq[int(zt.lengthCode[lenMinus3])+zLiterals+1]++
	s.dfreq[dCode(dist-1)]++
	return s.n == zBlockSymbol
}

// ctree is one Huffman tree under construction: leaves first, then the
// internal nodes.
type ctree struct {
	freq    [zHeapSize]int
	dad     [zHeapSize]int
	len     [zHeapSize]int
	code    [zHeapSize]uint16
	maxCode int
}

type treeDesc struct {
	elems     int
	maxLength int
	extra     []int
	extraBase int
	staticLen []int // nil for the bit-length tree
}

var (
	zLDesc  = treeDesc{elems: zLCodes, maxLength: zMaxBits, extra: zExtraLBits[:], extraBase: zLiterals + 1}
	zDDesc  = treeDesc{elems: zDCodes, maxLength: zMaxBits, extra: zExtraDBits[:]}
	zBLDesc = treeDesc{elems: zBLCodes, maxLength: zMaxBLBits, extra: zExtraBLBits[:]}
)

// extraBits is how many extra bits follow the code of symbol n.
func (desc *treeDesc) extraBits(n int) int {
	if n < desc.extraBase {
		return 0
	}
	return desc.extra[n-desc.extraBase]
}

func init() {
	zLDesc.staticLen = zt.staticLLen[:]
	zDDesc.staticLen = zt.staticDLen[:]
}

// trees is the scratch space for building one block's three trees.
type trees struct {
	l, d, bl   ctree
	heap       [zHeapSize]int
	heapLen    int
	heapMax    int
	depth      [zHeapSize]uint8
	blCount    [zMaxBits + 1]int
	optLen     int
	staticLen  int
	maxBLIndex int
}

func (t *trees) smaller(tr *ctree, n, m int) bool {
	return tr.freq[n] < tr.freq[m] || (tr.freq[n] == tr.freq[m] && t.depth[n] <= t.depth[m])
}

func (t *trees) downHeap(tr *ctree, k int) {
	v := t.heap[k]
	j := k << 1
	for j <= t.heapLen {
		if j < t.heapLen && t.smaller(tr, t.heap[j+1], t.heap[j]) {
			j++
		}
		if t.smaller(tr, v, t.heap[j]) {
			break
		}
		t.heap[k] = t.heap[j]
		k = j
		j <<= 1
	}
	t.heap[k] = v
}

func (t *trees) genBitLen(tr *ctree, desc *treeDesc) {
	clear(t.blCount[:])
	tr.len[t.heap[t.heapMax]] = 0
	overflow := 0
	h := t.heapMax + 1
	for ; h < zHeapSize; h++ {
		n := t.heap[h]
		b := tr.len[tr.dad[n]] + 1
		if b > desc.maxLength {
			b = desc.maxLength
			overflow++
		}
		tr.len[n] = b
		if n > tr.maxCode {
			continue
		}
		t.blCount[b]++
		xbits := desc.extraBits(n)
		f := tr.freq[n]
		t.optLen += f * (b + xbits)
		if desc.staticLen != nil {
			t.staticLen += f * (desc.staticLen[n] + xbits)
		}
	}
	if overflow == 0 {
		return
	}
	// Some codes came out longer than allowed: move leaves down the tree
	// until the lengths fit, then hand the lengths out again by frequency.
	for overflow > 0 {
		b := desc.maxLength - 1
		for t.blCount[b] == 0 {
			b--
		}
		t.blCount[b]--
		t.blCount[b+1] += 2
		t.blCount[desc.maxLength]--
		overflow -= 2
	}
	for b := desc.maxLength; b != 0; b-- {
		n := t.blCount[b]
		for n != 0 {
			h--
			m := t.heap[h]
			if m > tr.maxCode {
				continue
			}
			if tr.len[m] != b {
				t.optLen += (b - tr.len[m]) * tr.freq[m]
				tr.len[m] = b
			}
			n--
		}
	}
}

func (t *trees) buildTree(tr *ctree, desc *treeDesc) {
	elems := desc.elems
	maxCode := -1
	t.heapLen = 0
	t.heapMax = zHeapSize
	for n := 0; n < elems; n++ {
		if tr.freq[n] != 0 {
			t.heapLen++
			t.heap[t.heapLen] = n
			maxCode = n
			t.depth[n] = 0
		} else {
			tr.len[n] = 0
		}
	}
	// Deflate wants at least two codes in every tree.
	for t.heapLen < 2 {
		node := 0
		if maxCode < 2 {
			maxCode++
			node = maxCode
		}
		t.heapLen++
		t.heap[t.heapLen] = node
		tr.freq[node] = 1
		t.depth[node] = 0
		t.optLen--
		if desc.staticLen != nil {
			t.staticLen -= desc.staticLen[node]
		}
	}
	tr.maxCode = maxCode

	for n := t.heapLen / 2; n >= 1; n-- {
		t.downHeap(tr, n)
	}
	node := elems
	for {
		n := t.heap[1]
		t.heap[1] = t.heap[t.heapLen]
		t.heapLen--
		t.downHeap(tr, 1)
		m := t.heap[1]

		t.heapMax--
		t.heap[t.heapMax] = n
		t.heapMax--
		t.heap[t.heapMax] = m

		tr.freq[node] = tr.freq[n] + tr.freq[m]
		dn, dm := t.depth[n], t.depth[m]
		if dn < dm {
			dn = dm
		}
		t.depth[node] = dn + 1
		tr.dad[n] = node
		tr.dad[m] = node
		t.heap[1] = node
		node++
		t.downHeap(tr, 1)
		if t.heapLen < 2 {
			break
		}
	}
	t.heapMax--
	t.heap[t.heapMax] = t.heap[1]

	t.genBitLen(tr, desc)
	genCodes(tr.len[:], tr.code[:], maxCode, &t.blCount)
}

// scanTree counts the bit-length codes needed to send tr.
func (t *trees) scanTree(tr *ctree) {
	maxCode := tr.maxCode
	prevLen := -1
	nextLen := tr.len[0]
	count := 0
	maxCount, minCount := 7, 4
	if nextLen == 0 {
		maxCount, minCount = 138, 3
	}
	tr.len[maxCode+1] = 0xffff // guard
	for n := 0; n <= maxCode; n++ {
		curLen := nextLen
		nextLen = tr.len[n+1]
		count++
		if count < maxCount && curLen == nextLen {
			continue
		} else if count < minCount {
			t.bl.freq[curLen] += count
		} else if curLen != 0 {
			if curLen != prevLen {
				t.bl.freq[curLen]++
			}
			t.bl.freq[zRep3to6]++
		} else if count <= 10 {
			t.bl.freq[zRepZ3to10]++
		} else {
			t.bl.freq[zRepZ11to]++
		}
		count = 0
		prevLen = curLen
		switch {
		case nextLen == 0:
			maxCount, minCount = 138, 3
		case curLen == nextLen:
			maxCount, minCount = 6, 3
		default:
			maxCount, minCount = 7, 4
		}
	}
}

// build constructs the literal/length, distance and bit-length trees for the
// block in s and leaves the dynamic and fixed sizes in optLen and staticLen.
func (t *trees) build(s *symbolBuffer) {
	t.optLen, t.staticLen = 0, 0
	copy(t.l.freq[:zLCodes], s.lfreq[:])
	copy(t.d.freq[:zDCodes], s.dfreq[:])
	clear(t.bl.freq[:zBLCodes])
	t.buildTree(&t.l, &zLDesc)
	t.buildTree(&t.d, &zDDesc)
	t.scanTree(&t.l)
	t.scanTree(&t.d)
	t.buildTree(&t.bl, &zBLDesc)
	maxBL := zBLCodes - 1
	for ; maxBL >= 3; maxBL-- {
		if t.bl.len[zBLOrder[maxBL]] != 0 {
			break
		}
	}
	t.optLen += 3*(maxBL+1) + 5 + 5 + 4
	t.maxBLIndex = maxBL
}

// blockBytes is the size in bytes, header bits included, that flushBlock
// would spend on the block in s, rounded up (no stored option counted).
func (t *trees) blockBytes(s *symbolBuffer) int {
	t.build(s)
	return min((t.optLen+3+7)>>3, (t.staticLen+3+7)>>3)
}

// bitWriter packs bits LSB first, as deflate requires.
type bitWriter struct {
	out   []byte
	bits  uint64
	nbits uint
}

func (w *bitWriter) send(v int, n int) {
	w.bits |= uint64(v) << w.nbits
	w.nbits += uint(n)
	if w.nbits >= 32 {
		w.out = append(w.out, byte(w.bits), byte(w.bits>>8), byte(w.bits>>16), byte(w.bits>>24))
		w.bits >>= 32
		w.nbits -= 32
	}
}

// windup pads to a byte boundary and writes out every pending bit.
func (w *bitWriter) windup() {
	for w.nbits > 0 {
		w.out = append(w.out, byte(w.bits))
		w.bits >>= 8
		if w.nbits >= 8 {
			w.nbits -= 8
		} else {
			w.nbits = 0
		}
	}
	w.bits = 0
}

// size is the number of bytes written so far, a partial byte counted whole.
func (w *bitWriter) size() int { return len(w.out) + int(w.nbits+7)/8 }

func (w *bitWriter) sendTree(t *trees, tr *ctree, maxCode int) {
	prevLen := -1
	nextLen := tr.len[0]
	count := 0
	maxCount, minCount := 7, 4
	if nextLen == 0 {
		maxCount, minCount = 138, 3
	}
	bl := &t.bl
	for n := 0; n <= maxCode; n++ {
		curLen := nextLen
		nextLen = tr.len[n+1]
		count++
		if count < maxCount && curLen == nextLen {
			continue
		} else if count < minCount {
			for ; count > 0; count-- {
				w.send(int(bl.code[curLen]), bl.len[curLen])
			}
		} else if curLen != 0 {
			if curLen != prevLen {
				w.send(int(bl.code[curLen]), bl.len[curLen])
				count--
			}
			w.send(int(bl.code[zRep3to6]), bl.len[zRep3to6])
			w.send(count-3, 2)
		} else if count <= 10 {
			w.send(int(bl.code[zRepZ3to10]), bl.len[zRepZ3to10])
			w.send(count-3, 3)
		} else {
			w.send(int(bl.code[zRepZ11to]), bl.len[zRepZ11to])
			w.send(count-11, 7)
		}
		count = 0
		prevLen = curLen
		switch {
		case nextLen == 0:
			maxCount, minCount = 138, 3
		case curLen == nextLen:
			maxCount, minCount = 6, 3
		default:
			maxCount, minCount = 7, 4
		}
	}
}

func (w *bitWriter) compressBlock(s *symbolBuffer, lLen []int, lCode []uint16, dLen []int, dCode_ []uint16) {
	for i := 0; i < s.n; i++ {
		dist := int(s.dist[i])
		lc := int(s.lc[i])
		if dist == 0 {
			w.send(int(lCode[lc]), lLen[lc])
			continue
		}
		code := int(zt.lengthCode[lc])
		w.send(int(lCode[code+zLiterals+1]), lLen[code+zLiterals+1])
		if extra := zExtraLBits[code]; extra != 0 {
			w.send(lc-zt.baseLength[code], extra)
		}
		dist--
		code = dCode(dist)
		w.send(int(dCode_[code]), dLen[code])
		if extra := zExtraDBits[code]; extra != 0 {
			w.send(dist-zt.baseDist[code], extra)
		}
	}
	w.send(int(lCode[zEndBlock]), lLen[zEndBlock])
}

// blockKind is how flushBlock writes a block whose trees t has built: stored, fixed or
// dynamic codes, as zlib chooses.
type blockKind int

const (
	blockStored blockKind = iota
	blockStatic
	blockDynamic
)

// chooseBlock is zlib's choice for a block of storedLen input bytes whose trees t has built:
// stored when that is smallest and the input is still in the window (canStore), else fixed
// codes when they are no larger than dynamic ones.
func chooseBlock(t *trees, storedLen int, canStore bool) blockKind {
	optLenb := (t.optLen + 3 + 7) >> 3
	staticLenb := (t.staticLen + 3 + 7) >> 3
	if staticLenb <= optLenb {
		optLenb = staticLenb
	}
	switch {
	case canStore && storedLen+4 <= optLenb:
		return blockStored
	case staticLenb == optLenb:
		return blockStatic
	}
	return blockDynamic
}

// lastBlockSize is how many bytes w holds once flushBlock has written s as the last block,
// counted without writing it: optLen and staticLen are the exact bit lengths of a block's
// codes (trees, symbols and end of block), as zlib's own debug check asserts.
func (w *bitWriter) lastBlockSize(t *trees, s *symbolBuffer, stored []byte, canStore bool) int {
	t.build(s)
	bits := len(w.out)*8 + int(w.nbits) + 3
	switch chooseBlock(t, len(stored), canStore) {
	case blockStored:
		return (bits+7)>>3 + 4 + len(stored)
	case blockStatic:
		bits += t.staticLen
	default:
		bits += t.optLen
	}
	return (bits + 7) >> 3
}

// flushBlock emits the block in s as a stored, fixed or dynamic block,
// whichever zlib would pick, and starts a new block. stored is the block's
// input when it is still in the window (canStore).
func (w *bitWriter) flushBlock(t *trees, s *symbolBuffer, stored []byte, canStore, last bool) {
	t.build(s)
	lastBit := 0
	if last {
		lastBit = 1
	}
	switch chooseBlock(t, len(stored), canStore) {
	case blockStored:
		w.send(lastBit, 3) // STORED_BLOCK<<1 + last
		w.windup()
		n := len(stored)
		w.out = append(w.out, byte(n), byte(n>>8), byte(^n), byte(^n>>8))
		w.out = append(w.out, stored...)
	case blockStatic:
		w.send(2+lastBit, 3) // STATIC_TREES<<1 + last
		w.compressBlock(s, zt.staticLLen[:], zt.staticLCod[:], zt.staticDLen[:], zt.staticDCod[:])
	default:
		w.send(4+lastBit, 3) // DYN_TREES<<1 + last
		lcodes, dcodes, blcodes := t.l.maxCode+1, t.d.maxCode+1, t.maxBLIndex+1
		w.send(lcodes-257, 5)
		w.send(dcodes-1, 5)
		w.send(blcodes-4, 4)
		for rank := 0; rank < blcodes; rank++ {
			w.send(t.bl.len[zBLOrder[rank]], 3)
		}
		w.sendTree(t, &t.l, lcodes-1)
		w.sendTree(t, &t.d, dcodes-1)
		w.compressBlock(s, t.l.len[:], t.l.code[:], t.d.len[:], t.d.code[:])
	}
	s.reset()
	if last {
		w.windup()
	}
}

package seal

import (
	"errors"
	"fmt"
)

// Limits of one diff epoch: its rows and deletions, gzipped, plus Headroom
// for the rest of the plaintext, must not pass MaxDiffBytes.
const (
	MaxDiffBytes = 92160
	Headroom     = 512
)

// MaxChunkPlain bounds the uncompressed document of one chunk (its rows and deletions as the
// plaintext encodes them). The format only bounds the compressed size, and a body of one
// repeated character compresses about 1000:1, so without this an epoch of 90 KB could carry
// 90 MB of plaintext: more than the machine that seals it can journal and apply in one piece.
// Every chunk a plaintext decoder accepts (MaxPlaintext) stays well inside it.
const MaxChunkPlain = 16 << 20

// Chunk is the part of a change set that one epoch carries.
type Chunk struct {
	Rows    []Row
	Deleted []Deleted
	// Bucket is the bucket the chunk was cut to fit (ChunkStreamBucket), 0 when it was cut to
	// the largest epoch. RaisedBy names the row that did not fit the bucket asked for alone,
	// when the chunk's bucket had to be raised for it ("" otherwise).
	Bucket   int
	RaisedBy string
}

// RowTooLargeError names a row that cannot fit an epoch even alone: compressed, or, when Plain
// is set, uncompressed (Plain is then its encoded size, more than MaxChunkPlain).
type RowTooLargeError struct {
	Row   Row
	Plain int
}

// RowName names a row in messages: tier and key, with the category of an entity.
func RowName(row *Row) string {
	if row.Tier != TierEntity {
		return row.Tier + " " + row.Key
	}
	cat := ""
	if row.Category != nil {
		cat = *row.Category
	}
	return row.Tier + " " + cat + "/" + row.Key
}

func (e *RowTooLargeError) Error() string {
	name := RowName(&e.Row)
	if e.Plain > 0 {
		return fmt.Sprintf("row %s is %d bytes uncompressed, more than the %d bytes one epoch sealed here carries; shrink or split it in Sibyl (push refuses until then, nothing else is blocked)", name, e.Plain, MaxChunkPlain)
	}
	return fmt.Sprintf("row %s compresses to more than 90 KB on its own and cannot fit one epoch; shrink or split it in Sibyl (push refuses until then, nothing else is blocked)", name)
}

// Unwrap lets errors.Is(err, ErrTooLarge) match.
func (e *RowTooLargeError) Unwrap() error { return ErrTooLarge }

// SnapshotTooLargeError reports a full state that does not fit one epoch.
type SnapshotTooLargeError struct {
	NRows int
	Size  int // measured bytes: gzip of rows and deletions plus Headroom
}

func (e *SnapshotTooLargeError) Error() string {
	return fmt.Sprintf("the full state (%d rows) compresses to %d bytes, more than the %d bytes one epoch can carry, and snapshots are single-epoch: keep anchoring ordinary epochs (`kintfs push`), or shrink the memory in Sibyl. Nothing else is blocked; a restore just walks more epochs.", e.NRows, e.Size, MaxDiffBytes)
}

// Unwrap lets errors.Is(err, ErrSnapshotTooLarge) match.
func (e *SnapshotTooLargeError) Unwrap() error { return ErrSnapshotTooLarge }

// The measured document of a chunk is {"deleted":[...],"rows":[...]} in the
// plaintext's encoding. Deletions come first so that the document can be
// compressed as a stream while rows are appended.
const (
	chunkDocHead   = `{"deleted":[`
	chunkDocToRows = `],"rows":[`
	chunkDocTail   = `]}`
)

func appendChunkDoc(dst []byte, rows []Row, dels []Deleted) []byte {
	dst = append(dst, chunkDocHead...)
	for i := range dels {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendDeletedJSON(dst, &dels[i])
	}
	dst = append(dst, chunkDocToRows...)
	for i := range rows {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendRowJSON(dst, &rows[i])
	}
	return append(dst, chunkDocTail...)
}

// chunkMeasure is the measured size of a chunk: gzip of its document plus
// Headroom.
func chunkMeasure(rows []Row, dels []Deleted) int {
	return len(Compress(appendChunkDoc(nil, rows, dels))) + Headroom
}

// SnapshotFits refuses a snapshot whose rows and deletions, measured as a
// diff chunk is, exceed what one epoch carries: a snapshot cannot be split.
func SnapshotFits(p *Plaintext) error {
	if size := chunkMeasure(p.Rows, p.Deleted); size > MaxDiffBytes {
		return &SnapshotTooLargeError{NRows: len(p.Rows), Size: size}
	}
	return nil
}

// ChunkDiff splits a change set into epochs. Rows are added in order and a
// chunk closes when the next row would push its measure (gzip of the chunk's
// deletions and rows, plus Headroom) past MaxDiffBytes. Deletions travel in
// the first chunk; only when they cannot all fit there do they spill into
// the next ones, still ahead of every row. A row that cannot fit alone is a
// *RowTooLargeError. Empty input gives nil.
//
// The chunk document is compressed once as a stream; near the limit the
// stream is snapshotted and closed to measure each candidate exactly, so
// every chunk's measure is exact, not estimated.
func ChunkDiff(rows []Row, deleted []Deleted) ([]Chunk, error) {
	var chunks []Chunk
	err := ChunkStream(rows, deleted, func(c Chunk) error {
		chunks = append(chunks, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return chunks, nil
}

// ChunkStream splits as ChunkDiff does, handing each chunk to emit as soon as it is closed,
// so that the first epoch can be sealed and sent while the rest is still being measured. An
// error from emit stops it and is returned.
func ChunkStream(rows []Row, deleted []Deleted, emit func(Chunk) error) error {
	return ChunkStreamBucket(rows, deleted, 0, 0, emit)
}

// ChunkDiffBucket is ChunkDiff with chunks cut to fit bucket (see ChunkStreamBucket).
func ChunkDiffBucket(rows []Row, deleted []Deleted, bucket, headroom int) ([]Chunk, error) {
	var chunks []Chunk
	err := ChunkStreamBucket(rows, deleted, bucket, headroom, func(c Chunk) error {
		chunks = append(chunks, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return chunks, nil
}

// BucketLimit is the most a chunk's gzip may measure for its epoch to fit bucket: the bucket
// less its 4-byte length prefix and headroom (the rest of the plaintext: PlaintextHeadroom, or
// Headroom when 0), and never more than MaxDiffBytes allows. A bucket of 0 means the largest
// epoch.
func BucketLimit(bucket, headroom int) int {
	full := MaxDiffBytes - Headroom
	if bucket <= 0 {
		return full
	}
	if headroom <= 0 {
		headroom = Headroom
	}
	return min(bucket-4-headroom, full)
}

// PlaintextHeadroom measures what the plaintext of an epoch of tenant adds to its rows and
// deletions once compressed, at its largest (the longest seq and row count, digests of pure
// noise), with a margin for how differently the whole compresses: the headroom a chunk cut to
// a small bucket needs, well under the fixed Headroom a 90 KB chunk keeps.
func PlaintextHeadroom(tenant string) int {
	var noise [96]byte
	x := uint64(0x9E3779B97F4A7C15)
	for i := range noise {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		noise[i] = byte(x)
	}
	p := &Plaintext{Tenant: tenant, Seq: 1<<64 - 1, NRows: 1<<63 - 1, CreatedAt: "2026-12-04T10:00:00Z"}
	copy(p.Space[:], noise[:32])
	copy(p.Prev[:], noise[32:64])
	copy(p.RowsRoot[:], noise[64:])
	return len(Compress(EncodePlaintext(p))) + 64
}

// ChunkStreamBucket splits as ChunkStream does, but cuts each chunk to fit bucket (one of
// Buckets; 0: the largest epoch), so that a large change set becomes more epochs of the same
// bucket instead of fewer epochs of a larger one. A row that cannot fit the bucket alone
// raises it, for that chunk and every one after it, only as far as the row needs: that
// chunk's RaisedBy names the row. Every chunk says the bucket it was cut for. headroom is what
// the rest of the plaintext needs (PlaintextHeadroom; 0: Headroom).
func ChunkStreamBucket(rows []Row, deleted []Deleted, bucket, headroom int, emit func(Chunk) error) error {
	c := NewChunker(bucket, headroom, emit)
	for i := range deleted {
		if err := c.AddDeleted(&deleted[i]); err != nil {
			return err
		}
	}
	for i := range rows {
		if err := c.AddRow(&rows[i]); err != nil {
			return err
		}
	}
	return c.Close()
}

// Chunker splits a change set handed to it one item at a time, as ChunkStreamBucket does, so
// that its caller need hold only the items of the chunk being cut: deletions first, then rows,
// then Close. It keeps a copy of each item it takes (a row's body is not copied), never the
// pointer it was given.
type Chunker struct{ c *chunker }

// NewChunker starts a split cut to fit bucket (0: the largest epoch) with headroom for the
// rest of the plaintext (0: Headroom), handing each chunk to emit once closed.
func NewChunker(bucket, headroom int, emit func(Chunk) error) *Chunker {
	if bucket > 0 && bucket < Buckets[0] {
		bucket = Buckets[0]
	}
	return &Chunker{&chunker{bucket: bucket, headroom: headroom, limit: BucketLimit(bucket, headroom), plain: MaxChunkPlain, t: &trees{}, emit: emit}}
}

// AddDeleted adds a deletion; every deletion comes before the first row.
func (k *Chunker) AddDeleted(d *Deleted) error {
	if k.c.rows {
		return errors.New("seal: a deletion after the first row")
	}
	dc := *d
	return k.c.add(chunkItem{del: &dc})
}

// AddRow adds a row.
func (k *Chunker) AddRow(r *Row) error {
	k.c.rows = true
	rc := *r
	return k.c.add(chunkItem{row: &rc})
}

// Close closes the last chunk; an empty change set gives none.
func (k *Chunker) Close() error { return k.c.closeChunk(k.c.g) }

// fitsAloneBelow is an encoded row size that always fits an epoch alone: gzip grows what it
// cannot compress by a few bytes in a thousand at most.
const fitsAloneBelow = 60000

// FitsAlone returns the *RowTooLargeError ChunkDiff would give for row, which no epoch can
// carry even alone, or nil. A push holds such rows before it splits the rest, so that the
// split never stops halfway.
func FitsAlone(row *Row) error {
	if rowJSONMax(row) < fitsAloneBelow || len(appendRowJSON(nil, row)) < fitsAloneBelow {
		return nil
	}
	_, err := ChunkDiff([]Row{*row}, nil)
	return err
}

// raise moves the chunker to the next larger bucket because the current chunk's one item
// (it, or the one item of the current chunk when it is empty) does not fit alone; false when
// the chunks are already cut to the largest epoch.
func (c *chunker) raise(it chunkItem) bool {
	if c.bucket == 0 {
		return false
	}
	next := 0
	for _, b := range Buckets {
		if b > c.bucket {
			next = b
			break
		}
	}
	if next == Buckets[len(Buckets)-1] {
		next = 0 // the largest bucket is the largest epoch
	}
	if it.row == nil && it.del == nil {
		if len(c.cur.Rows) > 0 {
			it.row = &c.cur.Rows[0]
		} else if len(c.cur.Deleted) > 0 {
			it.del = &c.cur.Deleted[0]
		}
	}
	switch {
	case it.row != nil:
		c.raised = RowName(it.row)
	case it.del != nil:
		c.raised = "deletion of " + it.del.Tier + " " + it.del.Key
	}
	c.bucket, c.limit = next, BucketLimit(next, c.headroom)
	return true
}

type chunkItem struct {
	row *Row
	del *Deleted
}

// chunkMargin covers how far gzipStream.estimate can fall short of the real
// closed size (the unprocessed lookahead of at most 262 bytes, costed at a
// byte each, may cost up to 15 bits a byte, and new symbols reshape the
// trees). Below limit-margin an item is accepted on the estimate alone.
const chunkMargin = 1024

type chunker struct {
	bucket   int // the bucket chunks are cut for, 0: the largest epoch
	headroom int
	raised   string
	limit    int // for the gzip alone: BucketLimit(bucket)
	plain    int // for the document uncompressed: MaxChunkPlain
	doc      int // bytes of the document written to g
	// est is g's estimate after its last item (or its bound, or its measure less the
	// document's end), when the document was estDoc bytes long
	est, estDoc int
	// near: an item of the current chunk came within chunkMargin of the limit, so the next
	// is measured exactly without estimating first
	near bool
	t    *trees
	g    *gzipStream // nil between chunks
	cur  Chunk
	emit func(Chunk) error
	buf  []byte
	// spare memory for the two clones an item near the limit is measured with (see add)
	before, after *gzipStream
	rows          bool // a row was added: no deletion may follow
}

// suffix closes the document after the current items.
func (c *chunker) suffix() string {
	if len(c.cur.Rows) == 0 {
		return chunkDocToRows + chunkDocTail
	}
	return chunkDocTail
}

func (c *chunker) piece(it chunkItem) []byte {
	b := c.buf[:0]
	if it.row != nil {
		if len(c.cur.Rows) == 0 {
			b = append(b, chunkDocToRows...)
		} else {
			b = append(b, ',')
		}
		b = appendRowJSON(b, it.row)
	} else {
		if len(c.cur.Deleted) > 0 {
			b = append(b, ',')
		}
		b = appendDeletedJSON(b, it.del)
	}
	c.buf = b
	return b
}

func (c *chunker) add(it chunkItem) error {
	if c.g == nil {
		c.g = newGzipStream()
		c.g.write([]byte(chunkDocHead))
		c.doc = len(chunkDocHead)
		c.est, c.estDoc = c.g.estimate(c.t), c.doc
		c.near = false
	}
	piece := c.piece(it)
	tail := chunkDocTail
	if it.row == nil {
		tail = chunkDocToRows + chunkDocTail
	}
	if c.doc+len(piece)+len(tail) > c.plain {
		if len(c.cur.Rows) == 0 && len(c.cur.Deleted) == 0 {
			if it.row != nil {
				return &RowTooLargeError{Row: *it.row, Plain: len(piece) - len(chunkDocToRows)}
			}
			return fmt.Errorf("%w: deletion of %s %q is too long for one epoch", ErrTooLarge, it.del.Tier, it.del.Key)
		}
		if err := c.closeChunk(c.g); err != nil {
			return err
		}
		return c.add(it)
	}
	c.doc += len(piece)
	// Keep the stream as it was before this item only when the item might not fit: the
	// stream's bytes per document byte so far, doubled, predict what the piece adds. A
	// prediction that falls short costs one compression of the chunk again (before stays nil),
	// never a wrong cut.
	var before *gzipStream
	if len(c.cur.Rows)+len(c.cur.Deleted) > 0 && c.est+2*len(piece)*c.est/c.estDoc+len(tail)+chunkMargin > c.limit {
		c.before = c.g.cloneInto(c.before)
		before = c.before
	}
	c.g.write(piece)
	// Below the limit by more than the estimate can fall short, the item fits on the estimate
	// alone; nearer, a clone closed with the document's end measures it exactly. Far below,
	// the bound (never less than the estimate, and cheaper) says so first; once an item came
	// near, the rest of the chunk is measured exactly at once: the estimate would only send
	// it there too, and where the estimate falls short the measure is still right.
	c.est, c.estDoc = c.g.bound(), c.doc
	if c.est+len(tail)+chunkMargin > c.limit && !c.near {
		c.est = c.g.estimate(c.t)
	}
	if c.est+len(tail)+chunkMargin > c.limit {
		c.near = true
		c.after = c.g.cloneInto(c.after)
		c.after.write([]byte(tail))
		closed := c.after.closedSize()
		c.est = closed - len(tail)
		if closed > c.limit {
			if len(c.cur.Rows) == 0 && len(c.cur.Deleted) == 0 {
				if c.raise(it) {
					c.g.free()
					c.g = nil
					c.doc = 0
					return c.add(it)
				}
				if it.row != nil {
					return &RowTooLargeError{Row: *it.row}
				}
				return fmt.Errorf("%w: deletion of %s %q compresses past one epoch", ErrTooLarge, it.del.Tier, it.del.Key)
			}
			if before == nil {
				before = c.recompress()
				defer before.free()
			}
			if err := c.closeChunk(before); err != nil {
				return err
			}
			return c.add(it)
		}
	}
	if it.row != nil {
		c.cur.Rows = append(c.cur.Rows, *it.row)
	} else {
		c.cur.Deleted = append(c.cur.Deleted, *it.del)
	}
	return nil
}

// recompress is a new stream holding exactly the current chunk's items, for a cut that came
// where no copy of the stream was kept.
func (c *chunker) recompress() *gzipStream {
	doc := appendChunkDoc(c.buf[:0], c.cur.Rows, c.cur.Deleted)
	g := newGzipStream()
	g.write(doc[:len(doc)-len(c.suffix())])
	c.buf = doc
	return g
}

// closeChunk ends the current chunk. at is the stream holding exactly the
// chunk's items; its closed size is the chunk's exact measure. Should it not
// fit (the estimate let an item in that it should not have), items move to
// the next chunk until the one-shot measure fits.
func (c *chunker) closeChunk(at *gzipStream) error {
	if c.g != nil {
		defer c.g.free() // after at, which may be it, is measured
	}
	c.g = nil
	if len(c.cur.Rows) == 0 && len(c.cur.Deleted) == 0 {
		return nil
	}
	at.write([]byte(c.suffix()))
	fits := at.closedSize() <= c.limit
	var spill []chunkItem
	for !fits && len(c.cur.Rows)+len(c.cur.Deleted) > 1 {
		if n := len(c.cur.Rows); n > 0 {
			r := c.cur.Rows[n-1]
			spill = append(spill, chunkItem{row: &r})
			c.cur.Rows = c.cur.Rows[:n-1]
		} else {
			n := len(c.cur.Deleted)
			d := c.cur.Deleted[n-1]
			spill = append(spill, chunkItem{del: &d})
			c.cur.Deleted = c.cur.Deleted[:n-1]
		}
		fits = chunkMeasure(c.cur.Rows, c.cur.Deleted)-Headroom <= c.limit
	}
	for !fits && c.raise(chunkItem{}) {
		fits = chunkMeasure(c.cur.Rows, c.cur.Deleted)-Headroom <= c.limit
	}
	if !fits {
		if len(c.cur.Rows) == 1 {
			return &RowTooLargeError{Row: c.cur.Rows[0]}
		}
		return fmt.Errorf("%w: deletion of %s %q compresses past one epoch", ErrTooLarge, c.cur.Deleted[0].Tier, c.cur.Deleted[0].Key)
	}
	done := c.cur
	done.Bucket, done.RaisedBy = c.bucket, c.raised
	c.cur, c.raised = Chunk{}, ""
	if err := c.emit(done); err != nil {
		return err
	}
	for i := len(spill) - 1; i >= 0; i-- {
		if err := c.add(spill[i]); err != nil {
			return err
		}
	}
	return nil
}

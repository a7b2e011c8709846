package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/seal"
)

// The mirror, staged and history records are written for every row a flush carries and an
// epoch applies, and every mirror record is read when a vault opens. They are stored in a
// binary layout (storeFormat 4): a version byte, then their fields in a fixed order, strings
// and bodies as raw bytes (no escaping, and bytes that are not UTF-8 need no stash). Records
// stored as JSON before it still read: a JSON record starts with '{', never with recBinary.
// The attribute records, one for almost every file and all read when a vault opens, followed
// in storeFormat 5.

// recBinary is the first byte of a record in the binary layout.
const recBinary byte = 1

// Flags of a staged record.
const (
	stagedDel     = 1 << 0
	stagedRawBody = 1 << 1
	stagedLeaf    = 1 << 2 // the row's leaf follows the record's last field
	stagedPieces  = 1 << 3 // the body's number of pieces follows its size (layout 6)
	stagedFlags   = stagedDel | stagedRawBody | stagedLeaf | stagedPieces
)

// binaryRecord is a record with a binary layout.
type binaryRecord interface {
	appendBinary(b []byte) []byte
	decodeBinary(r *recReader)
}

// encodeRecord is rec in the binary layout.
func encodeRecord(rec binaryRecord) []byte {
	return rec.appendBinary(append(make([]byte, 0, 256), recBinary))
}

// decodeRecord decodes b, in the binary layout or as JSON, into rec.
func decodeRecord(b []byte, rec binaryRecord) error {
	if len(b) == 0 || b[0] != recBinary {
		return json.Unmarshal(b, rec) // stored before layout 4
	}
	r := recReader{b: b[1:]}
	rec.decodeBinary(&r)
	if r.err == nil && len(r.b) != 0 {
		r.err = errTrailing
	}
	return r.err
}

// putRecord stores rec under key in the binary layout. badger's errors are mapped by
// storeError: they may quote the value.
func putRecord(txn *badger.Txn, key string, rec binaryRecord) error {
	b := encodeRecord(rec)
	return storeError("record", len(b), txn.Set([]byte(key), b))
}

// getRecord reads key into rec; found is false when the key is absent. The decoder's
// message is left out: it may quote the record.
func getRecord(txn *badger.Txn, key string, rec binaryRecord) (found bool, err error) {
	return getDecoded(txn, key, func(b []byte) error {
		if err := decodeRecord(b, rec); err != nil {
			return fmt.Errorf("record %q: %w", key, errUndecodable)
		}
		return nil
	})
}

func (m *mirrorRec) appendBinary(b []byte) []byte {
	b = appendRow(b, &m.Row)
	b = append(b, m.Leaf[:]...)
	b = binary.AppendUvarint(b, m.Anchor.Seq)
	b = binary.AppendUvarint(b, m.Anchor.Block)
	b = appendString(b, m.Anchor.Tx)
	b = binary.AppendVarint(b, m.Mtime)
	b = binary.AppendVarint(b, m.Size)
	return append(b, boolByte(m.HasBody))
}

func (m *mirrorRec) decodeBinary(r *recReader) {
	r.row(&m.Row)
	m.Leaf = r.hash()
	m.Anchor.Seq, m.Anchor.Block, m.Anchor.Tx = r.uvarint(), r.uvarint(), r.string()
	m.Mtime, m.Size, m.HasBody = r.varint(), r.varint(), r.bool()
}

func (st *stagedRec) appendBinary(b []byte) []byte {
	var flags uint64
	if st.Del {
		flags |= stagedDel
	}
	if st.RawBody {
		flags |= stagedRawBody
	}
	if st.leaf != nil {
		flags |= stagedLeaf
	}
	if st.Pieces > 0 {
		flags |= stagedPieces
	}
	b = binary.AppendUvarint(b, flags)
	b = appendRow(b, &st.Row)
	b = binary.AppendVarint(b, st.Mtime)
	b = appendString(b, st.Held)
	b = append(b, st.Base[:]...)
	b = binary.AppendVarint(b, st.At)
	b = binary.AppendVarint(b, st.Size)
	if st.Pieces > 0 {
		b = binary.AppendUvarint(b, uint64(st.Pieces))
	}
	if st.leaf != nil {
		b = append(b, st.leaf[:]...)
	}
	return b
}

func (st *stagedRec) decodeBinary(r *recReader) {
	flags := r.flags(stagedFlags)
	st.Del, st.RawBody = flags&stagedDel != 0, flags&stagedRawBody != 0
	r.row(&st.Row)
	st.Mtime, st.Held, st.Base = r.varint(), r.string(), r.hash()
	st.At, st.Size = r.varint(), r.varint()
	if flags&stagedPieces != 0 {
		// a piece's number is two bytes of its key
		if n := r.uvarint(); n == 0 || n > 1<<16 {
			r.fail(errOutOfRange)
		} else {
			st.Pieces = int(n)
		}
	}
	if flags&stagedLeaf != 0 {
		leaf := r.hash()
		st.leaf = &leaf
	}
}

// Flags of an attribute record.
const (
	attrHasPerm  = 1 << 0
	attrChmod    = 1 << 1
	attrHasTimes = 1 << 2
	attrSetTimes = 1 << 3 // the set times and what they were set on follow (most files have none)
	attrFlags    = attrHasPerm | attrChmod | attrHasTimes | attrSetTimes
)

func (a *attrRec) appendBinary(b []byte) []byte {
	var flags uint64
	if a.HasPerm {
		flags |= attrHasPerm
	}
	if a.Chmod {
		flags |= attrChmod
	}
	if a.HasTimes {
		flags |= attrHasTimes
	}
	times := a.Mtime != 0 || a.Atime != 0 || a.Base != 0 || a.BaseLeaf != (common.Hash{})
	if times {
		flags |= attrSetTimes
	}
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendUvarint(b, uint64(a.Perm))
	b = binary.AppendVarint(b, a.Ctime)
	if times {
		b = binary.AppendVarint(b, a.Mtime)
		b = binary.AppendVarint(b, a.Atime)
		b = binary.AppendVarint(b, a.Base)
		b = append(b, a.BaseLeaf[:]...)
	}
	return b
}

func (a *attrRec) decodeBinary(r *recReader) {
	flags := r.flags(attrFlags)
	a.HasPerm, a.Chmod, a.HasTimes = flags&attrHasPerm != 0, flags&attrChmod != 0, flags&attrHasTimes != 0
	perm := r.uvarint()
	if perm > 1<<32-1 {
		r.fail(errOutOfRange)
	}
	a.Perm, a.Ctime = uint32(perm), r.varint()
	if flags&attrSetTimes != 0 {
		a.Mtime, a.Atime, a.Base, a.BaseLeaf = r.varint(), r.varint(), r.varint(), r.hash()
	}
}

// A history record starts with a flag that says whether it holds a row (a deletion does not).
const histRow = 1 << 0

// histDeletedPrefix starts every history record of a deletion in the binary layout.
var histDeletedPrefix = []byte{recBinary, 0}

func (h *histRec) appendBinary(b []byte) []byte {
	if h.Row == nil {
		b = append(b, 0)
	} else {
		b = append(b, histRow)
		b = appendRow(b, h.Row)
	}
	b = binary.AppendUvarint(b, h.Anchor.Seq)
	b = binary.AppendUvarint(b, h.Anchor.Block)
	b = appendString(b, h.Anchor.Tx)
	return binary.AppendVarint(b, h.Mtime)
}

func (h *histRec) decodeBinary(r *recReader) {
	switch flags := r.uvarint(); flags {
	case 0:
		h.Row = nil
	case histRow:
		h.Row = &seal.Row{}
		r.row(h.Row)
	default:
		r.fail(errUnknownFlags)
	}
	h.Anchor.Seq, h.Anchor.Block, h.Anchor.Tx = r.uvarint(), r.uvarint(), r.string()
	h.Mtime = r.varint()
}

// histRecLen is the length of the history record of r with an anchor of at most tx bytes of
// transaction hash, as appendBinary would write it, measured without writing it.
func histRecLen(r *seal.Row, tx int) int {
	n := 1 + 1 + stringLen(len(r.Tier)) + stringLen(len(r.Key)) + uvarintLen(rowPresent(r))
	for _, f := range rowStrings(r) {
		if *f != nil {
			n += stringLen(len(**f))
		}
	}
	if !r.Body.IsNull() {
		n += stringLen(r.Body.Len())
	}
	return n + 2*binary.MaxVarintLen64 + stringLen(tx) + binary.MaxVarintLen64
}

func stringLen(n int) int { return uvarintLen(uint64(n)) + n }

// uvarintLen is the length of v as binary.AppendUvarint writes it: 7 bits a byte.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// appendRow appends r: its tier and key, a bit for each nullable field that is not null (its
// strings in rowStrings' order, then the body), then those fields.
func appendRow(b []byte, r *seal.Row) []byte {
	b = appendString(b, r.Tier)
	b = appendString(b, r.Key)
	b = binary.AppendUvarint(b, rowPresent(r))
	for _, f := range rowStrings(r) {
		if *f != nil {
			b = appendString(b, **f)
		}
	}
	if !r.Body.IsNull() {
		b = binary.AppendUvarint(b, uint64(r.Body.Len()))
		b = append(b, r.Body.Bytes()...)
	}
	return b
}

// rowPresent has a bit for each nullable field of r that is not null: rowStrings' in their
// order, then bodyPresent.
func rowPresent(r *seal.Row) uint64 {
	var present uint64
	for i, f := range rowStrings(r) {
		if *f != nil {
			present |= 1 << i
		}
	}
	if !r.Body.IsNull() {
		present |= bodyPresent
	}
	return present
}

// rowStrings are the nullable strings of r, in the binary layout's order.
func rowStrings(r *seal.Row) [rowStringCount]**string {
	return [rowStringCount]**string{&r.Category, &r.Status, &r.Meta, &r.TS, &r.Evaluated, &r.Acted, &r.Forward, &r.Extra}
}

const rowStringCount = 8

// bodyPresent is the bit, after rowStrings' bits, that says a row's body is not null.
const bodyPresent = 1 << rowStringCount

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

var (
	errTruncated    = errors.New("record ends early")
	errTrailing     = errors.New("record has bytes after its last field")
	errUnknownFlags = errors.New("record has flags this kintfs does not know")
	errNotBool      = errors.New("record has a flag that is neither 0 nor 1")
	errOutOfRange   = errors.New("record has a number out of its field's range")
)

// recReader reads the fields of a binary record in order; the first failure sticks, and every
// read after it gives a zero value.
type recReader struct {
	b   []byte
	err error
}

func (r *recReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *recReader) uvarint() uint64 { return readVarint(r, binary.Uvarint) }

// flags reads a record's flags, failing (and giving none) when one is set that known lacks.
func (r *recReader) flags(known uint64) uint64 {
	flags := r.uvarint()
	if flags&^known != 0 {
		r.fail(errUnknownFlags)
		return 0
	}
	return flags
}

func (r *recReader) varint() int64 { return readVarint(r, binary.Varint) }

// readVarint reads the next varint of r with read (binary.Uvarint or binary.Varint).
func readVarint[T uint64 | int64](r *recReader, read func([]byte) (T, int)) T {
	v, n := read(r.b)
	if n <= 0 {
		r.fail(errTruncated)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes is the next length-prefixed field, not copied.
func (r *recReader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail(errTruncated)
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// string is the next length-prefixed field, copied (a record's bytes are badger's, valid only
// while it is read).
func (r *recReader) string() string {
	b := r.bytes()
	if len(b) == 0 {
		return ""
	}
	return string(b)
}

func (r *recReader) hash() common.Hash {
	var h common.Hash
	if len(r.b) < len(h) {
		r.fail(errTruncated)
		return h
	}
	copy(h[:], r.b)
	r.b = r.b[len(h):]
	return h
}

func (r *recReader) bool() bool {
	if len(r.b) == 0 {
		r.fail(errTruncated)
		return false
	}
	v := r.b[0]
	r.b = r.b[1:]
	if v > 1 {
		r.fail(errNotBool)
	}
	return v == 1
}

func (r *recReader) row(row *seal.Row) {
	row.Tier = tierString(r.bytes())
	row.Key = r.string()
	present := r.flags(bodyPresent<<1 - 1)
	for i, p := range rowStrings(row) {
		if present&(1<<i) != 0 {
			s := r.string()
			*p = &s
		}
	}
	if present&bodyPresent != 0 {
		row.Body = seal.BodyOf(append([]byte{}, r.bytes()...))
	}
}

// tierString is b as a string: one of the four tiers shared, not copied (a vault's rows hold
// few tiers, and a mount keeps every row's).
func tierString(b []byte) string {
	switch string(b) {
	case seal.TierEntity:
		return seal.TierEntity
	case seal.TierState:
		return seal.TierState
	case seal.TierReference:
		return seal.TierReference
	case seal.TierJournal:
		return seal.TierJournal
	}
	return string(b)
}

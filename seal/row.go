package seal

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/crypto"
)

// Tiers of the v1 row model.
const (
	TierEntity    = "entity"
	TierState     = "state"
	TierReference = "reference"
	TierJournal   = "journal"
)

// Row is one wire row. Every value but Tier and Key may be null (nil, or a null Body).
type Row struct {
	Tier      string
	Key       string
	Category  *string
	Status    *string
	Body      Body
	Meta      *string
	TS        *string
	Evaluated *string
	Acted     *string
	Forward   *string
	Extra     *string
}

// rowFieldNames are the wire names of the nullable fields, in wire order.
var rowFieldNames = [9]string{"category", "status", "body", "meta", "ts", "evaluated", "acted", "forward", "extra"}

// bodyField is the index of "body" in rowFieldNames; its slot in nullableFields and
// nullableFieldPtrs is nil (the body is r.Body).
const bodyField = 2

func (r *Row) nullableFields() [9]*string {
	return [9]*string{r.Category, r.Status, nil, r.Meta, r.TS, r.Evaluated, r.Acted, r.Forward, r.Extra}
}

func (r *Row) nullableFieldPtrs() [9]**string {
	return [9]**string{&r.Category, &r.Status, nil, &r.Meta, &r.TS, &r.Evaluated, &r.Acted, &r.Forward, &r.Extra}
}

// CanonicalID is tier \0 category \0 key. Only entities are keyed by
// category, so a nil category and "" give the same id.
func CanonicalID(tier string, category *string, key string) string {
	cat := ""
	if category != nil && tier == TierEntity {
		cat = *category
	}
	return tier + "\x00" + cat + "\x00" + key
}

// ID is the row's canonical id.
func (r *Row) ID() string { return CanonicalID(r.Tier, r.Category, r.Key) }

// Deleted names a row removed by an epoch: [tier, category|null, key].
type Deleted struct {
	Tier     string
	Category *string
	Key      string
}

// ID is the canonical id of the deleted row.
func (d Deleted) ID() string { return CanonicalID(d.Tier, d.Category, d.Key) }

var (
	leafDomain       = []byte("kint-leaf-v1")
	journalKeyDomain = []byte("kint-journal-key-v1")
)

// lpField is one field of a leaf's preimage: null, or the bytes of s or of b (a body, hashed
// where it lies).
type lpField struct {
	s    string
	b    []byte
	null bool
}

func strField(p *string) lpField {
	if p == nil {
		return lpField{null: true}
	}
	return lpField{s: *p}
}

func bodyLP(b Body) lpField { return lpField{b: b.b, null: !b.valid} }

// appendLP appends lp(x) = uint32_be(len) || x, or ff ff ff ff for null.
func appendLP(dst []byte, f lpField) []byte {
	if f.null {
		return append(dst, 0xff, 0xff, 0xff, 0xff)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(f.s)+len(f.b)))
	dst = append(dst, f.s...)
	return append(dst, f.b...)
}

func lpLen(f lpField) int {
	if f.null {
		return 4
	}
	return 4 + len(f.s) + len(f.b)
}

// Leaf is the row's merkle leaf. Journal rows hash their content fields;
// the other tiers hash category, key, status, body and meta (timestamps that
// Sibyl regenerates on replay are left out).
func Leaf(r *Row) [32]byte {
	tier, key := lpField{s: r.Tier}, lpField{s: r.Key}
	var fields []lpField
	if r.Tier == TierJournal {
		fields = []lpField{tier, {null: true}, key, {null: true}, strField(r.TS), strField(r.Evaluated),
			strField(r.Acted), strField(r.Forward), strField(r.Extra)}
	} else {
		fields = []lpField{tier, strField(r.Category), key, strField(r.Status), bodyLP(r.Body), strField(r.Meta)}
	}
	n := len(leafDomain)
	for _, f := range fields {
		n += lpLen(f)
	}
	if n > leafInline {
		return leafStreamed(fields)
	}
	bp := leafBufs.Get().(*[]byte)
	buf := append((*bp)[:0], leafDomain...)
	for _, f := range fields {
		buf = appendLP(buf, f)
	}
	h := crypto.Keccak256Hash(buf)
	*bp = buf
	leafBufs.Put(bp)
	return h
}

// leafBufs are Leaf's preimage buffers, of up to leafInline bytes: a flush computes the leaf
// of every row it carries more than once, and each buffer would be garbage at once.
var leafBufs = sync.Pool{New: func() any { return new([]byte) }}

// leafInline is the largest leaf preimage Leaf builds in one buffer; a larger one (a body of
// megabytes) is hashed a piece at a time instead, without a copy of the whole row.
const leafInline = 64 << 10

// leafStreamed is Leaf's hash of the same preimage, written to the hash in pieces: a body
// straight from where it lies, the other fields through a small buffer.
func leafStreamed(fields []lpField) [32]byte {
	kh := crypto.NewKeccakState()
	buf := make([]byte, 0, 32<<10)
	buf = append(buf, leafDomain...)
	for _, f := range fields {
		if f.null {
			buf = append(buf, 0xff, 0xff, 0xff, 0xff)
			continue
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(f.s)+len(f.b)))
		for s := f.s; len(s) > 0; {
			if len(buf) == cap(buf) {
				kh.Write(buf)
				buf = buf[:0]
			}
			k := min(len(s), cap(buf)-len(buf))
			buf = append(buf, s[:k]...)
			s = s[k:]
		}
		if len(f.b) > 0 {
			kh.Write(buf)
			buf = buf[:0]
			kh.Write(f.b)
		}
		if cap(buf)-len(buf) < 4 {
			kh.Write(buf)
			buf = buf[:0]
		}
	}
	kh.Write(buf)
	var h [32]byte
	kh.Read(h[:])
	return h
}

// JournalKey is the content key of a journal event: 64 lowercase hex.
func JournalKey(ts, evaluated, acted, forward, extra *string) string {
	fields := [5]lpField{strField(ts), strField(evaluated), strField(acted), strField(forward), strField(extra)}
	n := len(journalKeyDomain)
	for _, f := range fields {
		n += lpLen(f)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, journalKeyDomain...)
	for _, f := range fields {
		buf = appendLP(buf, f)
	}
	h := crypto.Keccak256(buf)
	return hex.EncodeToString(h)
}

// AssignJournalKeys gives every journal row whose Key is empty its content
// key, in slice order. Identical events get base, base:1, base:2, ...; a key
// is skipped when existing reports it taken (existing may be nil) or when a
// journal row in rows already carries it.
func AssignJournalKeys(rows []Row, existing func(key string) bool) {
	taken := map[string]bool{}
	for i := range rows {
		if rows[i].Tier == TierJournal && rows[i].Key != "" {
			taken[rows[i].Key] = true
		}
	}
	for i := range rows {
		r := &rows[i]
		if r.Tier != TierJournal || r.Key != "" {
			continue
		}
		base := JournalKey(r.TS, r.Evaluated, r.Acted, r.Forward, r.Extra)
		key := base
		for n := 1; taken[key] || (existing != nil && existing(key)); n++ {
			key = base + ":" + strconv.Itoa(n)
		}
		taken[key] = true
		r.Key = key
	}
}

// SortByID sorts rows by canonical id, compared as UTF-8 bytes.
func SortByID(rows []Row) {
	ids := make([]string, len(rows))
	idx := make([]int, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID()
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	sorted := make([]Row, len(rows))
	for i, j := range idx {
		sorted[i] = rows[j]
	}
	copy(rows, sorted)
}

// ValidUTF8Row refuses a row with a field that is not valid UTF-8: kint
// (Python) cannot represent such text, so the epoch would not open there.
func ValidUTF8Row(r *Row) error {
	if !utf8.ValidString(r.Tier) {
		return fmt.Errorf("tier: %w", ErrInvalidUTF8)
	}
	if !utf8.ValidString(r.Key) {
		return fmt.Errorf("key: %w", ErrInvalidUTF8)
	}
	for i, f := range r.nullableFields() {
		if f != nil && !utf8.ValidString(*f) {
			return fmt.Errorf("%s: %w", rowFieldNames[i], ErrInvalidUTF8)
		}
	}
	if !r.Body.validUTF8() {
		return fmt.Errorf("%s: %w", rowFieldNames[bodyField], ErrInvalidUTF8)
	}
	return nil
}

func validUTF8Deleted(d *Deleted) error {
	if !utf8.ValidString(d.Tier) || !utf8.ValidString(d.Key) || (d.Category != nil && !utf8.ValidString(*d.Category)) {
		return fmt.Errorf("deleted %q: %w", d.Key, ErrInvalidUTF8)
	}
	return nil
}

package seal

import (
	"encoding/hex"
	"fmt"
	"math"
	"unicode/utf16"
	"unicode/utf8"
)

// DecodePlaintext parses an epoch plaintext strictly: v must be 1, every key
// must be present exactly once with its v1 type, unknown keys are refused,
// and "snapshot", when present, must be a boolean. Whitespace and key order
// are not significant (kint writes neither). It never panics.
func DecodePlaintext(b []byte) (*Plaintext, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%w: not valid utf-8", ErrPlaintext)
	}
	d := &jsonDecoder{b: b}
	p, err := d.plaintext()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPlaintext, err)
	}
	return p, nil
}

type jsonDecoder struct {
	b []byte
	i int
}

func (d *jsonDecoder) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", d.i, fmt.Sprintf(format, args...))
}

func (d *jsonDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (d *jsonDecoder) peek() byte {
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

func (d *jsonDecoder) expect(c byte) error {
	if d.peek() != c {
		return d.errorf("expected %q", c)
	}
	d.i++
	return nil
}

func (d *jsonDecoder) literal(word string) bool {
	d.ws()
	if len(d.b)-d.i >= len(word) && string(d.b[d.i:d.i+len(word)]) == word {
		d.i += len(word)
		return true
	}
	return false
}

// object calls field for each key; field must consume the value.
func (d *jsonDecoder) object(field func(key string) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	if d.peek() == '}' {
		d.i++
		return nil
	}
	for {
		key, err := d.str()
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.errorf("expected ',' or '}'")
		}
	}
}

// array calls elem for each element; elem must consume it.
func (d *jsonDecoder) array(elem func() error) error {
	if err := d.expect('['); err != nil {
		return err
	}
	if d.peek() == ']' {
		d.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return nil
		default:
			return d.errorf("expected ',' or ']'")
		}
	}
}

func (d *jsonDecoder) str() (string, error) {
	b, _, err := d.strRaw()
	return string(b), err
}

// strBytes reads a string as bytes of its own (a body: one copy out of the plaintext).
func (d *jsonDecoder) strBytes() ([]byte, error) {
	b, own, err := d.strRaw()
	if err != nil || own {
		return b, err
	}
	return append(make([]byte, 0, len(b)), b...), nil
}

// strRaw reads a string: a slice of the input when it has no escapes (own false), else a
// buffer of its own.
func (d *jsonDecoder) strRaw() (b []byte, own bool, err error) {
	if err := d.expect('"'); err != nil {
		return nil, false, err
	}
	start := d.i
	// Fast path: no escapes.
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '"' {
			s := d.b[start:d.i]
			d.i++
			return s, false, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return nil, false, d.errorf("control character in string")
		}
		d.i++
	}
	buf := append([]byte(nil), d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return buf, true, nil
		case c < 0x20:
			return nil, false, d.errorf("control character in string")
		case c != '\\':
			buf = append(buf, c)
			d.i++
			continue
		}
		d.i++
		if d.i >= len(d.b) {
			break
		}
		e := d.b[d.i]
		d.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return nil, false, d.errorf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// Only a high surrogate followed by an escaped low one is a
				// character; a lone half cannot be UTF-8.
				if r >= 0xdc00 || d.i+1 >= len(d.b) || d.b[d.i] != '\\' || d.b[d.i+1] != 'u' {
					return nil, false, d.errorf("lone surrogate")
				}
				d.i += 2
				lo, ok := d.hex4()
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return nil, false, d.errorf("lone surrogate")
				}
				r = utf16.DecodeRune(r, lo)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return nil, false, d.errorf("bad escape \\%c", e)
		}
	}
	return nil, false, d.errorf("unterminated string")
}

func (d *jsonDecoder) hex4() (rune, bool) {
	if len(d.b)-d.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	d.i += 4
	return r, true
}

func (d *jsonDecoder) nullableBody() (Body, error) {
	if d.literal("null") {
		return Body{}, nil
	}
	b, err := d.strBytes()
	if err != nil {
		return Body{}, err
	}
	return BodyOf(b), nil
}

func (d *jsonDecoder) nullableStr() (*string, error) {
	if d.literal("null") {
		return nil, nil
	}
	s, err := d.str()
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// uint reads a non-negative integer literal: no sign, fraction, exponent or
// leading zero, as Python writes ints.
func (d *jsonDecoder) uint() (uint64, error) {
	d.ws()
	start := d.i
	var v uint64
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		digit := uint64(d.b[d.i] - '0')
		if v > (math.MaxUint64-digit)/10 {
			return 0, d.errorf("integer overflows")
		}
		v = v*10 + digit
		d.i++
	}
	switch {
	case d.i == start:
		return 0, d.errorf("expected a non-negative integer")
	case d.i-start > 1 && d.b[start] == '0':
		return 0, d.errorf("leading zero")
	case d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E'):
		return 0, d.errorf("expected an integer")
	}
	return v, nil
}

func (d *jsonDecoder) hex32() ([32]byte, error) {
	var out [32]byte
	s, err := d.str()
	if err != nil {
		return out, err
	}
	if len(s) != 64 {
		return out, d.errorf("expected 64 hex characters")
	}
	if _, err := hex.Decode(out[:], []byte(s)); err != nil {
		return out, d.errorf("expected 64 hex characters")
	}
	return out, nil
}

func validTier(t string) bool {
	return t == TierEntity || t == TierState || t == TierReference || t == TierJournal
}

func (d *jsonDecoder) plaintext() (*Plaintext, error) {
	p := &Plaintext{Rows: []Row{}, Deleted: []Deleted{}}
	const (
		fV = 1 << iota
		fTenant
		fSpace
		fSeq
		fPrev
		fRows
		fDeleted
		fRoot
		fNRows
		fCreated
		fSnapshot
		required = fSnapshot - 1
	)
	seen := 0
	err := d.object(func(key string) error {
		var bit int
		var err error
		switch key {
		case "v":
			bit = fV
			var v uint64
			if v, err = d.uint(); err == nil && v != 1 {
				err = fmt.Errorf("unsupported plaintext version %d", v)
			}
		case "tenant":
			bit = fTenant
			p.Tenant, err = d.str()
		case "space":
			bit = fSpace
			p.Space, err = d.hex32()
		case "seq":
			bit = fSeq
			p.Seq, err = d.uint()
		case "prev":
			bit = fPrev
			p.Prev, err = d.hex32()
		case "rows":
			bit = fRows
			err = d.array(func() error {
				r, err := d.row()
				p.Rows = append(p.Rows, r)
				return err
			})
		case "deleted":
			bit = fDeleted
			err = d.array(func() error {
				del, err := d.deleted()
				p.Deleted = append(p.Deleted, del)
				return err
			})
		case "rows_root":
			bit = fRoot
			p.RowsRoot, err = d.hex32()
		case "n_rows":
			bit = fNRows
			var n uint64
			if n, err = d.uint(); err == nil {
				if n > math.MaxInt32 {
					err = fmt.Errorf("n_rows %d is out of range", n)
				}
				p.NRows = int(n)
			}
		case "created_at":
			bit = fCreated
			p.CreatedAt, err = d.str()
		case "snapshot":
			bit = fSnapshot
			switch {
			case d.literal("true"):
				p.Snapshot = true
			case d.literal("false"):
			default:
				err = d.errorf("snapshot must be a boolean")
			}
		default:
			return fmt.Errorf("unknown key %q", key)
		}
		if seen&bit != 0 {
			return fmt.Errorf("duplicate key %q", key)
		}
		seen |= bit
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if seen&required != required {
		return nil, fmt.Errorf("missing keys (have mask %#x)", seen)
	}
	if d.peek() != 0 {
		return nil, d.errorf("trailing data")
	}
	return p, nil
}

func (d *jsonDecoder) row() (Row, error) {
	var r Row
	ptrs := r.nullableFieldPtrs()
	seen := 0
	err := d.object(func(key string) error {
		bit := 0
		var err error
		switch key {
		case "tier":
			bit = 1 << 9
			if r.Tier, err = d.str(); err == nil && !validTier(r.Tier) {
				err = fmt.Errorf("unknown tier %q", r.Tier)
			}
		case "key":
			bit = 1 << 10
			r.Key, err = d.str()
		default:
			i := 0
			for i < len(rowFieldNames) && rowFieldNames[i] != key {
				i++
			}
			if i == len(rowFieldNames) {
				return fmt.Errorf("row: unknown key %q", key)
			}
			bit = 1 << i
			if i == bodyField {
				r.Body, err = d.nullableBody()
			} else {
				*ptrs[i], err = d.nullableStr()
			}
		}
		if seen&bit != 0 {
			return fmt.Errorf("row: duplicate key %q", key)
		}
		seen |= bit
		if err != nil {
			return fmt.Errorf("row %s: %w", key, err)
		}
		return nil
	})
	if err == nil && seen != 1<<11-1 {
		err = fmt.Errorf("row %q: missing keys", r.Key)
	}
	return r, err
}

func (d *jsonDecoder) deleted() (Deleted, error) {
	var del Deleted
	n := 0
	err := d.array(func() error {
		var err error
		switch n {
		case 0:
			if del.Tier, err = d.str(); err == nil && !validTier(del.Tier) {
				err = fmt.Errorf("deleted: unknown tier %q", del.Tier)
			}
		case 1:
			del.Category, err = d.nullableStr()
		case 2:
			del.Key, err = d.str()
		default:
			err = fmt.Errorf("deleted: more than three entries")
		}
		n++
		return err
	})
	if err == nil && n != 3 {
		err = fmt.Errorf("deleted: want [tier, category, key]")
	}
	return del, err
}

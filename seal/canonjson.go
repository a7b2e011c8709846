package seal

import (
	"encoding/hex"
	"strconv"
	"time"
)

// The plaintext is hashed, compared and cached as bytes, so it must come out
// exactly as kint's json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
// writes it. encoding/json escapes <, >, &, U+2028 and U+2029 and would not
// match, hence this small encoder.

const hexLower = "0123456789abcdef"

// AppendJSONString appends s as a JSON string the way Python's json.dumps
// with ensure_ascii=False does: only '"', '\\' and bytes below 0x20 are
// escaped; everything else, U+007F, U+2028 and astral characters included,
// is copied through as UTF-8. s is expected to be valid UTF-8
// (see ValidUTF8Row); other bytes are copied as they are.
func AppendJSONString(dst []byte, s string) []byte { return appendJSONString(dst, s) }

// appendJSONString is AppendJSONString of a string or of bytes (a body, written where it lies,
// never copied to a string first).
func appendJSONString[T string | []byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexLower[c>>4], hexLower[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// jsonEscapeMax is the most bytes appendJSONString writes for one byte of its input (\u00XX).
const jsonEscapeMax = 6

// rowJSONMax bounds len(appendRowJSON(nil, r)) without encoding the row: every string at its
// most escaped.
func rowJSONMax(r *Row) int {
	str := func(n int) int { return 2 + jsonEscapeMax*n }
	n := len(`{"tier":,"key":}`) + str(len(r.Tier)) + str(len(r.Key))
	for i, f := range r.nullableFields() {
		n += len(`,"":`) + len(rowFieldNames[i])
		switch {
		case i == bodyField:
			n += max(len("null"), str(len(r.Body.b)))
		case f == nil:
			n += len("null")
		default:
			n += str(len(*f))
		}
	}
	return n
}

func appendNullableString(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return AppendJSONString(dst, *s)
}

func appendNullableBody(dst []byte, b Body) []byte {
	if !b.valid {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, b.b)
}

func appendHex32(dst []byte, b *[32]byte) []byte {
	dst = append(dst, '"')
	dst = hex.AppendEncode(dst, b[:])
	return append(dst, '"')
}

// appendRowJSON writes one wire row, keys in the v1 order.
func appendRowJSON(dst []byte, r *Row) []byte {
	dst = append(dst, `{"tier":`...)
	dst = AppendJSONString(dst, r.Tier)
	dst = append(dst, `,"key":`...)
	dst = AppendJSONString(dst, r.Key)
	for i, f := range r.nullableFields() {
		dst = append(dst, ',', '"')
		dst = append(dst, rowFieldNames[i]...)
		dst = append(dst, '"', ':')
		if i == bodyField {
			dst = appendNullableBody(dst, r.Body)
			continue
		}
		dst = appendNullableString(dst, f)
	}
	return append(dst, '}')
}

// appendDeletedJSON writes one [tier, category|null, key] triple.
func appendDeletedJSON(dst []byte, d *Deleted) []byte {
	dst = append(dst, '[')
	dst = AppendJSONString(dst, d.Tier)
	dst = append(dst, ',')
	dst = appendNullableString(dst, d.Category)
	dst = append(dst, ',')
	dst = AppendJSONString(dst, d.Key)
	return append(dst, ']')
}

func appendRowsJSON(dst []byte, rows []Row) []byte {
	dst = append(dst, '[')
	for i := range rows {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendRowJSON(dst, &rows[i])
	}
	return append(dst, ']')
}

func appendDeletedListJSON(dst []byte, dels []Deleted) []byte {
	dst = append(dst, '[')
	for i := range dels {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendDeletedJSON(dst, &dels[i])
	}
	return append(dst, ']')
}

// EncodePlaintext serialises p as the v1 epoch plaintext, byte for byte as
// kint writes it. The "snapshot" key is present only when p.Snapshot is set.
// Rows are written in slice order; kint writes them in the order of its diff.
func EncodePlaintext(p *Plaintext) []byte {
	dst := make([]byte, 0, 512+estimateRowsLen(p.Rows))
	dst = append(dst, `{"v":1,"tenant":`...)
	dst = AppendJSONString(dst, p.Tenant)
	dst = append(dst, `,"space":`...)
	dst = appendHex32(dst, &p.Space)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, p.Seq, 10)
	dst = append(dst, `,"prev":`...)
	dst = appendHex32(dst, &p.Prev)
	dst = append(dst, `,"rows":`...)
	dst = appendRowsJSON(dst, p.Rows)
	dst = append(dst, `,"deleted":`...)
	dst = appendDeletedListJSON(dst, p.Deleted)
	dst = append(dst, `,"rows_root":`...)
	dst = appendHex32(dst, &p.RowsRoot)
	dst = append(dst, `,"n_rows":`...)
	dst = strconv.AppendInt(dst, int64(p.NRows), 10)
	dst = append(dst, `,"created_at":`...)
	dst = AppendJSONString(dst, p.CreatedAt)
	if p.Snapshot {
		dst = append(dst, `,"snapshot":true`...)
	}
	return append(dst, '}')
}

func estimateRowsLen(rows []Row) int {
	n := 0
	for i := range rows {
		n += 160 + len(rows[i].Key) + rows[i].Body.Len()
		for _, f := range rows[i].nullableFields() {
			if f != nil {
				n += len(*f)
			}
		}
	}
	return n
}

// createdAtLayout is kint's created_at: UTC, %Y-%m-%dT%H:%M:%SZ.
const createdAtLayout = "2006-01-02T15:04:05Z"

// FormatCreatedAt renders t as kint's created_at.
func FormatCreatedAt(t time.Time) string {
	return t.UTC().Format(createdAtLayout)
}

// ParseCreatedAt parses an epoch's created_at (the zero time when it does not parse).
func ParseCreatedAt(s string) time.Time {
	t, _ := time.Parse(createdAtLayout, s)
	return t
}

// AppendRowJSON appends one row as a wire row object: every field, keys in the v1 order,
// nulls as null.
func AppendRowJSON(dst []byte, r *Row) []byte { return appendRowJSON(dst, r) }

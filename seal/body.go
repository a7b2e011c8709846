package seal

import (
	"errors"
	"unicode/utf8"
)

// Body is a row's body: null (the zero value, what a deletion of the body leaves) or bytes,
// possibly none. It holds the bytes it is given without copying them, so a body read from the
// store or a file's buffer travels to the epoch's JSON and back as the one slice; whoever
// hands bytes to BodyOf must not change them while the row is in use.
type Body struct {
	b     []byte
	valid bool
}

// BodyOf is the body made of b (an empty body when b is empty, never null). b is not copied.
func BodyOf(b []byte) Body { return Body{b: b, valid: true} }

// BodyString is the body made of a copy of s.
func BodyString(s string) Body { return Body{b: []byte(s), valid: true} }

// IsNull reports whether the body is null.
func (b Body) IsNull() bool { return !b.valid }

// Bytes are the body's bytes, nil for a null body; they are the body's own, not a copy.
func (b Body) Bytes() []byte { return b.b }

// Len is the body's length in bytes (0 for null).
func (b Body) Len() int { return len(b.b) }

// Equal reports whether two bodies are both null or hold the same bytes.
func (b Body) Equal(o Body) bool {
	return b.valid == o.valid && string(b.b) == string(o.b)
}

// validUTF8 reports whether the body is null or valid UTF-8.
func (b Body) validUTF8() bool { return !b.valid || utf8.Valid(b.b) }

// MarshalJSON writes the body as a JSON string (null for null), for the store's records. It
// is no wire format: an epoch's rows are written by EncodePlaintext.
func (b Body) MarshalJSON() ([]byte, error) {
	if !b.valid {
		return []byte("null"), nil
	}
	if !utf8.Valid(b.b) {
		// encoding/json would turn each bad byte into U+FFFD; the store keeps such a body apart
		return nil, errBodyNotUTF8
	}
	return appendJSONString(make([]byte, 0, len(b.b)+2), b.b), nil
}

var errBodyNotUTF8 = errors.New("a body that is not valid UTF-8 has no JSON string")

// UnmarshalJSON reads a JSON string or null, as MarshalJSON and encoding/json write a string.
func (b *Body) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*b = Body{}
		return nil
	}
	d := jsonDecoder{b: data}
	s, err := d.strBytes()
	if err != nil {
		return err
	}
	if d.peek() != 0 {
		return d.errorf("trailing data")
	}
	*b = BodyOf(s)
	return nil
}

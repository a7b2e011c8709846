package seal

import (
	"encoding/binary"
	"fmt"
)

// Header layout constants.
const (
	Version1            = 0x01
	FlagSaltedSignature = 0x01 // defined, set by no writer; readers must not branch on it
	FlagSnapshot        = 0x02
	HeaderFixedLen      = 59
	WrapLen             = 77
)

// Wrap kinds. 0x03 and 0x04 are reserved: such wraps are carried untouched.
const (
	KindSignature  = 0x01
	KindPassphrase = 0x02
)

// Buckets are the padded payload sizes an epoch may use.
var Buckets = [...]int{4096, 8192, 16384, 32768, 65536, 98304}

// Wrap is the data key encrypted under one key-encryption key.
type Wrap struct {
	Kind    byte
	Tag     [16]byte // kek_tag of the KEK that wraps
	Nonce   [12]byte
	Wrapped [48]byte // 32 bytes of ciphertext, 16 of GCM tag
}

// Header is the public, unencrypted front of an epoch blob.
type Header struct {
	Version  byte
	Flags    byte
	Nonce    [12]byte
	RowsRoot [32]byte
	DekID    [8]byte
	Bucket   uint32
	Wraps    []Wrap
}

// Len is the encoded length of the header.
func (h *Header) Len() int { return HeaderFixedLen + WrapLen*len(h.Wraps) }

// Encode writes the header; at most 255 wraps fit (n_wraps is one byte).
func (h *Header) Encode() []byte {
	b := make([]byte, 0, h.Len())
	return h.appendTo(b)
}

func (h *Header) appendTo(b []byte) []byte {
	b = append(b, h.Version, h.Flags)
	b = append(b, h.Nonce[:]...)
	b = append(b, h.RowsRoot[:]...)
	b = append(b, h.DekID[:]...)
	b = binary.BigEndian.AppendUint32(b, h.Bucket)
	b = append(b, byte(len(h.Wraps)))
	for i := range h.Wraps {
		b = h.Wraps[i].appendTo(b)
	}
	return b
}

func (w *Wrap) appendTo(b []byte) []byte {
	b = append(b, w.Kind)
	b = append(b, w.Tag[:]...)
	b = append(b, w.Nonce[:]...)
	return append(b, w.Wrapped[:]...)
}

// Bytes is the 77-byte encoding of the wrap.
func (w *Wrap) Bytes() []byte { return w.appendTo(make([]byte, 0, WrapLen)) }

// ParseHeader reads the header at the front of blob and returns it with its
// length. Unknown flag bits and wrap kinds are kept, never refused.
func ParseHeader(blob []byte) (*Header, int, error) {
	if len(blob) < HeaderFixedLen {
		return nil, 0, fmt.Errorf("%w: %d bytes, need %d", ErrHeaderShort, len(blob), HeaderFixedLen)
	}
	if blob[0] != Version1 {
		return nil, 0, fmt.Errorf("%w: 0x%02x", ErrHeaderVersion, blob[0])
	}
	h := &Header{Version: blob[0], Flags: blob[1]}
	copy(h.Nonce[:], blob[2:14])
	copy(h.RowsRoot[:], blob[14:46])
	copy(h.DekID[:], blob[46:54])
	h.Bucket = binary.BigEndian.Uint32(blob[54:58])
	n := int(blob[58])
	total := HeaderFixedLen + WrapLen*n
	if len(blob) < total {
		return nil, 0, fmt.Errorf("%w: %d wraps need %d bytes, have %d", ErrHeaderShort, n, total, len(blob))
	}
	h.Wraps = make([]Wrap, n)
	for i := range h.Wraps {
		b := blob[HeaderFixedLen+WrapLen*i:]
		w := &h.Wraps[i]
		w.Kind = b[0]
		copy(w.Tag[:], b[1:17])
		copy(w.Nonce[:], b[17:29])
		copy(w.Wrapped[:], b[29:77])
	}
	return h, total, nil
}

// IsSnapshot reports the header's snapshot flag. On its own it is only a
// claim: the flag is outside the AAD, and Open requires the plaintext to agree.
func (h *Header) IsSnapshot() bool { return h.Flags&FlagSnapshot != 0 }

// ChooseBucket picks the smallest bucket that holds gzLen plus the 4-byte
// length prefix and is not smaller than prevBucket (the ratchet per space).
// A prevBucket above the largest bucket counts as the largest.
func ChooseBucket(gzLen, prevBucket int) (int, error) {
	for _, b := range Buckets {
		if b >= gzLen+4 && (b >= prevBucket || b == Buckets[len(Buckets)-1]) {
			return b, nil
		}
	}
	return 0, fmt.Errorf("%w: %d compressed bytes, the largest bucket holds %d", ErrTooLarge, gzLen, Buckets[len(Buckets)-1]-4)
}

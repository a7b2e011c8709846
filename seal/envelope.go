package seal

import (
	"encoding/binary"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// MaxPlaintext bounds the inflated plaintext of one epoch. Deflate expands
// at most about 1032:1, so no payload that fits the largest bucket can
// legitimately pass it; it only stops a hostile one from exhausting memory.
const MaxPlaintext = 128 << 20

const gcmTagLen = 16

// EpochContext is what an epoch is bound to on chain; it feeds the AAD.
type EpochContext struct {
	ChainID uint64
	Owner   common.Address
	Space   common.Hash
	Seq     uint64
	Prev    common.Hash
}

// AAD is keccak256(abi.encode(uint256 chainId, address owner, bytes32 space,
// uint64 seq, bytes32 prev, uint32 bucket, bytes32 rows_root, bytes8 dek_id)).
func AAD(c EpochContext, bucket uint32, rowsRoot [32]byte, dekID [8]byte) [32]byte {
	var enc [8 * 32]byte
	binary.BigEndian.PutUint64(enc[24:32], c.ChainID)
	copy(enc[32+12:64], c.Owner[:])
	copy(enc[64:96], c.Space[:])
	binary.BigEndian.PutUint64(enc[96+24:128], c.Seq)
	copy(enc[128:160], c.Prev[:])
	binary.BigEndian.PutUint32(enc[160+28:192], bucket)
	copy(enc[192:224], rowsRoot[:])
	copy(enc[224:232], dekID[:]) // bytesN is left-aligned in its word
	return crypto.Keccak256Hash(enc[:])
}

// Sealed is a finished epoch.
type Sealed struct {
	Blob      []byte      // header || ciphertext: the ct argument of push
	Bucket    int         // padded payload size
	Digest    common.Hash // keccak256(Blob), what the contract stores
	Plaintext []byte      // the plaintext JSON that was sealed
	Header    *Header
}

// Seal encodes, compresses, pads and encrypts p for context c under dek,
// with the given wraps in the header. prevBucket is the bucket of the
// previous epoch in this space (0 for none); nonce must be fresh for dek.
// p must agree with c on seq, space and prev.
func Seal(p *Plaintext, c EpochContext, dek [32]byte, wraps []Wrap, prevBucket int, nonce [12]byte) (*Sealed, error) {
	if p.Seq != c.Seq {
		return nil, fmt.Errorf("seal: %w: plaintext %d, context %d", ErrSeqMismatch, p.Seq, c.Seq)
	}
	if p.Space != c.Space {
		return nil, fmt.Errorf("seal: %w", ErrSpaceMismatch)
	}
	if p.Prev != c.Prev {
		return nil, fmt.Errorf("seal: %w", ErrPrevMismatch)
	}
	if len(wraps) > 255 {
		return nil, fmt.Errorf("seal: %d wraps, a header holds at most 255", len(wraps))
	}
	for i := range p.Rows {
		if err := ValidUTF8Row(&p.Rows[i]); err != nil {
			return nil, fmt.Errorf("seal: row %s %q: %w", p.Rows[i].Tier, p.Rows[i].Key, err)
		}
	}
	for i := range p.Deleted {
		if err := validUTF8Deleted(&p.Deleted[i]); err != nil {
			return nil, fmt.Errorf("seal: %w", err)
		}
	}
	pt := EncodePlaintext(p)
	if len(pt) > MaxPlaintext {
		// it might compress into a bucket, but no reader would inflate it
		return nil, fmt.Errorf("seal: %w: the plaintext is %d bytes, more than the %d a reader opens", ErrTooLarge, len(pt), MaxPlaintext)
	}
	var flags byte
	if p.Snapshot {
		flags |= FlagSnapshot
	}
	return sealEncoded(pt, p.RowsRoot, flags, c, dek, wraps, prevBucket, nonce)
}

// sealEncoded seals plaintext bytes as given; Seal checks them first.
func sealEncoded(pt []byte, rowsRoot [32]byte, flags byte, c EpochContext, dek [32]byte, wraps []Wrap, prevBucket int, nonce [12]byte) (*Sealed, error) {
	gz := Compress(pt)
	bucket, err := ChooseBucket(len(gz), prevBucket)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	h := &Header{
		Version:  Version1,
		Flags:    flags,
		Nonce:    nonce,
		RowsRoot: rowsRoot,
		DekID:    DEKID(dek),
		Bucket:   uint32(bucket),
		Wraps:    append([]Wrap(nil), wraps...),
	}
	padded := make([]byte, bucket)
	binary.BigEndian.PutUint32(padded, uint32(len(gz)))
	copy(padded[4:], gz)
	aad := AAD(c, h.Bucket, rowsRoot, h.DekID)

	blob := make([]byte, 0, h.Len()+bucket+gcmTagLen)
	blob = h.appendTo(blob)
	blob = newGCM(dek[:]).Seal(blob, nonce[:], padded, aad[:])
	return &Sealed{
		Blob:      blob,
		Bucket:    bucket,
		Digest:    crypto.Keccak256Hash(blob),
		Plaintext: pt,
		Header:    h,
	}, nil
}

// Opened is a decrypted, checked epoch.
type Opened struct {
	Header    *Header
	Plaintext *Plaintext
	Raw       []byte // the plaintext JSON bytes
}

// Open decrypts blob with dek and checks it against c, in the order the
// format prescribes: header, ciphertext length, dek_id, GCM under the AAD,
// then the plaintext's seq, space, prev and rows_root, and finally that the
// header and plaintext agree about being a snapshot.
func Open(blob []byte, dek [32]byte, c EpochContext) (*Opened, error) {
	h, n, err := ParseHeader(blob)
	if err != nil {
		return nil, err
	}
	ct := blob[n:]
	if uint64(len(ct)) != uint64(h.Bucket)+gcmTagLen {
		return nil, fmt.Errorf("%w: %d bytes for bucket %d", ErrCiphertextLength, len(ct), h.Bucket)
	}
	if DEKID(dek) != h.DekID {
		return nil, ErrDekIDMismatch
	}
	aad := AAD(c, h.Bucket, h.RowsRoot, h.DekID)
	padded, err := newGCM(dek[:]).Open(nil, h.Nonce[:], ct, aad[:])
	if err != nil {
		return nil, fmt.Errorf("open epoch %d: %w", c.Seq, ErrTagMismatch)
	}
	if len(padded) < 4 {
		return nil, fmt.Errorf("%w: payload of %d bytes", ErrPayloadLength, len(padded))
	}
	gzLen := binary.BigEndian.Uint32(padded)
	if uint64(gzLen) > uint64(len(padded)-4) {
		return nil, fmt.Errorf("%w: %d bytes claimed in a %d-byte bucket", ErrPayloadLength, gzLen, len(padded))
	}
	raw, err := Decompress(padded[4:4+gzLen], MaxPlaintext)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPlaintext, err)
	}
	p, err := DecodePlaintext(raw)
	if err != nil {
		return nil, err
	}
	if p.Seq != c.Seq {
		return nil, fmt.Errorf("%w: plaintext seq %d, chain seq %d", ErrSeqMismatch, p.Seq, c.Seq)
	}
	if p.Space != c.Space {
		return nil, ErrSpaceMismatch
	}
	if p.Prev != c.Prev {
		return nil, ErrPrevMismatch
	}
	if p.RowsRoot != h.RowsRoot {
		return nil, ErrRootMismatch
	}
	if p.Snapshot != h.IsSnapshot() {
		return nil, ErrSnapshotDisagree
	}
	return &Opened{Header: h, Plaintext: p, Raw: raw}, nil
}

package seal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/seal/vectors"
)

func epochContext(v *vectors.Vectors, e *vectors.Epoch) EpochContext {
	return EpochContext{ChainID: v.ChainID, Owner: v.Owner, Space: v.Space, Seq: e.Seq, Prev: e.Prev}
}

func vectorWraps(v *vectors.Vectors) []Wrap {
	var ws []Wrap
	for _, w := range v.Wraps {
		ws = append(ws, WrapDEK(w.KEK, w.Kind, v.DEK, w.Nonce))
	}
	return ws
}

func TestAADVectors(t *testing.T) {
	v := vectors.Load(t)
	for _, e := range []*vectors.Epoch{&v.Epoch1, &v.Epoch2} {
		got := AAD(epochContext(v, e), e.Header.Bucket, e.RowsRoot, v.DEKID)
		if got != e.AAD {
			t.Errorf("epoch %d AAD = %x, want %x", e.Seq, got, e.AAD)
		}
	}
}

func TestSealReproducesVectorBlobs(t *testing.T) {
	v := vectors.Load(t)
	prevBucket := 0
	for _, e := range []*vectors.Epoch{&v.Epoch1, &v.Epoch2} {
		p := vectorPlaintext(v, e)
		s, err := Seal(p, epochContext(v, e), v.DEK, vectorWraps(v), prevBucket, e.Header.Nonce)
		if err != nil {
			t.Fatalf("epoch %d: %v", e.Seq, err)
		}
		if !bytes.Equal(s.Blob, e.Blob) {
			t.Errorf("epoch %d blob differs (len %d vs %d)", e.Seq, len(s.Blob), len(e.Blob))
		}
		if s.Digest != e.Digest || s.Digest != crypto.Keccak256Hash(e.Blob) {
			t.Errorf("epoch %d digest = %x, want %x", e.Seq, s.Digest, e.Digest)
		}
		if s.Bucket != e.Bucket || !bytes.Equal(s.Plaintext, e.Plaintext) {
			t.Errorf("epoch %d bucket %d / plaintext mismatch", e.Seq, s.Bucket)
		}
		if s.Header.Flags != e.Flags || s.Header.Len() != e.Header.Length {
			t.Errorf("epoch %d header flags %#x len %d", e.Seq, s.Header.Flags, s.Header.Len())
		}
		prevBucket = s.Bucket
	}
	if v.Epoch2.Prev != v.Epoch1.Digest {
		t.Error("epoch 2 must name epoch 1's digest")
	}
}

func TestOpenVectorBlobs(t *testing.T) {
	v := vectors.Load(t)
	for _, e := range []*vectors.Epoch{&v.Epoch1, &v.Epoch2} {
		want := vectorPlaintext(v, e)
		if want.Deleted == nil {
			want.Deleted = []Deleted{}
		}
		check := func(how string, o *Opened, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("epoch %d via %s: %v", e.Seq, how, err)
			}
			if !reflect.DeepEqual(o.Plaintext, want) || !bytes.Equal(o.Raw, e.Plaintext) || o.Header.IsSnapshot() != e.SnapshotFlagSet {
				t.Errorf("epoch %d via %s: opened %+v", e.Seq, how, o.Plaintext)
			}
		}
		o, err := Open(e.Blob, v.DEK, epochContext(v, e))
		check("dek", o, err)
		for _, k := range []vectors.KEK{v.KEKSignature, v.KEKSignatureSalted, v.KEKPassphrase} {
			h, _, err := ParseHeader(e.Blob)
			if err != nil {
				t.Fatal(err)
			}
			dek, err := DEKFromHeader(h, k.KEK)
			if err != nil {
				t.Fatalf("epoch %d kind %d: %v", e.Seq, k.Kind, err)
			}
			o, err := Open(e.Blob, dek, epochContext(v, e))
			check("kek", o, err)
		}
	}
}

func TestPushCalldataVector(t *testing.T) {
	v := vectors.Load(t)
	const pushABI = `[{"type":"function","name":"push","stateMutability":"nonpayable",
		"inputs":[{"name":"owner","type":"address"},{"name":"space","type":"bytes32"},{"name":"prev","type":"bytes32"},{"name":"ct","type":"bytes"}],
		"outputs":[{"name":"digest","type":"bytes32"},{"name":"seq","type":"uint64"}]}]`
	parsed, err := abi.JSON(strings.NewReader(pushABI))
	if err != nil {
		t.Fatal(err)
	}
	pc := v.PushCalldata
	p := vectorPlaintext(v, &v.Epoch1)
	s, err := Seal(p, epochContext(v, &v.Epoch1), v.DEK, vectorWraps(v), 0, v.Epoch1.Header.Nonce)
	if err != nil {
		t.Fatal(err)
	}
	data, err := parsed.Pack("push", pc.Owner, [32]byte(pc.Space), [32]byte(pc.Prev), s.Blob)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, pc.Data) {
		t.Errorf("calldata differs: %d bytes vs %d", len(data), len(pc.Data))
	}
	if !bytes.Equal(data[:4], pc.Selector[:]) || !bytes.Equal(parsed.Methods["push"].ID, pc.Selector[:]) {
		t.Errorf("selector = %x, want %x", data[:4], pc.Selector)
	}
	if pc.Owner != v.Owner || pc.Space != v.Space || pc.Prev != (common.Hash{}) {
		t.Error("calldata arguments differ from the vault")
	}
	if s.Digest != pc.CTKeccak || len(s.Blob) != pc.CTLength {
		t.Errorf("ct keccak %x / length %d", s.Digest, len(s.Blob))
	}
}

// openErr opens a changed copy of an epoch blob.
func openErr(v *vectors.Vectors, e *vectors.Epoch, change func(b []byte) []byte, ctx func(*EpochContext)) error {
	b := change(bytes.Clone(e.Blob))
	c := epochContext(v, e)
	if ctx != nil {
		ctx(&c)
	}
	_, err := Open(b, v.DEK, c)
	return err
}

func at(i int, x byte) func([]byte) []byte {
	return func(b []byte) []byte { b[i] ^= x; return b }
}

func same(b []byte) []byte { return b }

func TestOpenRefusals(t *testing.T) {
	v := vectors.Load(t)
	e1, e2 := &v.Epoch1, &v.Epoch2
	hl := e1.Header.Length
	cases := []struct {
		name   string
		e      *vectors.Epoch
		change func([]byte) []byte
		ctx    func(*EpochContext)
		want   error
	}{
		{"version byte", e1, at(0, 0x03), nil, ErrHeaderVersion},
		{"nonce", e1, at(2, 0x01), nil, ErrTagMismatch},
		{"nonce last byte", e1, at(13, 0x80), nil, ErrTagMismatch},
		{"rows_root", e1, at(14, 0x01), nil, ErrTagMismatch},
		{"rows_root last byte", e1, at(45, 0x01), nil, ErrTagMismatch},
		{"dek_id", e1, at(46, 0x01), nil, ErrDekIDMismatch},
		{"bucket", e1, at(55, 0x20), nil, ErrCiphertextLength},
		{"bucket low byte", e1, at(57, 0x01), nil, ErrCiphertextLength},
		{"n_wraps up", e1, at(58, 0x07), nil, ErrCiphertextLength},
		{"n_wraps down", e1, at(58, 0x01), nil, ErrCiphertextLength},
		{"ciphertext first byte", e1, at(hl, 0x01), nil, ErrTagMismatch},
		{"ciphertext middle", e1, at(hl+2000, 0x40), nil, ErrTagMismatch},
		{"gcm tag", e1, at(len(e1.Blob)-1, 0x01), nil, ErrTagMismatch},
		{"truncated in fixed header", e1, func(b []byte) []byte { return b[:40] }, nil, ErrHeaderShort},
		{"truncated in wraps", e1, func(b []byte) []byte { return b[:100] }, nil, ErrHeaderShort},
		{"truncated ciphertext", e1, func(b []byte) []byte { return b[:len(b)-1] }, nil, ErrCiphertextLength},
		{"extra byte", e1, func(b []byte) []byte { return append(b, 0) }, nil, ErrCiphertextLength},
		{"empty", e1, func(b []byte) []byte { return nil }, nil, ErrHeaderShort},
		{"wrong chain id", e1, same, func(c *EpochContext) { c.ChainID = 1 }, ErrTagMismatch},
		{"wrong owner", e1, same, func(c *EpochContext) { c.Owner[19] ^= 1 }, ErrTagMismatch},
		{"wrong space", e1, same, func(c *EpochContext) { c.Space = SpaceID("other") }, ErrTagMismatch},
		{"wrong seq", e1, same, func(c *EpochContext) { c.Seq = 2 }, ErrTagMismatch},
		{"wrong prev", e2, same, func(c *EpochContext) { c.Prev[0] ^= 1 }, ErrTagMismatch},
		{"replayed at another position", e2, same, func(c *EpochContext) { c.Seq, c.Prev = e1.Seq, e1.Prev }, ErrTagMismatch},
		{"snapshot flag cleared", e2, at(1, FlagSnapshot), nil, ErrSnapshotDisagree},
		{"snapshot flag forged", e1, at(1, FlagSnapshot), nil, ErrSnapshotDisagree},
	}
	for _, c := range cases {
		err := openErr(v, c.e, c.change, c.ctx)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.want.Error()) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}

	// The messages the spec names are exact.
	err := openErr(v, e2, at(1, FlagSnapshot), nil)
	if err == nil || err.Error() != "snapshot flag disagrees between header and plaintext" {
		t.Errorf("snapshot message: %v", err)
	}
	var other [32]byte
	other[0] = 7
	if _, err := Open(e1.Blob, other, epochContext(v, e1)); !errors.Is(err, ErrDekIDMismatch) || err.Error() != "dek_id mismatch: wrong data key for this epoch" {
		t.Errorf("wrong DEK: %v", err)
	}
	if err := openErr(v, e1, at(55, 0x20), nil); !strings.Contains(err.Error(), "ciphertext length does not match bucket + 16") {
		t.Errorf("length message: %v", err)
	}

	// A wrong KEK has no wrap; it never gets as far as a trial decryption.
	h, _, _ := ParseHeader(e1.Blob)
	if _, err := DEKFromHeader(h, other); !errors.Is(err, ErrNoWrap) {
		t.Errorf("wrong KEK: %v", err)
	}
	// Wraps are outside the AAD: a damaged wrap still opens with the DEK in
	// hand, but that wrap's KEK no longer finds or opens it.
	if err := openErr(v, e1, at(HeaderFixedLen+40, 0x01), nil); err != nil {
		t.Errorf("damaged wrap blocked opening with the DEK: %v", err)
	}
	damaged := bytes.Clone(e1.Blob)
	damaged[HeaderFixedLen+1] ^= 1 // the first wrap's tag
	h, _, _ = ParseHeader(damaged)
	if _, err := DEKFromHeader(h, v.KEKSignature.KEK); !errors.Is(err, ErrNoWrap) {
		t.Errorf("damaged tag: %v", err)
	}
}

func TestOpenIgnoresUnknownFlags(t *testing.T) {
	v := vectors.Load(t)
	for _, c := range []struct {
		e    *vectors.Epoch
		bits byte
	}{{&v.Epoch1, 0x80}, {&v.Epoch1, FlagSaltedSignature}, {&v.Epoch1, 0xfd}, {&v.Epoch2, 0x80}, {&v.Epoch2, 0x7d}} {
		b := bytes.Clone(c.e.Blob)
		b[1] |= c.bits
		o, err := Open(b, v.DEK, epochContext(v, c.e))
		if err != nil {
			t.Errorf("epoch %d flags %#x: %v", c.e.Seq, b[1], err)
			continue
		}
		if o.Plaintext.Snapshot != c.e.SnapshotInPlaintext || o.Header.Flags != b[1] {
			t.Errorf("epoch %d flags %#x: opened as snapshot=%v", c.e.Seq, b[1], o.Plaintext.Snapshot)
		}
	}
}

// craft seals arbitrary plaintext bytes under the vector DEK, bypassing the
// checks Seal makes, to reach the checks Open makes after decryption.
func craft(t *testing.T, v *vectors.Vectors, pt []byte, rowsRoot [32]byte, flags byte, c EpochContext) []byte {
	t.Helper()
	s, err := sealEncoded(pt, rowsRoot, flags, c, v.DEK, vectorWraps(v), 0, [12]byte{9})
	if err != nil {
		t.Fatal(err)
	}
	return s.Blob
}

func TestOpenPlaintextChecks(t *testing.T) {
	v := vectors.Load(t)
	c := epochContext(v, &v.Epoch1)
	base := vectorPlaintext(v, &v.Epoch1)
	cases := []struct {
		name string
		edit func(p *Plaintext)
		want error
	}{
		{"seq", func(p *Plaintext) { p.Seq = 7 }, ErrSeqMismatch},
		{"space", func(p *Plaintext) { p.Space = SpaceID("elsewhere") }, ErrSpaceMismatch},
		{"prev", func(p *Plaintext) { p.Prev[31] = 1 }, ErrPrevMismatch},
		{"rows_root", func(p *Plaintext) { p.RowsRoot = EmptyRoot() }, ErrRootMismatch},
		{"snapshot key without flag", func(p *Plaintext) { p.Snapshot = true }, ErrSnapshotDisagree},
	}
	for _, tc := range cases {
		p := *base
		tc.edit(&p)
		blob := craft(t, v, EncodePlaintext(&p), base.RowsRoot, 0, c)
		if _, err := Open(blob, v.DEK, c); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.want.Error()) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	blob := craft(t, v, []byte(`{"v":1}`), base.RowsRoot, 0, c)
	if _, err := Open(blob, v.DEK, c); !errors.Is(err, ErrPlaintext) {
		t.Errorf("bad plaintext: %v", err)
	}
}

func TestOpenPayloadLengthPrefix(t *testing.T) {
	v := vectors.Load(t)
	c := epochContext(v, &v.Epoch1)
	seal := func(padded []byte) []byte {
		h := &Header{Version: Version1, RowsRoot: v.Epoch1.RowsRoot, DekID: v.DEKID, Bucket: uint32(len(padded)), Wraps: vectorWraps(v)}
		aad := AAD(c, h.Bucket, h.RowsRoot, h.DekID)
		return newGCM(v.DEK[:]).Seal(h.Encode(), h.Nonce[:], padded, aad[:])
	}
	for _, n := range []uint32{4093, 0xffffffff} {
		padded := make([]byte, 4096)
		binary.BigEndian.PutUint32(padded, n)
		if _, err := Open(seal(padded), v.DEK, c); !errors.Is(err, ErrPayloadLength) {
			t.Errorf("prefix %d: got %v", n, err)
		}
	}
	if _, err := Open(seal(make([]byte, 3)), v.DEK, c); !errors.Is(err, ErrPayloadLength) {
		t.Errorf("3-byte payload: got %v", err)
	}
	// A prefix inside the bounds over bytes that are not gzip.
	padded := make([]byte, 4096)
	binary.BigEndian.PutUint32(padded, 100)
	if _, err := Open(seal(padded), v.DEK, c); !errors.Is(err, ErrPlaintext) {
		t.Errorf("zero gzip: got %v", err)
	}
}

func TestSealRefusals(t *testing.T) {
	v := vectors.Load(t)
	c := epochContext(v, &v.Epoch1)
	p := vectorPlaintext(v, &v.Epoch1)
	try := func(edit func(*Plaintext, *EpochContext) []Wrap) error {
		pp, cc := *p, c
		wraps := edit(&pp, &cc)
		_, err := Seal(&pp, cc, v.DEK, wraps, 0, [12]byte{})
		return err
	}
	if err := try(func(p *Plaintext, c *EpochContext) []Wrap { c.Seq = 2; return nil }); !errors.Is(err, ErrSeqMismatch) {
		t.Errorf("seq: %v", err)
	}
	if err := try(func(p *Plaintext, c *EpochContext) []Wrap { c.Space[0] ^= 1; return nil }); !errors.Is(err, ErrSpaceMismatch) {
		t.Errorf("space: %v", err)
	}
	if err := try(func(p *Plaintext, c *EpochContext) []Wrap { c.Prev[0] ^= 1; return nil }); !errors.Is(err, ErrPrevMismatch) {
		t.Errorf("prev: %v", err)
	}
	if err := try(func(p *Plaintext, c *EpochContext) []Wrap { return make([]Wrap, 256) }); err == nil {
		t.Error("256 wraps accepted")
	}
	bad := "\xfe"
	if err := try(func(p *Plaintext, c *EpochContext) []Wrap {
		p.Rows = append([]Row{{Tier: TierState, Key: "k", Body: bodyp(&bad)}}, p.Rows...)
		return nil
	}); !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("invalid utf-8: %v", err)
	}
	if err := try(func(p *Plaintext, c *EpochContext) []Wrap {
		p.Deleted = []Deleted{{Tier: TierState, Key: bad}}
		return nil
	}); !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("invalid utf-8 deletion: %v", err)
	}
	noise := randomText(1, 200_000)
	if err := try(func(p *Plaintext, c *EpochContext) []Wrap {
		p.Rows = []Row{{Tier: TierState, Key: "big", Body: bodyp(&noise)}}
		return nil
	}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("too large: %v", err)
	}
}

func TestSealBucketRatchetAndRoundTrip(t *testing.T) {
	v := vectors.Load(t)
	c := epochContext(v, &v.Epoch1)
	p := vectorPlaintext(v, &v.Epoch1)
	for _, prev := range []int{0, 4096, 16384, 98304} {
		s, err := Seal(p, c, v.DEK, nil, prev, [12]byte{1, 2, 3})
		if err != nil {
			t.Fatal(err)
		}
		want := max(prev, 4096)
		if s.Bucket != want || len(s.Blob) != HeaderFixedLen+want+16 {
			t.Errorf("prev %d: bucket %d, blob %d bytes", prev, s.Bucket, len(s.Blob))
		}
		o, err := Open(s.Blob, v.DEK, c)
		if err != nil || !bytes.Equal(o.Raw, v.Epoch1.Plaintext) {
			t.Errorf("prev %d: reopen: %v", prev, err)
		}
	}
}

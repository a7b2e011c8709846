package seal

import (
	"bytes"
	"errors"
	"testing"

	"kintfs/seal/vectors"
)

func TestParseHeaderVectors(t *testing.T) {
	v := vectors.Load(t)
	for _, e := range []*vectors.Epoch{&v.Epoch1, &v.Epoch2} {
		h, n, err := ParseHeader(e.Blob)
		if err != nil {
			t.Fatalf("epoch %d: %v", e.Seq, err)
		}
		want := e.Header
		if n != want.Length || h.Len() != n || h.Version != want.Version || h.Flags != want.Flags || h.Nonce != want.Nonce ||
			h.RowsRoot != want.RowsRoot || h.DekID != want.DekID || h.Bucket != want.Bucket || len(h.Wraps) != want.NWraps {
			t.Errorf("epoch %d header = %+v (len %d), want %+v", e.Seq, h, n, want)
		}
		if h.Flags != e.Flags || h.IsSnapshot() != e.SnapshotFlagSet {
			t.Errorf("epoch %d flags = %#x", e.Seq, h.Flags)
		}
		for i := range h.Wraps {
			if !bytes.Equal(h.Wraps[i].Bytes(), v.Wraps[i].Bytes) {
				t.Errorf("epoch %d wrap %d = %x, want %x", e.Seq, i, h.Wraps[i].Bytes(), v.Wraps[i].Bytes)
			}
		}
		if !bytes.Equal(h.Encode(), e.Blob[:n]) {
			t.Errorf("epoch %d header does not re-encode", e.Seq)
		}
	}
}

func TestForeignWrapCarried(t *testing.T) {
	v := vectors.Load(t)
	h, n, err := ParseHeader(v.Epoch1.Blob)
	if err != nil {
		t.Fatal(err)
	}
	// Append the kind-3 wrap as raw bytes, as another writer would.
	raw := append([]byte{}, v.Epoch1.Blob[:n]...)
	raw[58] = 4
	raw = append(raw, v.ForeignWrap.Bytes...)
	h2, n2, err := ParseHeader(raw)
	if err != nil || n2 != n+WrapLen {
		t.Fatalf("parse with foreign wrap: %v", err)
	}
	fw := h2.Wraps[3]
	if fw.Kind != v.ForeignWrap.Kind || fw.Tag != v.ForeignWrap.Tag || !bytes.Equal(fw.Bytes(), v.ForeignWrap.Bytes) {
		t.Errorf("foreign wrap = %x, want %x", fw.Bytes(), v.ForeignWrap.Bytes)
	}
	if !bytes.Equal(h2.Encode(), raw) {
		t.Error("foreign wrap not carried byte for byte")
	}
	// Sealing with the parsed wraps carries it into the next epoch too.
	c := EpochContext{ChainID: v.ChainID, Owner: v.Owner, Space: v.Space, Seq: 1}
	p := vectorPlaintext(v, &v.Epoch1)
	s, err := Seal(p, c, v.DEK, h2.Wraps, 0, h.Nonce)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.Blob[:n2], raw) {
		t.Error("Seal dropped or changed the foreign wrap")
	}
	// Every KEK still finds its own wrap.
	for _, k := range []vectors.KEK{v.KEKSignature, v.KEKSignatureSalted, v.KEKPassphrase} {
		if dek, err := DEKFromHeader(s.Header, k.KEK); err != nil || dek != v.DEK {
			t.Errorf("kind %d: %v", k.Kind, err)
		}
	}
}

func TestParseHeaderRefusals(t *testing.T) {
	v := vectors.Load(t)
	blob := v.Epoch1.Blob
	if _, _, err := ParseHeader(blob[:HeaderFixedLen-1]); !errors.Is(err, ErrHeaderShort) {
		t.Errorf("short fixed part: %v", err)
	}
	if _, _, err := ParseHeader(blob[:HeaderFixedLen+WrapLen*2+10]); !errors.Is(err, ErrHeaderShort) {
		t.Errorf("cut inside the wraps: %v", err)
	}
	bad := bytes.Clone(blob)
	bad[0] = 0x02
	if _, _, err := ParseHeader(bad); !errors.Is(err, ErrHeaderVersion) {
		t.Errorf("version 2: %v", err)
	}
	// Unknown flag bits and zero wraps parse.
	odd := bytes.Clone(blob[:HeaderFixedLen])
	odd[1] = 0xfd
	odd[58] = 0
	h, n, err := ParseHeader(odd)
	if err != nil || n != HeaderFixedLen || h.Flags != 0xfd || len(h.Wraps) != 0 || h.IsSnapshot() {
		t.Errorf("odd flags: %+v %d %v", h, n, err)
	}
}

func TestChooseBucket(t *testing.T) {
	cases := []struct{ gz, prev, want int }{
		{0, 0, 4096},
		{4092, 0, 4096},
		{4093, 0, 8192},
		{8188, 4096, 8192},
		{100, 16384, 16384},
		{100, 5000, 8192}, // not a bucket: the next one up
		{60000, 0, 65536},
		{65533, 0, 98304},
		{98300, 0, 98304},
		{100, 98304, 98304},
		{100, 1 << 30, 98304}, // an impossible previous bucket cannot lock the space
	}
	for _, c := range cases {
		got, err := ChooseBucket(c.gz, c.prev)
		if err != nil || got != c.want {
			t.Errorf("ChooseBucket(%d, %d) = %d, %v; want %d", c.gz, c.prev, got, err, c.want)
		}
	}
	if _, err := ChooseBucket(98301, 0); !errors.Is(err, ErrTooLarge) {
		t.Errorf("98301: %v", err)
	}
}

func FuzzParseHeader(f *testing.F) {
	v := vectors.Load(f)
	f.Add(v.Epoch1.Blob[:300])
	f.Add(v.Epoch2.Blob[:HeaderFixedLen])
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := ParseHeader(b)
		if err != nil {
			if !errors.Is(err, ErrHeaderShort) && !errors.Is(err, ErrHeaderVersion) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if n != h.Len() || n > len(b) || !bytes.Equal(h.Encode(), b[:n]) {
			t.Fatalf("header does not round-trip")
		}
	})
}

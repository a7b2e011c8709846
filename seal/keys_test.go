package seal

import (
	"bytes"
	"errors"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/seal/vectors"
)

func TestVaultIdentityVectors(t *testing.T) {
	v := vectors.Load(t)
	if got := SpaceID(v.Tenant); got != v.Space {
		t.Errorf("SpaceID(%q) = %x, want %x", v.Tenant, got, v.Space)
	}
	if got, want := Space16(v.Space), "fd83319f25a64bb2"; got != want {
		t.Errorf("Space16 = %q, want %q", got, want)
	}
	if got := VaultDigest(v.Owner); got != v.VaultDigest {
		t.Errorf("VaultDigest = %x, want %x", got, v.VaultDigest)
	}
	if got := CanonicalPayload(v.Owner); got != v.CanonicalPayloadJSON {
		t.Errorf("CanonicalPayload =\n%s\nwant\n%s", got, v.CanonicalPayloadJSON)
	}
	if v.Purpose != VaultPurpose {
		t.Errorf("purpose = %q, want %q", VaultPurpose, v.Purpose)
	}
	if got := KEKInfo(v.Owner, v.Space); !bytes.Equal(got, v.KEKInfo) || len(got) != 63 {
		t.Errorf("KEKInfo = %x, want %x", got, v.KEKInfo)
	}
	if got := DEKID(v.DEK); got != v.DEKID {
		t.Errorf("DEKID = %x, want %x", got, v.DEKID)
	}
}

func ownerKey(t *testing.T, v *vectors.Vectors) []byte {
	key, err := crypto.ToECDSA(bytes.Repeat([]byte{0x11}, 32))
	if err != nil {
		t.Fatal(err)
	}
	if crypto.PubkeyToAddress(key.PublicKey) != v.Owner {
		t.Fatalf("throwaway key does not match the vectors' owner")
	}
	digest := VaultDigest(v.Owner)
	sig, err := crypto.Sign(digest[:], key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	return sig
}

func TestDeriveSignatureIsTheOwners(t *testing.T) {
	v := vectors.Load(t)
	if sig := ownerKey(t, v); !bytes.Equal(sig, v.DeriveSignature) {
		t.Errorf("owner's RFC 6979 signature = %x, want %x", sig, v.DeriveSignature)
	}
}

func TestKEKVectors(t *testing.T) {
	v := vectors.Load(t)
	sig := v.DeriveSignature

	kek, err := KEKFromSignature(sig, v.Owner, v.Space, nil)
	if err != nil || kek != v.KEKSignature.KEK {
		t.Errorf("signature KEK = %x, %v; want %x", kek, err, v.KEKSignature.KEK)
	}
	if tag := KEKTag(kek); tag != v.KEKSignature.Tag {
		t.Errorf("signature tag = %x, want %x", tag, v.KEKSignature.Tag)
	}

	salted, err := KEKFromSignature(sig, v.Owner, v.Space, v.KEKSignatureSalted.Passphrase)
	if err != nil || salted != v.KEKSignatureSalted.KEK {
		t.Errorf("salted KEK = %x, %v; want %x", salted, err, v.KEKSignatureSalted.KEK)
	}
	if tag := KEKTag(salted); tag != v.KEKSignatureSalted.Tag {
		t.Errorf("salted tag = %x, want %x", tag, v.KEKSignatureSalted.Tag)
	}

	pass, err := KEKFromPassphrase(*v.KEKPassphrase.Passphrase, v.Owner, v.Space)
	if err != nil || pass != v.KEKPassphrase.KEK {
		t.Errorf("passphrase KEK = %x, %v; want %x", pass, err, v.KEKPassphrase.KEK)
	}
	if tag := KEKTag(pass); tag != v.KEKPassphrase.Tag {
		t.Errorf("passphrase tag = %x, want %x", tag, v.KEKPassphrase.Tag)
	}
	if v.KEKSignature.Kind != KindSignature || v.KEKSignatureSalted.Kind != KindSignature || v.KEKPassphrase.Kind != KindPassphrase {
		t.Errorf("kinds in the vectors changed")
	}
	if v.ScryptN != scryptN || v.ScryptR != scryptR || v.ScryptP != scryptP || v.ScryptDKLen != 32 {
		t.Errorf("scrypt parameters in the vectors changed")
	}
}

func TestKEKFromSignatureForms(t *testing.T) {
	v := vectors.Load(t)
	sig := v.DeriveSignature

	// v as 0/1 instead of 27/28.
	raw := bytes.Clone(sig)
	raw[64] -= 27
	if kek, err := KEKFromSignature(raw, v.Owner, v.Space, nil); err != nil || kek != v.KEKSignature.KEK {
		t.Errorf("v=0/1 form: %x %v", kek, err)
	}

	// The high-S twin of the same signature gives the same key.
	s := new(big.Int).SetBytes(sig[32:64])
	high := bytes.Clone(sig)
	new(big.Int).Sub(secp256k1N, s).FillBytes(high[32:64])
	high[64] = 27 + ((sig[64] - 27) ^ 1)
	if kek, err := KEKFromSignature(high, v.Owner, v.Space, nil); err != nil || kek != v.KEKSignature.KEK {
		t.Errorf("high-S form: %x %v", kek, err)
	}

	other := common.HexToAddress("0x000000000000000000000000000000000000dEaD")
	refusals := map[string]struct {
		sig   []byte
		owner common.Address
	}{
		"another owner":  {sig, other},
		"flipped r":      {flip(sig, 5), v.Owner},
		"flipped s":      {flip(sig, 40), v.Owner},
		"bad v":          {append(bytes.Clone(sig[:64]), 29), v.Owner},
		"short":          {sig[:64], v.Owner},
		"zero signature": {make([]byte, 65), v.Owner},
	}
	for name, c := range refusals {
		if _, err := KEKFromSignature(c.sig, c.owner, v.Space, nil); !errors.Is(err, ErrSignatureOwner) {
			t.Errorf("%s: got %v, want ErrSignatureOwner", name, err)
		}
	}
	empty := ""
	if _, err := KEKFromSignature(sig, v.Owner, v.Space, &empty); !errors.Is(err, ErrEmptyPassphrase) {
		t.Errorf("empty salt passphrase: got %v", err)
	}
	if _, err := KEKFromPassphrase("", v.Owner, v.Space); !errors.Is(err, ErrEmptyPassphrase) || err.Error() != "passphrase is empty" {
		t.Errorf("empty passphrase: got %v", err)
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x01
	return c
}

func TestWrapVectors(t *testing.T) {
	v := vectors.Load(t)
	if len(v.Wraps) != 3 {
		t.Fatalf("vectors have %d wraps", len(v.Wraps))
	}
	for _, vw := range v.Wraps {
		w := WrapDEK(vw.KEK, vw.Kind, v.DEK, vw.Nonce)
		if w.Tag != vw.Tag || w.Wrapped != vw.Wrapped || !bytes.Equal(w.Bytes(), vw.Bytes) {
			t.Errorf("%s: wrap = %x, want %x", vw.Label, w.Bytes(), vw.Bytes)
		}
		dek, err := UnwrapDEK(vw.KEK, &w)
		if err != nil || dek != v.DEK {
			t.Errorf("%s: unwrap = %x %v", vw.Label, dek, err)
		}
		var wrong [32]byte
		if _, err := UnwrapDEK(wrong, &w); !errors.Is(err, ErrTagMismatch) {
			t.Errorf("%s: unwrap with a wrong KEK: %v", vw.Label, err)
		}
		// The kind is authenticated: relabelling the wrap breaks it.
		relabelled := w
		relabelled.Kind ^= 3
		if _, err := UnwrapDEK(vw.KEK, &relabelled); !errors.Is(err, ErrTagMismatch) {
			t.Errorf("%s: relabelled kind accepted: %v", vw.Label, err)
		}
	}
	if KEKTag(v.Wraps[0].KEK) != v.KEKSignature.Tag || KEKTag(v.Wraps[2].KEK) != v.KEKPassphrase.Tag {
		t.Error("wrap KEKs differ from the derived ones")
	}
}

func TestDEKFromHeader(t *testing.T) {
	v := vectors.Load(t)
	h, _, err := ParseHeader(v.Epoch1.Blob)
	if err != nil {
		t.Fatal(err)
	}
	// Put the foreign kind-3 wrap first: the lookup must skip it by tag.
	foreign, _, err := ParseHeader(append(append([]byte{}, v.Epoch1.Blob[:58]...), append([]byte{1}, v.ForeignWrap.Bytes...)...))
	if err != nil {
		t.Fatal(err)
	}
	h.Wraps = append([]Wrap{foreign.Wraps[0]}, h.Wraps...)
	for _, k := range []vectors.KEK{v.KEKSignature, v.KEKSignatureSalted, v.KEKPassphrase} {
		dek, err := DEKFromHeader(h, k.KEK)
		if err != nil || dek != v.DEK {
			t.Errorf("kind %d: DEKFromHeader = %x %v", k.Kind, dek, err)
		}
		w, err := FindWrap(h, k.Tag)
		if err != nil || w.Tag != k.Tag || w.Kind != k.Kind {
			t.Errorf("kind %d: FindWrap = %+v %v", k.Kind, w, err)
		}
	}
	var stranger [32]byte
	stranger[0] = 1
	if _, err := DEKFromHeader(h, stranger); !errors.Is(err, ErrNoWrap) || err.Error() != "no wrap for this key in the epoch header" {
		t.Errorf("unknown KEK: %v", err)
	}
	if _, err := FindWrap(h, v.ForeignWrap.Tag); err != nil {
		t.Errorf("foreign wrap not found by its tag: %v", err)
	}

	// A wrap that opens but holds another data key fails the dek_id check.
	var otherDEK [32]byte
	otherDEK[31] = 9
	h2 := *h
	h2.Wraps = []Wrap{WrapDEK(v.KEKPassphrase.KEK, KindPassphrase, otherDEK, [12]byte{1})}
	if _, err := DEKFromHeader(&h2, v.KEKPassphrase.KEK); !errors.Is(err, ErrDekIDMismatch) || err.Error() != "dek_id mismatch: wrong data key for this epoch" {
		t.Errorf("other DEK: %v", err)
	}
	// A wrap whose bytes were damaged fails GCM.
	h3 := *h
	h3.Wraps = append([]Wrap(nil), h.Wraps...)
	h3.Wraps[1].Wrapped[3] ^= 0x80
	if _, err := DEKFromHeader(&h3, v.KEKSignature.KEK); !errors.Is(err, ErrTagMismatch) {
		t.Errorf("damaged wrap: %v", err)
	}
}

package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"golang.org/x/crypto/scrypt"
)

// VaultPurpose is the purpose string of the vault message the owner signs.
const VaultPurpose = "kint-memory-v1: signing this reveals your memory encryption key. Only sign it in a kint terminal or page you opened yourself."

// VaultChainID is the EIP-712 chain id of the vault message: always Base,
// whatever chain the vault lives on, so one signature serves every chain.
const VaultChainID = 8453

// scrypt parameters of both passphrase uses.
const (
	scryptN = 1 << 17
	scryptR = 8
	scryptP = 1
)

var (
	secp256k1N     = crypto.S256().Params().N
	secp256k1HalfN = new(big.Int).Rsh(secp256k1N, 1)
)

// SpaceID is keccak256("kint-space-v1" || utf8(tenant)).
func SpaceID(tenant string) common.Hash {
	return crypto.Keccak256Hash([]byte("kint-space-v1"), []byte(tenant))
}

// Space16 is the first 16 hex characters of the space, used in file names.
func Space16(space common.Hash) string { return hex.EncodeToString(space[:8]) }

// VaultDigest is the EIP-712 digest of KintVault{owner, purpose} under the
// domain {name "kint", version "1", chainId 8453}.
func VaultDigest(owner common.Address) common.Hash {
	domainType := crypto.Keccak256([]byte("EIP712Domain(string name,string version,uint256 chainId)"))
	chainID := common.BigToHash(big.NewInt(VaultChainID))
	domain := crypto.Keccak256(domainType, crypto.Keccak256([]byte("kint")), crypto.Keccak256([]byte("1")), chainID[:])
	vaultType := crypto.Keccak256([]byte("KintVault(address owner,string purpose)"))
	ownerWord := common.BytesToHash(owner[:])
	msg := crypto.Keccak256(vaultType, ownerWord[:], crypto.Keccak256([]byte(VaultPurpose)))
	return crypto.Keccak256Hash([]byte{0x19, 0x01}, domain, msg)
}

// CanonicalPayload is the eth_signTypedData_v4 payload for the vault
// message: the one line of JSON kint hands to a wallet, newline included,
// exactly as the vectors carry it.
func CanonicalPayload(owner common.Address) string {
	b := []byte(`{"types":{"EIP712Domain":[{"name":"name","type":"string"},{"name":"version","type":"string"},{"name":"chainId","type":"uint256"}],` +
		`"KintVault":[{"name":"owner","type":"address"},{"name":"purpose","type":"string"}]},` +
		`"primaryType":"KintVault","domain":{"name":"kint","version":"1","chainId":8453},"message":{"owner":`)
	b = AppendJSONString(b, owner.Hex())
	b = append(b, `,"purpose":`...)
	b = AppendJSONString(b, VaultPurpose)
	b = append(b, "}}\n"...)
	return string(b)
}

// KEKInfo is the HKDF info: "kint-kek-v1" || owner(20) || space(32).
func KEKInfo(owner common.Address, space common.Hash) []byte {
	info := make([]byte, 0, 63)
	info = append(info, "kint-kek-v1"...)
	info = append(info, owner[:]...)
	return append(info, space[:]...)
}

func passphraseScrypt(passphrase string, owner common.Address) ([]byte, error) {
	return scrypt.Key([]byte(passphrase), owner[:], scryptN, scryptR, scryptP, 32)
}

func deriveKEK(ikm, salt, info []byte) ([32]byte, error) {
	var kek [32]byte
	k, err := hkdf.Key(sha256.New, ikm, salt, string(info), 32)
	if err != nil {
		return kek, fmt.Errorf("hkdf: %w", err)
	}
	copy(kek[:], k)
	return kek, nil
}

// KEKFromSignature derives the signature-path KEK (wrap kind 0x01). The
// signature must recover to owner over VaultDigest(owner); v may be 27/28 or
// 0/1, and a high-S signature is normalised to low S first so that both
// forms of one signature give one key. With saltPassphrase the HKDF salt is
// scrypt(passphrase, owner); otherwise it is empty.
func KEKFromSignature(sig []byte, owner common.Address, space common.Hash, saltPassphrase *string) ([32]byte, error) {
	var zero [32]byte
	if len(sig) != 65 {
		return zero, fmt.Errorf("%w: signature is %d bytes, want 65", ErrSignatureOwner, len(sig))
	}
	v := sig[64]
	if v >= 27 {
		v -= 27
	}
	if v > 1 {
		return zero, fmt.Errorf("%w: bad recovery id %d", ErrSignatureOwner, sig[64])
	}
	s := new(big.Int).SetBytes(sig[32:64])
	if s.Cmp(secp256k1HalfN) > 0 {
		s.Sub(secp256k1N, s)
		v ^= 1
	}
	norm := make([]byte, 65)
	copy(norm[:32], sig[:32])
	s.FillBytes(norm[32:64])
	norm[64] = v
	digest := VaultDigest(owner)
	pub, err := crypto.SigToPub(digest[:], norm)
	if err != nil {
		return zero, fmt.Errorf("%w: %v", ErrSignatureOwner, err)
	}
	if got := crypto.PubkeyToAddress(*pub); got != owner {
		return zero, fmt.Errorf("%w: it recovers to %s, not %s", ErrSignatureOwner, got.Hex(), owner.Hex())
	}
	var salt []byte
	if saltPassphrase != nil {
		if *saltPassphrase == "" {
			return zero, fmt.Errorf("salt %w", ErrEmptyPassphrase)
		}
		if salt, err = passphraseScrypt(*saltPassphrase, owner); err != nil {
			return zero, fmt.Errorf("scrypt: %w", err)
		}
	}
	return deriveKEK(norm[:64], salt, KEKInfo(owner, space))
}

// KEKFromPassphrase derives the passphrase-path KEK (wrap kind 0x02). The
// passphrase is used as given: no Unicode normalisation.
func KEKFromPassphrase(passphrase string, owner common.Address, space common.Hash) ([32]byte, error) {
	if passphrase == "" {
		return [32]byte{}, ErrEmptyPassphrase
	}
	ikm, err := passphraseScrypt(passphrase, owner)
	if err != nil {
		return [32]byte{}, fmt.Errorf("scrypt: %w", err)
	}
	return deriveKEK(ikm, nil, KEKInfo(owner, space))
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// KEKTag identifies a KEK in a header without revealing it.
func KEKTag(kek [32]byte) [16]byte {
	var tag [16]byte
	copy(tag[:], hmacSHA256(kek[:], "kint-kek-check-v1"))
	return tag
}

// DEKID identifies a data key in a header without revealing it.
func DEKID(dek [32]byte) [8]byte {
	var id [8]byte
	copy(id[:], hmacSHA256(dek[:], "kint-dek-id-v1"))
	return id
}

func newGCM(key []byte) cipher.AEAD {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // unreachable: keys here are always 32 bytes
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		panic(err) // unreachable: the standard nonce and tag sizes
	}
	return gcm
}

func wrapAAD(kind byte, tag [16]byte) []byte {
	aad := make([]byte, 0, 12+1+16)
	aad = append(aad, "kint-wrap-v1"...)
	aad = append(aad, kind)
	return append(aad, tag[:]...)
}

// WrapDEK encrypts dek under kek with the given nonce.
func WrapDEK(kek [32]byte, kind byte, dek [32]byte, nonce [12]byte) Wrap {
	w := Wrap{Kind: kind, Tag: KEKTag(kek), Nonce: nonce}
	ct := newGCM(kek[:]).Seal(nil, nonce[:], dek[:], wrapAAD(kind, w.Tag))
	copy(w.Wrapped[:], ct)
	return w
}

// UnwrapDEK decrypts a wrap with kek.
func UnwrapDEK(kek [32]byte, w *Wrap) ([32]byte, error) {
	var dek [32]byte
	pt, err := newGCM(kek[:]).Open(nil, w.Nonce[:], w.Wrapped[:], wrapAAD(w.Kind, w.Tag))
	if err != nil {
		return dek, fmt.Errorf("unwrap data key: %w", ErrTagMismatch)
	}
	copy(dek[:], pt)
	return dek, nil
}

// FindWrap returns the header's wrap with the given kek_tag. It matches tags
// only: GCM does not commit to its key, so trial decryption could accept a
// wrong key.
func FindWrap(h *Header, tag [16]byte) (*Wrap, error) {
	for i := range h.Wraps {
		if h.Wraps[i].Tag == tag {
			return &h.Wraps[i], nil
		}
	}
	return nil, ErrNoWrap
}

// DEKFromHeader unwraps the data key of an epoch with one of its KEKs and
// checks it against the header's dek_id.
func DEKFromHeader(h *Header, kek [32]byte) ([32]byte, error) {
	w, err := FindWrap(h, KEKTag(kek))
	if err != nil {
		return [32]byte{}, err
	}
	dek, err := UnwrapDEK(kek, w)
	if err != nil {
		return [32]byte{}, err
	}
	if DEKID(dek) != h.DekID {
		return [32]byte{}, ErrDekIDMismatch
	}
	return dek, nil
}

package homedir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"golang.org/x/crypto/hkdf"

	"kintfs/seal"
)

// kint's defaults for an enrolment that names no contract or RPC: EpochAnchor on Base and the
// public Base endpoint (KINT_CONTRACT and KINT_RPC_URL override both, as in kint).
const (
	KintDefaultContract = "0xa22E03f7a4145Bf4909a83595C90a38E14d79600"
	KintDefaultRPC      = "https://mainnet.base.org"
)

// kintEnrolment is kint's enrol-<space16>.json: which vault kint connected this machine to.
type kintEnrolment struct {
	Owner       string   `json:"owner"`
	TenantID    string   `json:"tenant_id"`
	Space       string   `json:"space"` // hex, no 0x
	AccountKind int      `json:"account_kind"`
	ChainID     uint64   `json:"chain_id"`
	KEKTags     []string `json:"kek_tags"`
	Contract    *string  `json:"contract"`
	CreatedHere bool     `json:"created_here"`
}

func (e *kintEnrolment) spaceHash() common.Hash { return common.HexToHash(Bare(e.Space)) }
func (e *kintEnrolment) space16() string        { return seal.Space16(e.spaceHash()) }

// kintEnrolments are the enrolments kint keeps in this home that name a whole space and an
// owner; a file that does not parse is not one.
func (h Home) kintEnrolments() []kintEnrolment {
	paths, _ := filepath.Glob(h.Path("enrol-*.json"))
	var out []kintEnrolment
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var e kintEnrolment
		if json.Unmarshal(b, &e) != nil || len(Bare(e.Space)) != 64 || !common.IsHexAddress(e.Owner) || e.TenantID == "" {
			continue
		}
		if "enrol-"+e.space16()+".json" != filepath.Base(p) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// kintVault is the vault config of kint's enrolment e: its owner, tenant, space, chain and
// contract, the key wraps kint keeps (wraps-<space16>.json) and the id of the data key kint
// cached, when it has one that opens.
func (h Home) kintVault(e *kintEnrolment) (*VaultConfig, error) {
	v := &VaultConfig{Owner: common.HexToAddress(e.Owner), Tenant: e.TenantID, Space: e.spaceHash(), ChainID: e.ChainID,
		RPC: KintDefaultRPC, Contract: common.HexToAddress(KintDefaultContract), CreatedHere: e.CreatedHere}
	if seal.SpaceID(e.TenantID) != v.Space {
		return nil, fmt.Errorf("kint's enrolment %s names tenant %q, whose space is not %s", h.Path("enrol-"+e.space16()+".json"), e.TenantID, e.Space)
	}
	if v.ChainID == 0 {
		v.ChainID = 8453
	}
	if e.Contract != nil && common.IsHexAddress(*e.Contract) {
		v.Contract = common.HexToAddress(*e.Contract)
	}
	if b, err := os.ReadFile(h.Path("wraps-" + v.Space16() + ".json")); err == nil {
		var wraps []string
		if err := json.Unmarshal(b, &wraps); err != nil {
			return nil, fmt.Errorf("kint's wraps-%s.json: %w", v.Space16(), err)
		}
		for _, w := range wraps {
			v.Wraps = append(v.Wraps, Bare(w))
		}
		if _, err := v.WrapList(); err != nil {
			return nil, fmt.Errorf("kint's wraps-%s.json: %w", v.Space16(), err)
		}
	}
	if dek, err := h.kintDEK(v.Space); err == nil {
		id := seal.DEKID(dek)
		v.DekID = hex.EncodeToString(id[:])
	}
	return v, nil
}

// kintCacheFile is kint's vault-<space16>.aes: the data key sealed under its local passphrase.
type kintCacheFile struct {
	Expires float64 `json:"expires"`
	Nonce   string  `json:"nonce"`
	CT      string  `json:"ct"`
}

// kintCacheKey is the key kint seals its cached data key under: HKDF-SHA256 of its local
// passphrase, info kint-vault-cache-v1, no salt.
func kintCacheKey(pass string) ([]byte, error) {
	key := make([]byte, 32)
	_, err := io.ReadFull(hkdf.New(sha256.New, []byte(pass), nil, []byte("kint-vault-cache-v1")), key)
	return key, err
}

func (h Home) readKintCache(space common.Hash) (*kintCacheFile, error) {
	return readJSONFile[kintCacheFile](h.Path("vault-"+seal.Space16(space)+".aes"), ErrKeyMissing, "kint's cached data key")
}

// kintDEK is the data key kint cached for space, opened as kint opens it (the AAD is the
// whole space in bare hex); ErrKeyExpired past its expiry.
func (h Home) kintDEK(space common.Hash) ([32]byte, error) {
	var out [32]byte
	f, err := h.readKintCache(space)
	if err != nil {
		return out, err
	}
	if float64(time.Now().Unix()) > f.Expires {
		return out, ErrKeyExpired
	}
	pass, err := h.KintPassphrase()
	if err != nil {
		return out, err
	}
	key, err := kintCacheKey(pass)
	if err != nil {
		return out, err
	}
	gcm, err := newGCM(key)
	if err != nil {
		return out, err
	}
	nonce, err1 := hex.DecodeString(f.Nonce)
	ct, err2 := hex.DecodeString(f.CT)
	if err1 != nil || err2 != nil || len(nonce) != gcm.NonceSize() {
		return out, errors.New("kint's cached data key is malformed")
	}
	plain, err := gcm.Open(nil, nonce, ct, []byte(hex.EncodeToString(space[:])))
	if err != nil || len(plain) != 32 {
		return out, fmt.Errorf("kint's cached data key does not open with this machine's local passphrase (KINT_SESSION_PASSPHRASE differs from kint's?): %w", ErrKeyMissing)
	}
	copy(out[:], plain)
	return out, nil
}

// kintSessionKey says whether kint keeps a session keystore here (session.key at the top).
func (h Home) kintSessionKey() bool {
	fi, err := os.Stat(h.Path("session.key"))
	return err == nil && fi.Mode().IsRegular()
}

// KintSessionKey is where kint keeps its session keystore (a directory holding session.key,
// as chain.LoadSessionKey takes it) and the passphrase it is sealed under; ok is false when
// kint keeps none here.
func (h Home) KintSessionKey() (dir, pass string, ok bool, err error) {
	if !h.kintSessionKey() {
		return "", "", false, nil
	}
	pass, err = h.KintPassphrase()
	return h.Dir, pass, true, err
}

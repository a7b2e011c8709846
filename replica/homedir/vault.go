package homedir

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"golang.org/x/crypto/hkdf"
	"golang.org/x/crypto/scrypt"

	"kintfs/seal"
)

// Key errors; the CLI maps them to exit code 3.
var (
	ErrKeyMissing = errors.New("no data key cached for this vault: run kintfs init with your passphrase, signature or recovery code")
	ErrKeyExpired = errors.New("the cached data key has expired (KINT_KEY_TTL): run kintfs init again to unlock it")
	ErrNoVault    = errors.New("no vault configured in KINT_HOME: run kintfs init (or kintfs mount --dev)")
)

// VaultConfig is the vault this KINT_HOME is connected to (vault.json). It holds no secret.
type VaultConfig struct {
	Owner    common.Address `json:"owner"`
	Tenant   string         `json:"tenant"`
	Space    common.Hash    `json:"space"`
	ChainID  uint64         `json:"chain_id"`
	RPC      string         `json:"rpc"`
	Contract common.Address `json:"contract"`
	DekID    string         `json:"dek_id"`
	Wraps    []string       `json:"wraps"` // hex, carried into the header of every epoch sealed here
	// CreatedHere marks the machine that created the vault: the one whose recovery file was
	// written at init, and must stay.
	CreatedHere bool `json:"created_here,omitempty"`
	// BucketPolicy is how pushes from this machine choose the bucket: "low" (or empty: split
	// into epochs of the vault's current bucket) or "kint" (the smallest bucket that holds up
	// to 90 KB, ratcheting up), set by kintfs bucket-policy.
	BucketPolicy string `json:"bucket_policy,omitempty"`
}

// Space16 is the first 16 hex characters of the space, used in file names.
func (v *VaultConfig) Space16() string { return seal.Space16(v.Space) }

// WrapList decodes the wraps.
func (v *VaultConfig) WrapList() ([]seal.Wrap, error) {
	out := make([]seal.Wrap, 0, len(v.Wraps))
	for _, h := range v.Wraps {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != seal.WrapLen {
			return nil, fmt.Errorf("vault.json: bad wrap %q", h)
		}
		var w seal.Wrap
		w.Kind = b[0]
		copy(w.Tag[:], b[1:17])
		copy(w.Nonce[:], b[17:29])
		copy(w.Wrapped[:], b[29:77])
		out = append(out, w)
	}
	return out, nil
}

// SetWraps records wraps.
func (v *VaultConfig) SetWraps(ws []seal.Wrap) {
	v.Wraps = v.Wraps[:0]
	for _, w := range ws {
		b := append([]byte{w.Kind}, w.Tag[:]...)
		b = append(b, w.Nonce[:]...)
		b = append(b, w.Wrapped[:]...)
		v.Wraps = append(v.Wraps, hex.EncodeToString(b))
	}
}

// LoadVault reads vault.json.
func (h Home) LoadVault() (*VaultConfig, error) {
	b, err := os.ReadFile(h.Path("vault.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoVault
	}
	if err != nil {
		return nil, err
	}
	var v VaultConfig
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("vault.json: %w", err)
	}
	return &v, nil
}

// SaveVault writes vault.json.
func (h Home) SaveVault(v *VaultConfig) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return h.WriteFile(append(b, '\n'), "vault.json")
}

// LocalKey is the secret the cached data key and the session keystore are encrypted under:
// derived from Local.SessionPassphrase when set, else (on macOS) from kint's Keychain item,
// else from a random local.secret file.
func (h Home) LocalKey() ([]byte, error) {
	p := localSettings().SessionPassphrase
	if p == "" {
		p, _ = keychainPassphrase()
	}
	if p != "" {
		return scrypt.Key([]byte(p), []byte("kintfs-local-v1"), 1<<15, 8, 1, 32)
	}
	path := h.Path("local.secret")
	secret, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		secret = randomBytes(32)
		if err := h.WriteFile(secret, "local.secret"); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, secret, nil, []byte("kintfs-local-v1")), key); err != nil {
		return nil, err
	}
	return key, nil
}

type dekFile struct {
	Expires int64  `json:"expires"`
	Nonce   string `json:"nonce"`
	Sealed  string `json:"sealed"`
}

// KeyTTL is how long a cached key stays valid: Local.KeyTTL, default 24h.
func KeyTTL() time.Duration {
	if d := localSettings().KeyTTL; d > 0 {
		return d
	}
	return DefaultKeyTTL
}

// SaveDEK caches the data key encrypted under the local key, valid for KeyTTL.
func (h Home) SaveDEK(space common.Hash, dek [32]byte) error { return h.saveKey(space, "dek", dek) }

// LoadDEK returns the cached data key of a space.
func (h Home) LoadDEK(space common.Hash) ([32]byte, error) { return h.loadKey(space, "dek") }

// SaveKEK caches the key-encryption key the same way, so that a data key another machine
// rotated (or created first) can be unwrapped from an epoch header without asking again.
func (h Home) SaveKEK(space common.Hash, kek [32]byte) error { return h.saveKey(space, "kek", kek) }

// LoadKEK returns the cached key-encryption key of a space.
func (h Home) LoadKEK(space common.Hash) ([32]byte, error) { return h.loadKey(space, "kek") }

func keyAAD(space common.Hash, kind string) []byte {
	return append([]byte("kintfs-"+kind+"-cache-v1"), space[:]...)
}

func (h Home) saveKey(space common.Hash, kind string, secret [32]byte) error {
	key, err := h.LocalKey()
	if err != nil {
		return err
	}
	gcm, err := newGCM(key)
	if err != nil {
		return err
	}
	nonce := randomBytes(12)
	f := dekFile{Expires: time.Now().Add(KeyTTL()).Unix(), Nonce: hex.EncodeToString(nonce),
		Sealed: hex.EncodeToString(gcm.Seal(nil, nonce, secret[:], keyAAD(space, kind)))}
	b, _ := json.Marshal(&f)
	return h.WriteFile(b, "keys", seal.Space16(space)+"."+kind)
}

func (h Home) loadKey(space common.Hash, kind string) ([32]byte, error) {
	var out [32]byte
	b, err := os.ReadFile(h.Path("keys", seal.Space16(space)+"."+kind))
	if errors.Is(err, os.ErrNotExist) {
		return out, ErrKeyMissing
	}
	if err != nil {
		return out, err
	}
	var f dekFile
	if err := json.Unmarshal(b, &f); err != nil {
		return out, fmt.Errorf("cached %s: %w", kind, err)
	}
	if time.Now().Unix() > f.Expires {
		return out, ErrKeyExpired
	}
	key, err := h.LocalKey()
	if err != nil {
		return out, err
	}
	gcm, err := newGCM(key)
	if err != nil {
		return out, err
	}
	nonce, err1 := hex.DecodeString(f.Nonce)
	sealed, err2 := hex.DecodeString(f.Sealed)
	if err1 != nil || err2 != nil || len(nonce) != 12 {
		return out, fmt.Errorf("cached %s is malformed", kind)
	}
	plain, err := gcm.Open(nil, nonce, sealed, keyAAD(space, kind))
	if err != nil || len(plain) != 32 {
		return out, fmt.Errorf("cached %s does not open with this machine's local secret (KINT_SESSION_PASSPHRASE changed?): %w", kind, ErrKeyMissing)
	}
	copy(out[:], plain)
	return out, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// DEKExpiry is when the cached data key of a space expires, read without opening it.
func (h Home) DEKExpiry(space common.Hash) (time.Time, error) {
	b, err := os.ReadFile(h.Path("keys", seal.Space16(space)+".dek"))
	if errors.Is(err, os.ErrNotExist) {
		return time.Time{}, ErrKeyMissing
	}
	if err != nil {
		return time.Time{}, err
	}
	var f dekFile
	if err := json.Unmarshal(b, &f); err != nil {
		return time.Time{}, fmt.Errorf("cached dek: %w", err)
	}
	return time.Unix(f.Expires, 0), nil
}

// RecoveryFile is where the recovery code of the vault is written.
func (h Home) RecoveryFile(v *VaultConfig) string {
	return h.Path("RECOVERY-" + v.Space16() + ".txt")
}

// WriteRecoveryFile writes the recovery code of dek to RECOVERY-<space16>.txt (mode 0600) and
// returns its path.
func (h Home) WriteRecoveryFile(v *VaultConfig, dek [32]byte) (string, error) {
	text := "kint recovery code for owner " + v.Owner.Hex() + " tenant " + v.Tenant + ":\n" + seal.EncodeRecoveryCode(dek) + "\n"
	if err := h.WriteFile([]byte(text), "RECOVERY-"+v.Space16()+".txt"); err != nil {
		return "", err
	}
	return h.RecoveryFile(v), nil
}

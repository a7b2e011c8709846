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
	"strings"
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
	// Model is what the vault may anchor: "" or "kint", only what kint's store can hold;
	// "full", the wire format's whole model (kintfs vault-model).
	Model string `json:"model,omitempty"`
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

// LoadVault reads vault.json; a home without one where kint enrolled this machine in one
// vault (enrol-<space16>.json) reads as that vault (see kintVault).
func (h Home) LoadVault() (*VaultConfig, error) {
	v, err := h.loadOwnVault()
	if !errors.Is(err, ErrNoVault) {
		return v, err
	}
	if es := h.kintEnrolments(); len(es) == 1 {
		return h.kintVault(&es[0])
	} else if len(es) > 1 {
		return nil, fmt.Errorf("%w (kint enrolled this machine in %d vaults here: run kintfs init for the one to mount)", ErrNoVault, len(es))
	}
	return nil, ErrNoVault
}

// loadOwnVault reads kintfs's own vault.json.
func (h Home) loadOwnVault() (*VaultConfig, error) {
	return readJSONFile[VaultConfig](h.Path("vault.json"), ErrNoVault, "vault.json")
}

// readJSONFile decodes the JSON file at path; missing when there is none, and a decoding
// error named by what.
func readJSONFile[T any](path string, missing error, what string) (*T, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, missing
	}
	if err != nil {
		return nil, err
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
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
// else from the bytes of local.secret, the file kint keeps its local passphrase in (created in
// kint's form when missing; an earlier kintfs version's binary one is migrated first).
func (h Home) LocalKey() ([]byte, error) {
	p := h.Local.SessionPassphrase
	if p == "" {
		p, _ = keychainPassphrase(h.Local)
	}
	if p != "" {
		return scrypt.Key([]byte(p), []byte("kintfs-local-v1"), 1<<15, 8, 1, 32)
	}
	secret, err := h.localSecret()
	if err != nil {
		return nil, err
	}
	return deriveLocal(secret)
}

// deriveLocal is the local key of local.secret's bytes.
func deriveLocal(secret []byte) ([]byte, error) {
	key := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, secret, nil, []byte("kintfs-local-v1")), key); err != nil {
		return nil, err
	}
	return key, nil
}

// KintPassphrase is kint's local passphrase, the one its session.key and its cached data key
// (vault-*.aes) are sealed under: Local.SessionPassphrase as given, else the Keychain item,
// else local.secret stripped of its surrounding white space.
func (h Home) KintPassphrase() (string, error) {
	if p := h.Local.SessionPassphrase; p != "" {
		return p, nil
	}
	if p, ok := keychainPassphrase(h.Local); ok {
		return p, nil
	}
	secret, err := h.localSecret()
	if err != nil {
		return "", err
	}
	return strings.TrimFunc(string(secret), isPySpace), nil
}

type dekFile struct {
	Expires int64  `json:"expires"`
	Nonce   string `json:"nonce"`
	Sealed  string `json:"sealed"`
}

// KeyTTL is how long a cached key of this home stays valid: Local.KeyTTL, default 24h.
func (h Home) KeyTTL() time.Duration {
	if d := h.Local.KeyTTL; d > 0 {
		return d
	}
	return DefaultKeyTTL
}

// SaveDEK caches the data key encrypted under the local key, valid for KeyTTL.
func (h Home) SaveDEK(space common.Hash, dek [32]byte) error { return h.saveKey(space, "dek", dek) }

// LoadDEK returns the cached data key of a space: kintfs's own, else the one kint cached
// (vault-<space16>.aes) when kintfs has none.
func (h Home) LoadDEK(space common.Hash) ([32]byte, error) {
	dek, err := h.loadKey(space, "dek")
	if errors.Is(err, errNoKeyFile) {
		if k, kerr := h.kintDEK(space); kerr == nil || !errors.Is(kerr, ErrKeyMissing) {
			return k, kerr
		}
		return dek, ErrKeyMissing
	}
	return dek, err
}

// errNoKeyFile: kintfs caches no key of that kind for the space; it is ErrKeyMissing.
var errNoKeyFile = fmt.Errorf("%w", ErrKeyMissing)

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
	f := dekFile{Expires: time.Now().Add(h.KeyTTL()).Unix(), Nonce: hex.EncodeToString(nonce),
		Sealed: hex.EncodeToString(gcm.Seal(nil, nonce, secret[:], keyAAD(space, kind)))}
	b, _ := json.Marshal(&f)
	return h.WriteFile(b, "keys", seal.Space16(space)+"."+kind)
}

func (h Home) loadKey(space common.Hash, kind string) ([32]byte, error) {
	var out [32]byte
	path := h.Path("keys", seal.Space16(space)+"."+kind)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return out, errNoKeyFile
	}
	// the local key first: deriving it may re-seal the file (migrateLocalSecret)
	key, err := h.LocalKey()
	if err != nil {
		return out, err
	}
	b, err := os.ReadFile(path)
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
		f, err := h.readKintCache(space) // kint's cached key, which LoadDEK then reads
		if err != nil {
			return time.Time{}, err
		}
		return time.Unix(int64(f.Expires), 0), nil
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

// WriteRecoveryFile writes the recovery code of dek to RECOVERY-<space16>.txt (mode 0600) in
// kint's layout (a first line naming the owner and the whole space in bare hex, a note, a blank
// line, then the code alone on the last line), the one file both tools write, and returns its
// path.
func (h Home) WriteRecoveryFile(v *VaultConfig, dek [32]byte) (string, error) {
	text := "kint recovery code for owner " + v.Owner.Hex() + ", space " + hex.EncodeToString(v.Space[:]) + "\n" +
		"It opens this vault without the passphrase or the wallet: keep a copy off this machine.\n\n" +
		seal.EncodeRecoveryCode(dek) + "\n"
	if err := h.WriteFile([]byte(text), "RECOVERY-"+v.Space16()+".txt"); err != nil {
		return "", err
	}
	return h.RecoveryFile(v), nil
}

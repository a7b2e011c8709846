package homedir

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/accounts/keystore"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain/atomicfile"
)

// local.secret is shared with kint: kint keeps it as text (a URL-safe random token and a
// newline) and reads it stripped; an earlier kintfs wrote 32 raw bytes there, which kint cannot
// read. The local key kintfs seals its cached keys and its session keystore under is derived
// from the file's bytes as they are, so a file kint made serves both tools unchanged.

// newSecretFile is where a migration keeps the new local secret until every key is re-sealed
// under it: a name kint never uses.
const newSecretFile = "kintfs-local.secret.new"

// kintSecretText is a new local secret in kint's form: 32 random bytes as URL-safe base64
// without padding (what Python's secrets.token_urlsafe(32) gives), then a newline.
func kintSecretText() []byte {
	return []byte(base64.RawURLEncoding.EncodeToString(randomBytes(32)) + "\n")
}

// kintForm says whether b is a local secret kint can read: UTF-8 text that is not empty once
// stripped and has no control character inside.
func kintForm(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	s := strings.TrimFunc(string(b), isPySpace)
	if s == "" {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// localSecret reads local.secret, creating it in kint's form when missing and rewriting an
// earlier kintfs version's binary one in kint's form first (migrateLocalSecret).
func (h Home) localSecret() ([]byte, error) {
	secret, err := os.ReadFile(h.Path("local.secret"))
	if errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(h.Path(newSecretFile)); err == nil {
			return nil, fmt.Errorf("%s is missing but %s is there: a migration of the local secret was cut short; put the old local.secret back", h.Path("local.secret"), h.Path(newSecretFile))
		}
		secret = kintSecretText()
		if err := h.WriteFile(secret, "local.secret"); err != nil {
			return nil, err
		}
		return secret, nil
	}
	if err != nil {
		return nil, err
	}
	if kintForm(secret) {
		return secret, nil
	}
	return h.migrateLocalSecret(secret)
}

// hkdfKey is the local key of a local.secret's bytes.
func hkdfKey(secret []byte) ([]byte, error) { return deriveLocal(secret) }

// migrateLocalSecret replaces an earlier kintfs version's binary local.secret with one in
// kint's form without losing a key: the new secret is kept aside first, every cached key
// (keys/*) and session keystore (session/, session.old/) is re-sealed under it, and only then
// does it replace local.secret. Cut short, it resumes: a file already re-sealed opens under the
// new key and is left alone.
func (h Home) migrateLocalSecret(old []byte) ([]byte, error) {
	next, err := os.ReadFile(h.Path(newSecretFile))
	if errors.Is(err, os.ErrNotExist) || (err == nil && !kintForm(next)) {
		next = kintSecretText()
		err = h.WriteFile(next, newSecretFile)
	}
	if err != nil {
		return nil, err
	}
	oldKey, err := hkdfKey(old)
	if err != nil {
		return nil, err
	}
	newKey, err := hkdfKey(next)
	if err != nil {
		return nil, err
	}
	if err := h.resealKeys(oldKey, newKey); err != nil {
		return nil, fmt.Errorf("rewrite local.secret in kint's form: %w", err)
	}
	for _, dir := range []string{"session", "session.old"} {
		if err := resealKeystore(filepath.Join(h.Path(dir), "session.key"), oldKey, newKey); err != nil {
			return nil, fmt.Errorf("rewrite local.secret in kint's form: %w", err)
		}
	}
	if err := atomicfile.Write(h.Path("local.secret"), next); err != nil {
		return nil, err
	}
	os.Remove(h.Path(newSecretFile))
	return next, nil
}

// resealKeys re-seals every cached key under newKey.
func (h Home) resealKeys(oldKey, newKey []byte) error {
	entries, err := os.ReadDir(h.Path("keys"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	kept := false
	for _, e := range entries {
		space16, kind, ok := strings.Cut(e.Name(), ".")
		if !ok || (kind != "dek" && kind != "kek") || strings.HasPrefix(space16, ".") {
			continue
		}
		err := h.resealKey(e.Name(), kind, oldKey, newKey)
		if errors.Is(err, errUnknownSpace) {
			kept = true // a vault this home no longer names: its file stays as it is
			continue
		}
		if err != nil {
			return fmt.Errorf("cached %s %s: %w", kind, e.Name(), err)
		}
	}
	if kept {
		// the old secret stays beside the keys it still opens, under a name kint never uses
		return h.WriteFile(oldKey, "keys", "old-local.key")
	}
	return nil
}

// errUnknownSpace: no vault config of the home names the space of a cached key file.
var errUnknownSpace = errors.New("no vault config of this home names its space")

// resealKey re-seals one cached key file; the AAD names the whole space, which the file name
// does not hold, so it is tried against every space the file could be: the one whose AAD
// opens it.
func (h Home) resealKey(name, kind string, oldKey, newKey []byte) error {
	b, err := os.ReadFile(h.Path("keys", name))
	if err != nil {
		return err
	}
	var f dekFile
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	nonce, err1 := hex.DecodeString(f.Nonce)
	sealed, err2 := hex.DecodeString(f.Sealed)
	if err1 != nil || err2 != nil || len(nonce) != 12 {
		return errors.New("malformed")
	}
	space, err := h.spaceOf(name)
	if err != nil {
		return err
	}
	aad := keyAAD(space, kind)
	if gcm, err := newGCM(newKey); err == nil {
		if _, err := gcm.Open(nil, nonce, sealed, aad); err == nil {
			return nil // re-sealed already
		}
	}
	gcm, err := newGCM(oldKey)
	if err != nil {
		return err
	}
	plain, err := gcm.Open(nil, nonce, sealed, aad)
	if err != nil {
		return fmt.Errorf("does not open under the old local secret: %w", err)
	}
	ngcm, err := newGCM(newKey)
	if err != nil {
		return err
	}
	nn := randomBytes(12)
	f.Nonce, f.Sealed = hex.EncodeToString(nn), hex.EncodeToString(ngcm.Seal(nil, nn, plain, aad))
	out, _ := json.Marshal(&f)
	return h.WriteFile(out, "keys", name)
}

// resealKeystore re-encrypts the V3 keystore at path (when there is one) from oldKey's
// passphrase to newKey's.
func resealKeystore(path string, oldKey, newKey []byte) error {
	blob, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := keystore.DecryptKey(blob, hex.EncodeToString(newKey)); err == nil {
		return nil
	}
	k, err := keystore.DecryptKey(blob, hex.EncodeToString(oldKey))
	if err != nil {
		return fmt.Errorf("session keystore %s does not open under the old local secret: %w", path, err)
	}
	out, err := keystore.EncryptKey(k, hex.EncodeToString(newKey), keystore.LightScryptN, keystore.LightScryptP)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, out)
}

// spaceOf is the whole space a cached key file of this home belongs to: the vault's, or one
// kint enrolled this machine in.
func (h Home) spaceOf(name string) (common.Hash, error) {
	space16, _, _ := strings.Cut(name, ".")
	if v, err := h.loadOwnVault(); err == nil && v.Space16() == space16 {
		return v.Space, nil
	}
	for _, e := range h.kintEnrolments() {
		if e.space16() == space16 {
			return e.spaceHash(), nil
		}
	}
	return common.Hash{}, fmt.Errorf("%w (%s)", errUnknownSpace, space16)
}

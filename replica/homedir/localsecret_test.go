package homedir

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/keystore"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"

	"kintfs/seal"
)

// legacyHome is a KINT_HOME as an earlier kintfs version left it: 32 raw bytes in
// local.secret, the data key and key-encryption key cached under the key derived from them,
// and a session keystore sealed under that key in hex.
func legacyHome(t *testing.T) (Home, *VaultConfig, [32]byte, [32]byte, *keystore.Key) {
	t.Helper()
	h := Home{Dir: t.TempDir()}
	old := bytes.Repeat([]byte{0x00, 0xff, 0x13, 0x80}, 8) // not text: kint cannot read it
	if err := h.WriteFile(old, "local.secret"); err != nil {
		t.Fatal(err)
	}
	v := &VaultConfig{Tenant: "legacy", Space: seal.SpaceID("legacy"), ChainID: 1337}
	if err := h.SaveVault(v); err != nil {
		t.Fatal(err)
	}
	oldKey, err := deriveLocal(old)
	if err != nil {
		t.Fatal(err)
	}
	var dek, kek [32]byte
	copy(dek[:], randomBytes(32))
	copy(kek[:], randomBytes(32))
	for kind, secret := range map[string][32]byte{"dek": dek, "kek": kek} {
		gcm, _ := newGCM(oldKey)
		nonce := randomBytes(12)
		f := dekFile{Expires: time.Now().Add(time.Hour).Unix(), Nonce: hex.EncodeToString(nonce),
			Sealed: hex.EncodeToString(gcm.Seal(nil, nonce, secret[:], keyAAD(v.Space, kind)))}
		b, _ := json.Marshal(&f)
		if err := h.WriteFile(b, "keys", v.Space16()+"."+kind); err != nil {
			t.Fatal(err)
		}
	}
	priv, _ := crypto.GenerateKey()
	k := &keystore.Key{Id: uuid.New(), Address: crypto.PubkeyToAddress(priv.PublicKey), PrivateKey: priv}
	blob, err := keystore.EncryptKey(k, hex.EncodeToString(oldKey), keystore.LightScryptN, keystore.LightScryptP)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.WriteFile(blob, "session", "session.key"); err != nil {
		t.Fatal(err)
	}
	return h, v, dek, kek, k
}

// checkMigrated: local.secret is kint's text form, and every key opens under the new local key.
func checkMigrated(t *testing.T, h Home, v *VaultConfig, dek, kek [32]byte, k *keystore.Key) {
	t.Helper()
	if got, err := h.LoadDEK(v.Space); err != nil || got != dek {
		t.Fatalf("the data key after the migration: %v", err)
	}
	secret, err := os.ReadFile(h.Path("local.secret"))
	if err != nil || !kintForm(secret) || len(strings.TrimSpace(string(secret))) != 43 || !strings.HasSuffix(string(secret), "\n") {
		t.Fatalf("local.secret %q is not kint's form (%v)", secret, err)
	}
	if got, err := h.LoadKEK(v.Space); err != nil || got != kek {
		t.Fatalf("the key-encryption key after the migration: %v", err)
	}
	key, err := h.LocalKey()
	if err != nil {
		t.Fatal(err)
	}
	blob, _ := os.ReadFile(h.Path("session", "session.key"))
	got, err := keystore.DecryptKey(blob, hex.EncodeToString(key))
	if err != nil || got.Address != k.Address {
		t.Fatalf("the session keystore after the migration: %v", err)
	}
	if pass, err := h.KintPassphrase(); err != nil || pass != strings.TrimSpace(string(secret)) {
		t.Fatalf("kint's passphrase %q, %v", pass, err)
	}
	if _, err := os.Stat(h.Path(newSecretFile)); !os.IsNotExist(err) {
		t.Fatalf("%s left behind: %v", newSecretFile, err)
	}
}

// TestLocalSecretMigration: an earlier kintfs home's binary local.secret becomes kint's text
// form on first use, and no key is lost: the cached keys and the session keystore open.
func TestLocalSecretMigration(t *testing.T) {
	h, v, dek, kek, k := legacyHome(t)
	checkMigrated(t, h, v, dek, kek, k)
	// a second use changes nothing
	before, _ := os.ReadFile(h.Path("local.secret"))
	checkMigrated(t, h, v, dek, kek, k)
	if after, _ := os.ReadFile(h.Path("local.secret")); !bytes.Equal(before, after) {
		t.Fatal("local.secret changed on a second use")
	}
}

// TestLocalSecretMigrationResumes: a migration cut short after the new secret was kept aside
// and one key re-sealed (local.secret still the old one) finishes on the next use.
func TestLocalSecretMigrationResumes(t *testing.T) {
	h, v, dek, kek, k := legacyHome(t)
	old, _ := os.ReadFile(h.Path("local.secret"))
	next := kintSecretText()
	if err := h.WriteFile(next, newSecretFile); err != nil {
		t.Fatal(err)
	}
	oldKey, _ := deriveLocal(old)
	newKey, _ := deriveLocal(next)
	if err := h.resealKey(v.Space16()+".dek", "dek", oldKey, newKey); err != nil {
		t.Fatal(err)
	}
	checkMigrated(t, h, v, dek, kek, k)
	if got, _ := os.ReadFile(h.Path("local.secret")); !bytes.Equal(got, next) {
		t.Fatalf("the resumed migration did not take the secret kept aside")
	}
}

// TestLocalSecretKintMade: a local.secret kint wrote is used as it is, never rewritten, and
// kint's passphrase is its text stripped.
func TestLocalSecretKintMade(t *testing.T) {
	h := Home{Dir: t.TempDir()}
	text := "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5\n"
	if err := h.WriteFile([]byte(text), "local.secret"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.LocalKey(); err != nil {
		t.Fatal(err)
	}
	if pass, err := h.KintPassphrase(); err != nil || pass != strings.TrimSpace(text) {
		t.Fatalf("kint's passphrase %q, %v", pass, err)
	}
	if got, _ := os.ReadFile(filepath.Join(h.Dir, "local.secret")); string(got) != text {
		t.Fatalf("kint's local.secret was rewritten: %q", got)
	}
	// a new home gets one in kint's form
	n := Home{Dir: t.TempDir()}
	if _, err := n.LocalKey(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(n.Path("local.secret")); !kintForm(got) || len(got) != 44 {
		t.Fatalf("a new local.secret %q is not in kint's form", got)
	}
}

// TestLocalSecretMigrationKeepsOtherSpaces: a cached key of a vault the home no longer names
// (its whole space unknown) does not stop the migration; it stays as it was and the old local
// key is kept beside it, so it is not lost.
func TestLocalSecretMigrationKeepsOtherSpaces(t *testing.T) {
	h, v, dek, kek, k := legacyHome(t)
	other, _ := os.ReadFile(h.Path("keys", v.Space16()+".dek"))
	if err := h.WriteFile(other, "keys", "00000000deadbeef.dek"); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(h.Path("local.secret"))
	checkMigrated(t, h, v, dek, kek, k)
	if got, _ := os.ReadFile(h.Path("keys", "00000000deadbeef.dek")); !bytes.Equal(got, other) {
		t.Fatal("the key of another space was changed")
	}
	want, _ := deriveLocal(old)
	if got, err := os.ReadFile(h.Path("keys", "old-local.key")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the old local key was not kept: %v", err)
	}
}

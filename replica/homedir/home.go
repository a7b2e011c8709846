// Package homedir is KINT_HOME on disk: its layout and modes (0700 folders, 0600 files,
// written atomically), the vault config (vault.json), the cached data and key-encryption keys
// sealed under the local secret, the recovery file, and kint's epoch cache files. It holds no
// badger state and makes no chain call; it imports seal, and chain/atomicfile for its writes.
// It reads no environment: the CLI finds the home (KINT_HOME) and builds a Home that carries
// the local settings with it; nothing here is set process-wide.
package homedir

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"time"

	"kintfs/chain/atomicfile"
)

// Home is KINT_HOME: mode 0700, every file in it 0600. Dir is its path; Local is how this
// home keeps its local secret and cached keys, given by whoever opens it.
type Home struct {
	Dir   string
	Local Local
}

// String is the home's path, so a Home prints as its folder and never shows its Local.
func (h Home) String() string { return h.Dir }

// Local is how this machine keeps its local secret and cached keys. The CLI fills it from
// the environment; the zero value is the default of each.
type Local struct {
	// SessionPassphrase, when set, is what the local key is derived from
	// (KINT_SESSION_PASSPHRASE); else the macOS Keychain item, else local.secret.
	SessionPassphrase string
	// NoKeychain keeps the macOS Keychain out (KINT_NO_KEYCHAIN=1).
	NoKeychain bool
	// KeyTTL is how long a cached key stays valid (KINT_KEY_TTL); zero or less is 24h.
	KeyTTL time.Duration
}

// DefaultKeyTTL is how long a cached key stays valid unless Local.KeyTTL says otherwise.
const DefaultKeyTTL = 24 * time.Hour

// Path joins elements under the home.
func (h Home) Path(elem ...string) string {
	return filepath.Join(append([]string{h.Dir}, elem...)...)
}

// Ensure creates the home (and a subdirectory) with mode 0700, tightening an existing one.
func (h Home) Ensure(sub ...string) (string, error) {
	dir := h.Path(sub...)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o700); err != nil {
			return "", err
		}
		if d == h.Dir || d == filepath.Dir(d) {
			break
		}
	}
	return dir, nil
}

// WriteFile writes a file under the home atomically with mode 0600.
func (h Home) WriteFile(data []byte, elem ...string) error {
	path := h.Path(elem...)
	if _, err := h.Ensure(filepath.Dir(filepath.Join(elem...))); err != nil {
		return err
	}
	return atomicfile.Write(path, data)
}

// randomBytes fills n bytes from the system's random source.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the platform cannot give randomness; nothing is safe
	}
	return b
}

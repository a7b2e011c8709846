// Package homedir is KINT_HOME on disk: its layout and modes (0700 folders, 0600 files,
// written atomically), the vault config (vault.json), the cached data and key-encryption keys
// sealed under the local secret, the recovery file, and kint's epoch cache files. It holds no
// badger state and makes no chain call; it imports seal, and chain/atomicfile for its writes.
package homedir

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"

	"kintfs/chain/atomicfile"
)

// Home is KINT_HOME: mode 0700, every file in it 0600.
type Home string

// DefaultHome is KINT_HOME, else ~/.kint.
func DefaultHome() (Home, error) {
	if h := os.Getenv("KINT_HOME"); h != "" {
		return Home(h), nil
	}
	dir, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no KINT_HOME and no home directory: %w", err)
	}
	return Home(filepath.Join(dir, ".kint")), nil
}

// Path joins elements under the home.
func (h Home) Path(elem ...string) string {
	return filepath.Join(append([]string{string(h)}, elem...)...)
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
		if d == string(h) || d == filepath.Dir(d) {
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

package homedir

import (
	"runtime"
	"testing"
)

// TestKeychainPassphrase: on macOS the local passphrase comes from kint's Keychain item, the
// same on every call, and Local.NoKeychain (KINT_NO_KEYCHAIN=1) turns it off; elsewhere there
// is no Keychain.
func TestKeychainPassphrase(t *testing.T) {
	if runtime.GOOS != "darwin" {
		if p, ok := keychainPassphrase(Local{}); ok || p != "" {
			t.Fatalf("a Keychain passphrase off macOS: %q", p)
		}
		t.Skip("SKIPPED, NOT RUN: the Keychain half of this test needs macOS")
	}
	if _, ok := keychainPassphrase(Local{NoKeychain: true}); ok {
		t.Fatal("KINT_NO_KEYCHAIN=1 still reads the Keychain")
	}
	a, ok := keychainPassphrase(Local{})
	if !ok || a == "" {
		t.Fatal("no Keychain passphrase on macOS")
	}
	if b, _ := keychainPassphrase(Local{}); b != a {
		t.Fatal("the Keychain passphrase changed between two reads")
	}
}

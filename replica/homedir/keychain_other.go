//go:build !darwin

package homedir

// keychainPassphrase: there is no Keychain off macOS; local.secret (or
// Local.SessionPassphrase) holds the local passphrase.
func keychainPassphrase(Local) (string, bool) { return "", false }

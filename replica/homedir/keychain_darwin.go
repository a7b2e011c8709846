package homedir

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os/exec"
	"strings"
)

// kint's Keychain item for the local passphrase: the same one, so kint and kintfs on one Mac
// seal their keystores under one secret.
const (
	keychainService = "dev.kint-session-key"
	keychainAccount = "passphrase"
)

// keychainPassphrase reads the local passphrase from the macOS Keychain, creating it on first
// use, through the security tool (no cgo). ok is false with Local.NoKeychain or when the
// Keychain cannot be used; the caller falls back to local.secret.
func keychainPassphrase(l Local) (string, bool) {
	if l.NoKeychain {
		return "", false
	}
	out, err := exec.Command("security", "find-generic-password", "-s", keychainService, "-a", keychainAccount, "-w").Output()
	if err == nil {
		if p := strings.TrimSpace(string(out)); p != "" {
			return p, true
		}
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", false
	}
	pass := base64.RawURLEncoding.EncodeToString(raw)
	// security -i reads its commands from stdin: the secret never reaches an argument list
	cmd := exec.Command("security", "-i")
	cmd.Stdin = strings.NewReader(fmt.Sprintf("add-generic-password -U -s %s -a %s -w %s\n", keychainService, keychainAccount, pass))
	if err := cmd.Run(); err != nil {
		return "", false
	}
	return pass, true
}

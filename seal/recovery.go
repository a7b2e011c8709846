package seal

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

const recoveryChars = 55 // base32 of 34 bytes, unpadded

// EncodeRecoveryCode renders the data key for a person to keep: base32 of
// DEK || sha256(DEK)[:2], unpadded, in hyphenated groups of four.
func EncodeRecoveryCode(dek [32]byte) string {
	sum := sha256.Sum256(dek[:])
	raw := append(dek[:], sum[0], sum[1])
	enc := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(raw)
	var b strings.Builder
	for i := 0; i < len(enc); i += 4 {
		if i > 0 {
			b.WriteByte('-')
		}
		b.WriteString(enc[i:min(i+4, len(enc))])
	}
	return b.String()
}

// DecodeRecoveryCode reads a recovery code back, ignoring case, hyphens and
// spaces.
func DecodeRecoveryCode(s string) ([32]byte, error) {
	var dek [32]byte
	clean := make([]byte, 0, recoveryChars)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '-' || c == ' ':
			continue
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		}
		clean = append(clean, c)
	}
	if len(clean) != recoveryChars {
		return dek, ErrRecoveryFormat
	}
	raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(string(clean))
	if err != nil || len(raw) != 34 {
		return dek, ErrRecoveryFormat
	}
	copy(dek[:], raw[:32])
	sum := sha256.Sum256(dek[:])
	if raw[32] != sum[0] || raw[33] != sum[1] {
		return [32]byte{}, ErrRecoveryChecksum
	}
	return dek, nil
}

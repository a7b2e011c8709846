package seal

import (
	"errors"
	"strings"
	"testing"

	"kintfs/seal/vectors"
)

func TestRecoveryCodeVectors(t *testing.T) {
	v := vectors.Load(t)
	code := EncodeRecoveryCode(v.DEK)
	if code != v.RecoveryCode {
		t.Fatalf("EncodeRecoveryCode = %q, want %q", code, v.RecoveryCode)
	}
	if len(code) != 55+13 || strings.Count(code, "-") != 13 {
		t.Errorf("code %q is not 14 hyphenated groups", code)
	}
	forms := []string{
		code,
		strings.ToLower(code),
		strings.ReplaceAll(code, "-", ""),
		strings.ReplaceAll(code, "-", " "),
		"  " + strings.ReplaceAll(strings.ToLower(code), "-", " - ") + " ",
	}
	for _, f := range forms {
		dek, err := DecodeRecoveryCode(f)
		if err != nil || dek != v.DEK {
			t.Errorf("DecodeRecoveryCode(%q) = %x, %v", f, dek, err)
		}
	}
}

func TestRecoveryCodeRefusals(t *testing.T) {
	v := vectors.Load(t)
	code := []byte(v.RecoveryCode)
	// One changed character in the key part: the checksum catches it.
	typo := append([]byte{}, code...)
	typo[0] = 'F'
	_, err := DecodeRecoveryCode(string(typo))
	if !errors.Is(err, ErrRecoveryChecksum) || err.Error() != "recovery code checksum failed (typo?)" {
		t.Errorf("typo: got %v", err)
	}
	for _, bad := range []string{
		"",
		v.RecoveryCode[:len(v.RecoveryCode)-1],
		v.RecoveryCode + "A",
		strings.Replace(v.RecoveryCode, "E", "1", 1), // 1 is not in the base32 alphabet
		strings.Replace(v.RecoveryCode, "-", "_", 1),
	} {
		if _, err := DecodeRecoveryCode(bad); !errors.Is(err, ErrRecoveryFormat) {
			t.Errorf("%q: got %v, want ErrRecoveryFormat", bad, err)
		}
	}
}

func FuzzDecodeRecoveryCode(f *testing.F) {
	f.Add("EIRC-EIRC-EIRC-EIRC-EIRC-EIRC-EIRC-EIRC-EIRC-EIRC-EIRC-EIRC-EIRJ-64Q")
	f.Add("eirc eirc")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		dek, err := DecodeRecoveryCode(s)
		if err != nil {
			if !errors.Is(err, ErrRecoveryFormat) && !errors.Is(err, ErrRecoveryChecksum) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		// Whatever decodes must decode again from its canonical form.
		again, err := DecodeRecoveryCode(EncodeRecoveryCode(dek))
		if err != nil || again != dek {
			t.Fatalf("canonical form of %x does not round-trip: %v", dek, err)
		}
	})
}

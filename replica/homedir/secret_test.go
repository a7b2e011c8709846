package homedir

import (
	"errors"
	"strings"
	"testing"
)

// TestCleanSecret: the white space Python's str.strip() drops goes at both ends (spaces, tabs,
// CR, LF, and the rarer ones), inner white space stays, and an empty result is refused naming
// what it was.
func TestCleanSecret(t *testing.T) {
	for in, want := range map[string]string{
		"  padded pass  \n":        "padded pass",
		"\tpass\r\n":               "pass",
		"pass\r\n\r\n":             "pass",
		"\v\f\x1c pass \x1f\u00a0": "pass",
		"in  ner\tspace":           "in  ner\tspace",
		"\u3000pass\u2029":         "pass",
	} {
		got, err := CleanSecret(in, "passphrase")
		if err != nil || got != want {
			t.Errorf("CleanSecret(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", " ", "\r\n", "\t \n\r\n"} {
		_, err := CleanSecret(in, "recovery code")
		if !errors.Is(err, ErrEmptySecret) || !strings.Contains(err.Error(), "the recovery code is empty") {
			t.Errorf("CleanSecret(%q): %v", in, err)
		}
	}
}

package homedir

import (
	"errors"
	"strings"
	"unicode"
)

// ErrEmptySecret: a secret that is nothing but whitespace.
var ErrEmptySecret = errors.New("is empty")

// CleanSecret is a secret as kint reads it: the text with its surrounding whitespace (spaces,
// tabs, CR, LF and the other characters Python's str.strip() drops) removed, so that the same
// bytes on stdin or in a file open a vault in both tools. A secret that is empty after that is
// refused with ErrEmptySecret, naming what it was.
func CleanSecret(raw, what string) (string, error) {
	s := strings.TrimFunc(raw, isPySpace)
	if s == "" {
		return "", &emptySecretError{what: what}
	}
	return s, nil
}

// isPySpace is str.isspace() of one character: Unicode white space plus the four ASCII
// separators (FS, GS, RS, US) Python also strips.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

type emptySecretError struct{ what string }

func (e *emptySecretError) Error() string {
	return "the " + e.what + " is empty (nothing but white space): give the secret itself"
}

func (e *emptySecretError) Unwrap() error { return ErrEmptySecret }

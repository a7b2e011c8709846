package fs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf8"
)

// maxName is the longest file name the kernel accepts (NAME_MAX).
const maxName = 255

// shortSuffixLen is the length of the "~" and 16 hex digits that end a shortened name.
const shortSuffixLen = 17

var (
	// errBadName is a name that no key escapes to (a stray '%', a '%2E' that is not leading...).
	errBadName = errors.New("not a kintfs file name")
	// errNameTooLong is a name longer than the kernel allows.
	errNameTooLong = errors.New("file name too long")
)

// escape is the plain escaped form of a key or category, before any shortening.
func escape(s string) string {
	if s == "" {
		return "%"
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '/':
			b.WriteString("%2F")
		case c == '%':
			b.WriteString("%25")
		case c == 0:
			b.WriteString("%00")
		case c == '.' && i == 0:
			b.WriteString("%2E")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// EscapeName is the file name of a key or category: '/' is %2F, '%' is %25, NUL is %00, a
// leading '.' is %2E and the empty string is "%". An escaped form longer than 255 bytes is
// shortened to a prefix cut at a character boundary, '~' and the first 16 hex digits of the
// SHA-256 of the key; the true key is then read from the user.kint.key attribute.
func EscapeName(s string) string {
	return fitName(escape(s), s, maxName)
}

// fitName shortens esc, the escaped form of key, to at most max bytes.
func fitName(esc, key string, max int) string {
	if len(esc) <= max {
		return esc
	}
	cut := max - shortSuffixLen
	for cut > 0 && !utf8.RuneStart(esc[cut]) {
		cut--
	}
	// Never split a %XX escape: the prefix then still reads as escaped text.
	if cut >= 1 && esc[cut-1] == '%' {
		cut--
	} else if cut >= 2 && esc[cut-2] == '%' {
		cut -= 2
	}
	sum := sha256.Sum256([]byte(key))
	return esc[:cut] + "~" + hex.EncodeToString(sum[:])[:16]
}

// UnescapeName is the key or category a file name stands for. It accepts only names that
// EscapeName produces, so every key has exactly one name. A shortened name (IsShortName)
// decodes literally; its true key has to be found by listing the directory.
func UnescapeName(name string) (string, error) {
	if name == "" {
		return "", errBadName
	}
	if len(name) > maxName {
		return "", errNameTooLong
	}
	if name == "%" {
		return "", nil
	}
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+3 > len(name) {
			return "", errBadName
		}
		switch name[i+1 : i+3] {
		case "2F":
			b.WriteByte('/')
		case "25":
			b.WriteByte('%')
		case "00":
			b.WriteByte(0)
		case "2E":
			b.WriteByte('.')
		default:
			return "", errBadName
		}
		i += 2
	}
	s := b.String()
	// Rejects the spellings escape never writes: "%2E" past the start, a raw leading '.'.
	if escape(s) != name {
		return "", errBadName
	}
	return s, nil
}

// IsShortName reports whether name has the shape of a shortened name: '~' and 16 lower-case
// hex digits at the end.
func IsShortName(name string) bool {
	if len(name) < shortSuffixLen || name[len(name)-shortSuffixLen] != '~' {
		return false
	}
	for _, c := range []byte(name[len(name)-16:]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// collidedName is the name of a null-category entity whose plain name is taken by a category:
// its name with a trailing '%', which escaping alone never produces.
func collidedName(key string) string {
	return fitName(escape(key), key, maxName-1) + "%"
}

// splitCollided undoes collidedName: it reports the name without its trailing lone '%'.
func splitCollided(name string) (string, bool) {
	if len(name) < 2 || name[len(name)-1] != '%' {
		return "", false
	}
	return name[:len(name)-1], true
}

// isLocalName reports whether a name is a local-only file: escaped keys never start with '.'.
func isLocalName(name string) bool { return strings.HasPrefix(name, ".") }

package fs

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// vectorsPath is the public test vectors, relative to this package's directory.
const vectorsPath = "../../shared/vectors/kint-v1-vectors.json"

// vectorNames returns every key and category of the vectors' rows.
func vectorNames(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatalf("read vectors: %v", err)
	}
	var v struct {
		Rows []struct {
			Row struct {
				Key      string  `json:"key"`
				Category *string `json:"category"`
			} `json:"row"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("parse vectors: %v", err)
	}
	if len(v.Rows) == 0 {
		t.Fatal("vectors hold no rows")
	}
	var out []string
	for _, r := range v.Rows {
		out = append(out, r.Row.Key)
		if r.Row.Category != nil {
			out = append(out, *r.Row.Category)
		}
	}
	return out
}

func TestEscapeNameVectors(t *testing.T) {
	for _, k := range vectorNames(t) {
		name := EscapeName(k)
		if strings.ContainsAny(name, "/\x00") || strings.HasPrefix(name, ".") || len(name) > maxName {
			t.Errorf("EscapeName(%q) = %q: not a file name", k, name)
		}
		back, err := UnescapeName(name)
		if err != nil || back != k {
			t.Errorf("UnescapeName(%q) = %q, %v; want %q", name, back, err, k)
		}
	}
	if got := EscapeName("doc/readme"); got != "doc%2Freadme" {
		t.Errorf("doc/readme escapes to %q", got)
	}
}

func TestEscapeNameTable(t *testing.T) {
	for _, c := range []struct{ key, name string }{
		{"", "%"},
		{"plain", "plain"},
		{"a/b/c", "a%2Fb%2Fc"},
		{"100%", "100%25"},
		{"%", "%25"},
		{"%2F", "%252F"},
		{"nul\x00byte", "nul%00byte"},
		{".hidden", "%2Ehidden"},
		{"..", "%2E."},
		{"a.b.", "a.b."},
		{"/", "%2F"},
		{"café ünïcode", "café ünïcode"},
		{"~tilde", "~tilde"},
	} {
		if got := EscapeName(c.key); got != c.name {
			t.Errorf("EscapeName(%q) = %q, want %q", c.key, got, c.name)
		}
		if back, err := UnescapeName(c.name); err != nil || back != c.key {
			t.Errorf("UnescapeName(%q) = %q, %v; want %q", c.name, back, err, c.key)
		}
	}
}

func TestUnescapeNameRejects(t *testing.T) {
	for _, name := range []string{
		"", "%%", "50%", "100%done", "%2f", "%2e", "a%2Eb", "%zz", "%2", ".local",
		"x%", strings.Repeat("a", maxName+1),
	} {
		if got, err := UnescapeName(name); err == nil {
			t.Errorf("UnescapeName(%q) = %q, want an error", name, got)
		}
	}
	if _, err := UnescapeName(strings.Repeat("a", maxName+1)); err != errNameTooLong {
		t.Errorf("an over-long name gives %v, want errNameTooLong", err)
	}
}

func TestEscapeNameLong(t *testing.T) {
	keys := []string{
		strings.Repeat("k", 300),
		strings.Repeat("/", 100),                   // escapes to 300 bytes of %2F
		strings.Repeat("é", 200),                   // two-byte runes across the cut
		strings.Repeat("🔥", 80),                    // four-byte runes
		strings.Repeat("ab%", 90),                  // escapes straddling the cut
		"." + strings.Repeat("x", 254),             // 255 bytes, 257 escaped
		strings.Repeat("z", 255),                   // exactly fits
		strings.Repeat("z", 253) + "/",             // 256 escaped
		strings.Repeat("q", 240) + "\x00" + "tail", // NUL near the end
	}
	seen := map[string]string{}
	for _, k := range keys {
		name := EscapeName(k)
		if len(name) > maxName || !utf8.ValidString(name) && utf8.ValidString(k) {
			t.Errorf("EscapeName(%d-byte key) = %d bytes, valid UTF-8 %v", len(k), len(name), utf8.ValidString(name))
		}
		if EscapeName(k) != name {
			t.Errorf("EscapeName is not deterministic for %q", k)
		}
		if other, ok := seen[name]; ok {
			t.Errorf("%q and %q share the name %q", k, other, name)
		}
		seen[name] = k
		if len(escape(k)) <= maxName {
			if name != escape(k) {
				t.Errorf("a fitting key was shortened: %q", k)
			}
			continue
		}
		if !IsShortName(name) {
			t.Errorf("shortened name %q does not look shortened", name)
		}
		// The prefix never ends inside an escape, so it still reads as escaped text.
		prefix := name[:len(name)-shortSuffixLen]
		if i := strings.LastIndexByte(prefix, '%'); i >= 0 && i > len(prefix)-3 {
			t.Errorf("shortened name %q cuts an escape", name)
		}
		// A collided shortened name keeps room for its '%'.
		if c := collidedName(k); len(c) > maxName || !strings.HasSuffix(c, "%") {
			t.Errorf("collidedName(%d bytes) = %d bytes %q", len(k), len(c), c)
		}
	}
	if IsShortName("plain") || IsShortName("x~0123456789ABCDEF") {
		t.Error("IsShortName accepts a name that is not shortened")
	}
}

func TestCollidedName(t *testing.T) {
	for _, k := range []string{"person", "", "a/b", "%"} {
		c := collidedName(k)
		base, ok := splitCollided(c)
		if !ok {
			t.Fatalf("splitCollided(%q) failed", c)
		}
		if back, err := UnescapeName(base); err != nil || back != k {
			t.Errorf("collided %q -> %q, %v; want %q", c, back, err, k)
		}
		// The collided name is never the name of any key.
		if _, err := UnescapeName(c); err == nil {
			t.Errorf("collided name %q also decodes as a plain name", c)
		}
	}
	if _, ok := splitCollided("%"); ok {
		t.Error(`"%" is the empty key, not a collided name`)
	}
}

func FuzzEscapeName(f *testing.F) {
	for _, s := range []string{"", ".", "..", "%", "/", "\x00", "a/b", ".x%2F", strings.Repeat("é", 150), "🔥hot"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		name := EscapeName(key)
		if name == "" || len(name) > maxName || strings.ContainsAny(name, "/\x00") || strings.HasPrefix(name, ".") {
			t.Fatalf("EscapeName(%q) = %q: not a usable file name", key, name)
		}
		if name == "." || name == ".." {
			t.Fatalf("EscapeName(%q) = %q", key, name)
		}
		if len(escape(key)) > maxName {
			if !IsShortName(name) {
				t.Fatalf("long key %q got %q", key, name)
			}
			return
		}
		back, err := UnescapeName(name)
		if err != nil || back != key {
			t.Fatalf("round trip %q -> %q -> %q, %v", key, name, back, err)
		}
		if _, ok := splitCollided(name); ok {
			t.Fatalf("plain name %q ends with a lone %%", name)
		}
	})
}

func FuzzUnescapeName(f *testing.F) {
	for _, s := range []string{"%", "%25", "%2Ex", "a%2Fb", "x%", "%%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		key, err := UnescapeName(name)
		if err != nil {
			return
		}
		// Every accepted name is the one name of its key.
		if got := EscapeName(key); got != name {
			t.Fatalf("UnescapeName(%q) = %q, which escapes to %q", name, key, got)
		}
	})
}

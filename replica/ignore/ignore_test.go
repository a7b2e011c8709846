package ignore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	rules := Defaults()
	if len(rules) != len(DefaultPatterns) {
		t.Fatalf("%d default rules, want %d", len(rules), len(DefaultPatterns))
	}
	local := map[string]string{
		"state/cfg~":              "*~ (default rule)",
		"state/#notes#":           "#*# (default rule)",
		"reference/4913":          "4913 (default rule)",
		"state/a.swp":             "*.swp (default rule)",
		"state/a.swo":             "*.swo (default rule)",
		"state/a.swx":             "*.swx (default rule)",
		"entity/person/x.tmp":     "*.tmp (default rule)",
		"entity/x.bak":            "*.bak (default rule)",
		"state/patch.orig":        "*.orig (default rule)",
		"state/patch.rej":         "*.rej (default rule)",
		"state/doc.kate-swp":      "*.kate-swp (default rule)",
		"reference/~$report.docx": "~$* (default rule)",
	}
	for p, want := range local {
		r, ok := Match(rules, p)
		if !ok || r.String() != want {
			t.Errorf("%s: matched %v by %q, want %q", p, ok, r.String(), want)
		}
	}
	for _, p := range []string{"state/cfg", "state/notes#", "state/#notes", "state/49134", "state/swp", "state/a.swp.txt",
		"state/x~0123456789abcdef", "entity/tmp/x", "state/~x", "reference/4913x"} {
		if r, ok := Match(rules, p); ok {
			t.Errorf("%s kept local by %s", p, r)
		}
	}
}

func TestParse(t *testing.T) {
	text := "# a comment\n\n*.log\n!keep.log\n\\#literal\n\\!bang\nentity/scratch/\n/state/only-here\nentity/**/deep\ntrailing   \nescaped\\ \r\nbad[\n/\n"
	rules, errs := Parse(text, "kintfs-ignore-x")
	if len(errs) != 2 {
		t.Fatalf("errors %v, want two (bad[ and /)", errs)
	}
	var pe *ParseError
	if !errors.As(errs[0], &pe) || pe.Line != 12 || !strings.Contains(errs[0].Error(), "kintfs-ignore-x line 12") {
		t.Fatalf("first error: %v", errs[0])
	}
	cases := map[string]bool{
		"state/a.log":          true,
		"entity/c/a.log":       true,
		"state/keep.log":       false,
		"state/#literal":       true,
		"state/!bang":          true,
		"entity/scratch/x":     true,
		"entity/scratch":       false, // a file named scratch: only directories are meant
		"state/only-here":      true,
		"reference/only-here":  false,
		"entity/deep":          true,
		"entity/c/deep":        true,
		"state/deep":           false,
		"state/trailing":       true,
		"state/trailing   ":    false,
		"state/escaped ":       true,
		"state/escaped":        false,
		"state/ordinary":       false,
		"state/a.log.conflict": false,
	}
	for p, want := range cases {
		if _, got := Match(rules, p); got != want {
			t.Errorf("%s: kept local %v, want %v", p, got, want)
		}
	}
	r, _ := Match(rules, "state/a.log")
	if r.String() != "*.log (kintfs-ignore-x:3)" {
		t.Errorf("rule shown as %q", r.String())
	}
	// a user rule after the defaults publishes what a default keeps local
	user, _ := Parse("!*.bak\n", "f")
	if _, ok := Match(append(Defaults(), user...), "state/x.bak"); ok {
		t.Error("!*.bak did not override the default")
	}
}

// TestFileReload: the rules file is read again when it changes, and its removal leaves the
// defaults.
func TestFileReload(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kintfs-ignore-0123")
	var warned []error
	f := NewFile(p, func(err error) { warned = append(warned, err) })
	if _, ok := f.Match("state/x.log"); ok {
		t.Fatal("matched before the file exists")
	}
	if _, ok := f.Match("state/x~"); !ok {
		t.Fatal("the defaults do not apply without a file")
	}
	if err := os.WriteFile(p, []byte("*.log\nbad[\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, ok := f.Match("state/x.log"); !ok || r.String() != "*.log (kintfs-ignore-0123:1)" {
		t.Fatalf("after writing the file: %v %s", ok, r)
	}
	if len(warned) != 1 || !strings.Contains(warned[0].Error(), "line 2") {
		t.Fatalf("warnings %v", warned)
	}
	f.Match("state/y")
	if len(warned) != 1 {
		t.Fatalf("an unchanged file warned again: %v", warned)
	}
	// an edit of the same size: the modification time tells
	later := time.Now().Add(2 * time.Second)
	if err := os.WriteFile(p, []byte("*.txt\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, later, later)
	if _, ok := f.Match("state/x.log"); ok {
		t.Fatal("the old rule still applies after an edit")
	}
	if _, ok := f.Match("state/x.txt"); !ok {
		t.Fatal("the new rule does not apply")
	}
	os.Remove(p)
	if _, ok := f.Match("state/x.txt"); ok {
		t.Fatal("a removed file's rule still applies")
	}
}

// FuzzIgnoreParse: any text parses without a panic, each kept rule matches without one, and a rule
// that parsed once parses again the same from its text.
func FuzzIgnoreParse(f *testing.F) {
	for _, s := range append(DefaultPatterns, "!*.log", "entity/**/x", "/a/b/", `\#x\ `, "[a-", "**", "a/**/", "\\") {
		f.Add(s, "state/a.log")
	}
	f.Fuzz(func(t *testing.T, text, p string) {
		rules, errs := Parse(text, "fuzz")
		if len(rules)+len(errs) > strings.Count(text, "\n")+1 {
			t.Fatalf("%d rules and %d errors from %d lines", len(rules), len(errs), strings.Count(text, "\n")+1)
		}
		for _, r := range rules {
			again, errs := Parse(r.Text, "fuzz")
			if len(errs) != 0 || len(again) != 1 || again[0].negate != r.negate || again[0].rooted != r.rooted ||
				again[0].dirOnly != r.dirOnly || strings.Join(again[0].segs, "/") != strings.Join(r.segs, "/") {
				t.Fatalf("%q does not parse again the same: %+v %v", r.Text, again, errs)
			}
			_ = r.String()
		}
		Match(rules, p)
		Match(rules, "entity/"+p+"/x")
	})
}

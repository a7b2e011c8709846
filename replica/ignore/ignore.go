// Package ignore decides which file names are kept on this machine and never anchored: a
// default set of editor and tool leftovers, and a per-vault file of rules in gitignore
// syntax the user edits, read again whenever it changes.
//
// A rule matches the path of a file under the mount, as the mount names it ("state/x~",
// "entity/person/#notes#"). A pattern without a slash matches the file's name in any
// directory; one ending in '/' matches every file under a directory of that name; one with
// a slash elsewhere is anchored at the mount's root ("entity/scratch/*"), where "**" matches
// any number of directories. '*', '?', '[...]' and '\' work as in path.Match. A line starting
// with '#' is a comment ("\#" is a literal '#'), '!' makes a pattern say "publish" ("\!" is a
// literal '!'), trailing spaces are dropped unless escaped. The last rule that matches wins,
// and the per-vault rules come after the defaults, so "!*.bak" there publishes .bak files.
package ignore

import (
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"time"
)

// DefaultPatterns are the names kept local on every vault, in gitignore syntax: backups
// (emacs and vim "name~", "*.bak", "*.orig"), autosaves and swap files (emacs "#name#", vim
// "*.swp", "*.swo", "*.swx" and its "4913" probe, kate "*.kate-swp", office "~$name"),
// temporaries ("*.tmp") and patch leftovers ("*.rej").
var DefaultPatterns = []string{
	"*~",
	`\#*#`,
	"4913",
	"*.swp",
	"*.swo",
	"*.swx",
	"*.tmp",
	"*.bak",
	"*.orig",
	"*.rej",
	"*.kate-swp",
	"~$*",
}

// maxLine bounds a rule line, and maxRules the rules of one file: a file past them is a
// mistake (a binary or a log written there), not a list of names.
const (
	maxLine  = 4096
	maxRules = 10000
)

// Rule is one parsed pattern.
type Rule struct {
	Text    string // the pattern as written
	Source  string // "default", or FILE:LINE
	negate  bool
	dirOnly bool
	rooted  bool     // matched from the mount's root, not against a name anywhere
	segs    []string // the pattern split at '/'
}

// String is how user.kint.anchored names the rule: the pattern and where it comes from.
func (r Rule) String() string {
	text := r.Text
	if strings.HasPrefix(text, `\#`) || strings.HasPrefix(text, `\!`) {
		text = text[1:] // the escape only keeps it from reading as a comment or a negation
	}
	if r.Source == "default" {
		return text + " (default rule)"
	}
	return text + " (" + r.Source + ")"
}

// ParseError is a line of a rules file that is not a valid pattern; the line is skipped.
type ParseError struct {
	Source string
	Line   int
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s line %d: %s (the line is skipped)", e.Source, e.Line, e.Reason)
}

// Parse reads rules in gitignore syntax. Lines that are no valid pattern are skipped and
// reported, each once; the rest still apply.
func Parse(text, source string) ([]Rule, []error) {
	var rules []Rule
	var errs []error
	for i, line := range strings.Split(text, "\n") {
		if len(rules) >= maxRules {
			errs = append(errs, &ParseError{source, i + 1, fmt.Sprintf("more than %d rules; the rest of the file is skipped", maxRules)})
			break
		}
		r, err := parseLine(line)
		if err != nil {
			errs = append(errs, &ParseError{source, i + 1, err.Error()})
			continue
		}
		if r == nil {
			continue
		}
		r.Source = fmt.Sprintf("%s:%d", source, i+1)
		rules = append(rules, *r)
	}
	return rules, errs
}

// parseLine reads one line; nil for a blank line or a comment.
func parseLine(line string) (*Rule, error) {
	line = strings.TrimSuffix(line, "\r")
	if len(line) > maxLine {
		return nil, fmt.Errorf("a pattern longer than %d bytes", maxLine)
	}
	line = trimTrailingSpaces(line)
	if line == "" || line[0] == '#' {
		return nil, nil
	}
	if strings.ContainsFunc(line, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		return nil, fmt.Errorf("%q has a control character", line)
	}
	r := &Rule{Text: line}
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") && !strings.HasSuffix(line, `\/`) {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if strings.Contains(line, "/") {
		r.rooted = true
		line = strings.TrimPrefix(line, "/")
	}
	if line == "" {
		return nil, fmt.Errorf("%q matches nothing", r.Text)
	}
	r.segs = strings.Split(line, "/")
	for _, s := range r.segs {
		if s == "" {
			return nil, fmt.Errorf("%q has an empty path element", r.Text)
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, fmt.Errorf("%q is not a valid pattern (%v)", r.Text, err)
		}
	}
	return r, nil
}

// trimTrailingSpaces drops the spaces that end line, except one escaped with '\'.
func trimTrailingSpaces(line string) string {
	end := len(line)
	for end > 0 && line[end-1] == ' ' {
		// an odd run of backslashes before the space escapes it
		bs := 0
		for j := end - 2; j >= 0 && line[j] == '\\'; j-- {
			bs++
		}
		if bs%2 == 1 {
			break
		}
		end--
	}
	return line[:end]
}

// Defaults are DefaultPatterns parsed.
func Defaults() []Rule {
	rules, errs := Parse(strings.Join(DefaultPatterns, "\n"), "default")
	if len(errs) > 0 {
		panic(errs[0]) // the defaults are fixed: a test parses them
	}
	for i := range rules {
		rules[i].Source = "default"
	}
	return rules
}

// Match reports the rule that keeps the file at p (a slash-separated path under the mount)
// local: the last rule that matches it, unless that one is a negation.
func Match(rules []Rule, p string) (Rule, bool) {
	segs := strings.Split(p, "/")
	for i := len(rules) - 1; i >= 0; i-- {
		if rules[i].matches(segs) {
			return rules[i], !rules[i].negate
		}
	}
	return Rule{}, false
}

// matches reports whether the rule covers the file whose path has the elements segs.
func (r *Rule) matches(segs []string) bool {
	if !r.rooted {
		// a name anywhere: the file's own (unless only directories are meant) or a directory's
		from := len(segs) - 1
		if r.dirOnly {
			from--
		}
		for i := from; i >= 0; i-- {
			if ok, _ := path.Match(r.segs[0], segs[i]); ok {
				return true
			}
		}
		return false
	}
	// rooted: the whole path, or a directory the file is under
	last := len(segs)
	if r.dirOnly {
		last--
	}
	for n := last; n >= 1; n-- {
		if matchSegs(r.segs, segs[:n]) {
			return true
		}
	}
	return false
}

// matchSegs matches pattern elements against path elements, "**" standing for any number.
// It runs in time proportional to len(pat) times len(segs), however many "**" there are.
func matchSegs(pat, segs []string) bool {
	// ok[j]: the pattern elements so far match the first j path elements
	ok := make([]bool, len(segs)+1)
	ok[0] = true
	for _, p := range pat {
		next := make([]bool, len(segs)+1)
		if p == "**" {
			any := false
			for j := range ok {
				any = any || ok[j]
				next[j] = any
			}
		} else {
			for j := 1; j <= len(segs); j++ {
				if ok[j-1] {
					next[j], _ = path.Match(p, segs[j-1])
				}
			}
		}
		ok = next
	}
	return ok[len(segs)]
}

// File is the per-vault rules file with the defaults before it. It is read again when its
// modification time or size changes, so an edit applies without a remount; a missing file
// is no rules.
type File struct {
	path string
	name string // how rules name it: its base name
	warn func(error)

	mu     sync.Mutex
	mtime  time.Time
	size   int64
	exists bool
	rules  []Rule // the defaults, then the file's
}

// NewFile watches the rules file at p; warn is told of each line skipped, once per change
// of the file (nil: not told).
func NewFile(p string, warn func(error)) *File {
	if warn == nil {
		warn = func(error) {}
	}
	return &File{path: p, name: path.Base(strings.ReplaceAll(p, string(os.PathSeparator), "/")), warn: warn,
		rules: Defaults()}
}

// Path is the rules file's path.
func (f *File) Path() string { return f.path }

// Match is Match over the defaults and the file as it is now.
func (f *File) Match(p string) (Rule, bool) {
	return Match(f.current(), p)
}

// current reloads the file when it changed and returns the rules.
func (f *File) current() []Rule {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := os.Stat(f.path)
	if err != nil {
		if f.exists {
			f.exists, f.rules = false, Defaults()
		}
		return f.rules
	}
	if f.exists && fi.ModTime().Equal(f.mtime) && fi.Size() == f.size {
		return f.rules
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		f.warn(fmt.Errorf("read %s: %w; the default rules apply", f.path, err))
		f.exists, f.rules = false, Defaults()
		return f.rules
	}
	f.exists, f.mtime, f.size = true, fi.ModTime(), fi.Size()
	user, errs := Parse(string(data), f.name)
	for _, e := range errs {
		f.warn(e)
	}
	f.rules = append(Defaults(), user...)
	return f.rules
}

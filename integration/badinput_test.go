package integration

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// badInput is one thing a person or a program might do to a mount, and the answers that are
// right for it: an errno, or 0 for success.
type badInput struct {
	name string
	op   func() error
	want []syscall.Errno
}

func errnoOf(err error) syscall.Errno {
	var en syscall.Errno
	if err == nil {
		return 0
	}
	if errors.As(err, &en) {
		return en
	}
	return syscall.EIO // anything else is a surprise here
}

func errnoName(e syscall.Errno) string {
	if e == 0 {
		return "ok"
	}
	for name, v := range map[string]syscall.Errno{"EINVAL": syscall.EINVAL, "ENAMETOOLONG": syscall.ENAMETOOLONG, "EROFS": syscall.EROFS,
		"EXDEV": syscall.EXDEV, "EACCES": syscall.EACCES, "EPERM": syscall.EPERM, "ENOENT": syscall.ENOENT, "EIO": syscall.EIO,
		"ENOTSUP": syscall.ENOTSUP, "EISDIR": syscall.EISDIR, "ENOTDIR": syscall.ENOTDIR, "EEXIST": syscall.EEXIST, "ENOSYS": syscall.ENOSYS} {
		if v == e {
			return name
		}
	}
	return e.Error()
}

// TestBadInput feeds a mount what it must refuse or hold: malformed escapes, names that are
// not UTF-8 or too long, writes, renames and attributes under @<block>, a row too large for
// one epoch, bodies that cannot be anchored, a journal event that is not one, a bad meta
// attribute, garbage to .kint/ctl and writes to the rest of .kint/. Each gets a precise errno
// (never EIO) or is held with its reason, nothing panics, the good rows flush, and after a
// remount every staged byte is still there.
func TestBadInput(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	c := dc.client(t)
	a := newMachine(t, dc, "bad-input")
	a.connect("bad input passphrase")
	mt := a.mount()
	writeFile(t, mt.path("state/anchored"), "an anchored row")
	mt.mustCtl("flush")
	at := fmt.Sprintf("@%d", chainHead(t, c, a).Block)

	random := make([]byte, 120<<10)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	huge := `{"blob":"` + base64.StdEncoding.EncodeToString(random) + `"}` // ~160 KB that does not compress
	binary := "\xff\xfe\x00binary\x80"
	write := func(rel, content string) func() error {
		return func() error { return os.WriteFile(mt.path(rel), []byte(content), 0o644) }
	}
	setxattr := func(rel, name, value string) func() error {
		return func() error { return unix.Setxattr(mt.path(rel), name, []byte(value), 0) }
	}
	ok := []syscall.Errno{0}
	inval := []syscall.Errno{syscall.EINVAL}
	rofs := []syscall.Errno{syscall.EROFS}
	ctlBad := []syscall.Errno{syscall.EINVAL}
	kintRO := []syscall.Errno{syscall.EACCES, syscall.EPERM, syscall.EROFS, syscall.EINVAL}
	cases := []badInput{
		// names
		{"escaped slash %2F", write("state/doc%2Freadme", "see the docs"), ok},
		{"escaped percent %25", write("state/100%25", "all of it"), ok},
		{"escaped NUL %00", write("state/nul%00inside", "a NUL in the key"), ok},
		{"escaped leading dot %2E", write("state/%2Eprofile", "a key that starts with a dot"), ok},
		{"stray % at the end", write("state/half%2", "x"), inval},
		{"unknown escape %41", write("state/%41BC", "x"), inval},
		{"%2E not at the start", write("state/a%2Eb", "x"), inval},
		{"lower-case escape %2f", write("state/a%2fb", "x"), inval},
		{"key not valid UTF-8", write("state/bad\xff\xfename", `"a body"`), []syscall.Errno{0, syscall.EINVAL}},
		{"name of 255 bytes", write("state/"+strings.Repeat("n", 255), "longest name"), ok},
		{"name of 256 bytes", write("state/"+strings.Repeat("n", 256), "x"), []syscall.Errno{syscall.ENAMETOOLONG}},
		{"name of 300 bytes of escapes", write("state/"+strings.Repeat("%2F", 100), "x"), []syscall.Errno{syscall.ENAMETOOLONG}},
		{"category for a tier without one", func() error { return os.Mkdir(mt.path("state/sub"), 0o755) }, []syscall.Errno{syscall.EPERM, syscall.EINVAL, syscall.ENOTSUP}},
		{"unknown tier", func() error { return os.Mkdir(mt.path("nonsense"), 0o755) }, []syscall.Errno{syscall.EPERM, syscall.EINVAL, syscall.EACCES}},
		// history views are read-only
		{"create under @block", write(at+"/state/new", "x"), rofs},
		{"overwrite under @block", write(at+"/state/anchored", "x"), rofs},
		{"mkdir under @block", func() error { return os.Mkdir(mt.path(at+"/entity/newcat"), 0o755) }, rofs},
		{"rm under @block", func() error { return os.Remove(mt.path(at + "/state/anchored")) }, rofs},
		{"truncate under @block", func() error { return os.Truncate(mt.path(at+"/state/anchored"), 0) }, rofs},
		{"setxattr under @block", setxattr(at+"/state/anchored", "user.kint.status", "x"), rofs},
		{"rename into @block", func() error { return os.Rename(mt.path("state/anchored"), mt.path(at+"/state/moved")) }, []syscall.Errno{syscall.EXDEV, syscall.EROFS}},
		{"rename out of @block", func() error { return os.Rename(mt.path(at+"/state/anchored"), mt.path("state/moved")) }, []syscall.Errno{syscall.EXDEV, syscall.EROFS}},
		{"rename across tiers", func() error { return os.Rename(mt.path("state/anchored"), mt.path("reference/anchored")) }, []syscall.Errno{syscall.EXDEV}},
		// bodies
		{"row too large for one epoch", write("state/huge", huge), ok},
		{"entity body that is not JSON", func() error {
			if err := os.Mkdir(mt.path("entity/notes"), 0o755); err != nil {
				return err
			}
			return write("entity/notes/prose", "plain prose")()
		}, ok},
		{"body that is not UTF-8", write("state/binary", binary), ok},
		{"journal event that is not JSON", write("journal/new-event", "not an event"), inval},
		{"journal event with an unknown field", write("journal/other-event", `{"ts":"2026-01-01T00:00:00Z","mood":"x"}`), inval},
		{"meta that is not JSON", setxattr("state/anchored", "user.kint.meta", "not json"), inval},
		{"read-only attribute", setxattr("state/anchored", "user.kint.leaf", "00"), []syscall.Errno{syscall.EPERM, syscall.EACCES, syscall.EROFS, syscall.EINVAL}},
		// .kint/
		{"ctl: random bytes", write(".kint/ctl", string(random[:64])), ctlBad},
		{"ctl: unknown command", write(".kint/ctl", "format c:\n"), ctlBad},
		{"ctl: a command with a NUL", write(".kint/ctl", "flush\x00"), ctlBad},
		{"ctl: 8 KB of commands", write(".kint/ctl", strings.Repeat("refresh\n", 1024)), []syscall.Errno{syscall.EINVAL, syscall.EFBIG, syscall.E2BIG}},
		{"ctl: empty write", write(".kint/ctl", ""), []syscall.Errno{0, syscall.EINVAL}},
		{"write .kint/status", write(".kint/status", "{}"), kintRO},
		{"create in .kint", write(".kint/new", "x"), kintRO},
		{"rm .kint/ctl", func() error { return os.Remove(mt.path(".kint/ctl")) }, kintRO},
	}
	var summary []string
	seen := map[string]int{}
	for _, bc := range cases {
		got := errnoOf(bc.op())
		good := false
		for _, w := range bc.want {
			good = good || got == w
		}
		if !good || got == syscall.EIO {
			t.Errorf("%s: %s (%v), want one of %v", bc.name, errnoName(got), got, bc.want)
		}
		seen[errnoName(got)]++
		summary = append(summary, bc.name+": "+errnoName(got))
	}
	t.Logf("answers:\n  %s", strings.Join(summary, "\n  "))
	if _, err := os.Stat(mt.path("state/doc%2Freadme")); err != nil {
		t.Errorf("state/doc%%2Freadme: %v", err)
	}

	// the good rows flush, the bad ones are held with their reasons
	mt.mustCtl("flush")
	st := mt.mustStatus()
	held := map[string]string{}
	for _, h := range st.Held {
		held[h.Tier+"/"+h.Key] = h.Reason
	}
	for k, reason := range map[string]string{"state/huge": "90 KB", "entity/prose": "JSON", "state/binary": "UTF-8",
		"state/bad\ufffd\ufffdname": "UTF-8"} { // status is JSON: a key that is not UTF-8 shows with U+FFFD
		if !strings.Contains(held[k], reason) {
			t.Errorf("%s held as %q, want a reason naming %q (held: %v)", k, held[k], reason, held)
		}
	}
	now := fmt.Sprintf("@%d", chainHead(t, c, a).Block)
	for _, name := range []string{"doc%2Freadme", "100%25", "nul%00inside", "%2Eprofile", strings.Repeat("n", 255)} {
		if _, err := os.Stat(mt.path(now + "/state/" + name)); err != nil {
			t.Errorf("state/%s was not anchored: %v", name, err)
		}
	}
	// refused events append nothing; what was written is kept beside, local-only, and held
	if out, err := exec.Command("ls", "-a", mt.path("journal")).CombinedOutput(); err != nil ||
		strings.TrimSpace(string(out)) != ".\n..\n.new-event.invalid\n.other-event.invalid" {
		t.Errorf("journal/ after refused events: %q %v", out, err)
	}
	for _, k := range []string{"journal/.new-event.invalid", "journal/.other-event.invalid"} {
		if !strings.Contains(held[k], "not a journal event") {
			t.Errorf("%s held as %q (held: %v)", k, held[k], held)
		}
	}
	mt.checkNoPanic()

	// a remount keeps every staged byte, held ones included
	want := tree(t, mt.dir)
	mt.unmount()
	mt = a.mountAt(mt.dir)
	got := tree(t, mt.dir)
	lost := 0
	for k, v := range want {
		if got[k] != v {
			lost++
			t.Errorf("after a remount %q reads %d bytes %q..., want %d bytes %q...", k, len(got[k]), clip(got[k]), len(v), clip(v))
		}
	}
	if len(got) != len(want) {
		t.Errorf("after a remount %d files, want %d: %v", len(got), len(want), keysOf(got))
	}
	if st2 := mt.mustStatus(); len(st2.Held) != len(st.Held) {
		t.Errorf("after a remount %d rows held, want %d", len(st2.Held), len(st.Held))
	}
	// a held row, fixed, flushes
	writeFile(t, mt.path("state/huge"), `{"blob":"small now"}`)
	mt.mustCtl("flush")
	if out, err := exec.Command("getfattr", "--only-values", "-n", "user.kint.anchored", mt.path("state/huge")).CombinedOutput(); err != nil || strings.Contains(string(out), "held") {
		t.Errorf("state/huge after the fix: %q %v", out, err)
	}
	mt.checkNoPanic()
	var kinds []string
	for k, n := range seen {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	recordFigure(t, "bad inputs", "%d tried: %s", len(cases), strings.Join(kinds, ", "))
	recordFigure(t, "held, lost after a remount", "%d held with reasons, %d files changed or lost", len(st.Held), lost)
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

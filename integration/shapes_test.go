package integration

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// shapeEvent is a journal event written through the mount.
const shapeEvent = `{"ts":"2026-12-01T10:00:00Z","evaluated":"shapes","acted":null,"forward":null,"extra":null}`

// logLines counts the lines of the mount log containing s.
func (mt *mounted) logLines(s string) int {
	n := 0
	for _, l := range strings.Split(mt.log.String(), "\n") {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// refusal is one change the default (kint) model refuses on the mount.
type refusal struct {
	what  string
	op    func() error
	errno syscall.Errno
	log   string // the mount log line that names the rule
}

// TestShapeRefusals: by default the mount changes only what kint's store can hold. Each
// refusal gets its errno at once and one log line naming the rule and never the value, and
// leaves nothing staged and nothing anchored; rows only staged are removed and renamed
// freely; journal writes by shell redirection log nothing false, and a bad one is kept.
func TestShapeRefusals(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	c := dc.client(t)
	a := newMachine(t, dc, "shapes")
	a.connect("shapes pass")
	mt := a.mount()
	sh(t, mt.dir, `mkdir entity/person && printf '{"n":1}' > entity/person/ada && printf 'doc' > state/s && printf 'ref' > reference/r`)
	sh(t, mt.dir, `echo '`+shapeEvent+`' > journal/ev`)
	mt.mustCtl("flush")
	events, err := os.ReadDir(mt.path("journal"))
	if err != nil || len(events) != 1 {
		t.Fatalf("journal: %v %v", events, err)
	}
	ev := "journal/" + events[0].Name()
	head := chainHead(t, c, a)
	trash := fmt.Sprintf(".Trash-%d", os.Getuid())
	sh(t, mt.dir, "mkdir -p "+trash+"/files "+trash+"/info")

	setx := func(rel, name, value string) func() error {
		return func() error { return unix.Setxattr(mt.path(rel), name, []byte(value), 0) }
	}
	refusals := []refusal{
		{"status on a state row", setx("state/s", "user.kint.status", "secret-status"), syscall.EPERM, "setxattr: EPERM: status is kept on entity rows only"},
		{"status on a reference row", setx("reference/r", "user.kint.status", "secret-status"), syscall.EPERM, "setxattr: EPERM: status is kept on entity rows only"},
		{"meta on an entity", setx("entity/person/ada", "user.kint.meta", `{"secret":1}`), syscall.EPERM, "setxattr: EPERM: meta is kept on reference rows only"},
		{"meta on a state row", setx("state/s", "user.kint.meta", `{"secret":1}`), syscall.EPERM, "setxattr: EPERM: meta is kept on reference rows only"},
		{"status not UTF-8", setx("entity/person/ada", "user.kint.status", "bad\xff\xfe"), syscall.EINVAL, "setxattr: EINVAL: an invalid value (user.kint.status and user.kint.meta must be UTF-8"},
		{"rm of an anchored state row", func() error { return os.Remove(mt.path("state/s")) }, syscall.EPERM, "unlink: EPERM: an anchored state row cannot be removed"},
		{"rm of an anchored reference row", func() error { return os.Remove(mt.path("reference/r")) }, syscall.EPERM, "unlink: EPERM: an anchored reference row cannot be removed"},
		{"mv of an anchored state row", func() error { return os.Rename(mt.path("state/s"), mt.path("state/s2")) }, syscall.EPERM, "rename: EPERM: an anchored state row cannot be renamed away"},
		{"mv of an anchored reference row to a dotfile", func() error { return os.Rename(mt.path("reference/r"), mt.path("reference/.r.bak")) }, syscall.EPERM, "rename: EPERM: an anchored reference row cannot be renamed away"},
		{"an anchored state row to the trash", func() error { return os.Rename(mt.path("state/s"), mt.path(trash+"/files/s")) }, syscall.EPERM, "EPERM: an anchored state row cannot be moved to the trash"},
		{"rm of a journal event", func() error { return os.Remove(mt.path(ev)) }, syscall.EPERM, "unlink: EPERM: the journal is append-only"},
		{"mv of a journal event", func() error { return os.Rename(mt.path(ev), mt.path("journal/other")) }, syscall.EPERM, "rename: EPERM: the journal is append-only"},
		{"truncate of a journal event", func() error { return os.Truncate(mt.path(ev), 0) }, syscall.EPERM, "EPERM: the journal is append-only"},
		{"append to a journal event", func() error {
			f, err := os.OpenFile(mt.path(ev), os.O_WRONLY|os.O_APPEND, 0)
			if err == nil {
				f.Close()
			}
			return err
		}, syscall.EPERM, "open: EPERM: the journal is append-only"},
	}
	for _, r := range refusals {
		before := mt.logLines(r.log)
		if got := errnoOf(r.op()); got != r.errno {
			t.Errorf("%s: %v, want %v", r.what, got, r.errno)
		}
		// the line comes through the mount's output pipe: wait for it
		n := 0
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if n = mt.logLines(r.log) - before; n >= 1 || time.Now().After(deadline) {
				break
			}
		}
		if n != 1 {
			t.Errorf("%s: %d log lines with %q, want 1\n%s", r.what, n, r.log, mt.log.String())
		}
	}
	for _, secret := range []string{"secret-status", `{"secret":1}`, "\xff\xfe"} {
		if strings.Contains(mt.log.String(), secret) {
			t.Errorf("the log carries a refused value %q", secret)
		}
	}
	// kintfs attr obeys the same rule, through the mount
	if _, errs, code := a.run("", "attr", mt.path("state/s"), "status", "--set", "x"); code != 2 || !strings.Contains(errs, "status is kept on entity rows only") ||
		!strings.Contains(errs, "kintfs vault-model full") {
		t.Errorf("kintfs attr --set status on a state row: exit %d, %q", code, errs)
	}
	if _, errs, code := a.run("", "attr", mt.path("entity/person/ada"), "meta", "--set", "{}"); code != 2 || !strings.Contains(errs, "meta is kept on reference rows only") {
		t.Errorf("kintfs attr --set meta on an entity: exit %d, %q", code, errs)
	}
	if st := mt.status(); st["staged_rows"].(float64) != 0 || st["staged_deletions"].(float64) != 0 {
		t.Fatalf("the refusals staged something: %v", st)
	}
	mt.mustCtl("flush")
	if after := chainHead(t, c, a); after.Seq != head.Seq {
		t.Fatalf("the refusals anchored something: head seq %d -> %d", head.Seq, after.Seq)
	}
	for _, rel := range []string{"state/s", "reference/r", ev} {
		if _, err := os.Stat(mt.path(rel)); err != nil {
			t.Errorf("%s after the refusals: %v", rel, err)
		}
	}

	// What kint's store holds, and what was never anchored, goes through.
	sh(t, mt.dir, `setfattr -n user.kint.status -v active entity/person/ada && setfattr -n user.kint.meta -v '{"src":"x"}' reference/r &&
setfattr -x user.kint.meta reference/r && setfattr -n user.kint.meta -v '{"src":"y"}' reference/r &&
printf new > state/fresh && mv state/fresh state/fresh2 && mv state/fresh2 `+trash+`/files/fresh2 && printf t > state/tmp && rm state/tmp &&
printf t > reference/tmp && rm reference/tmp && rm entity/person/ada`)
	// a journal event by redirection logs no false EINVAL; a bad one is kept, named and held
	sh(t, mt.dir, `echo '{"ts":"2026-12-01T11:00:00Z","evaluated":"again","acted":null,"forward":null,"extra":null}' > journal/second`)
	if mt.logLines("flush: EINVAL") != 0 {
		t.Fatalf("a good journal write logged EINVAL:\n%s", mt.log.String())
	}
	// the shell ignores what close says; the write is kept, named in the log and held
	exec.Command("sh", "-c", "cd "+mt.dir+" && echo garbage > journal/bad").Run()
	if got := readFile(t, mt.path("journal/.bad.invalid")); got != "garbage\n" {
		t.Errorf("journal/.bad.invalid = %q", got)
	}
	eventually(t, 20*time.Second, "the log names the kept file", func() error {
		if mt.logLines("kept as journal/.bad.invalid") == 0 {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	// the log is in order: a false EINVAL of the good write would be in by now
	if n := mt.logLines("flush: EINVAL"); n != 1 {
		t.Errorf("%d lines with flush: EINVAL, want the bad write's alone:\n%s", n, mt.log.String())
	}
	if mt.logLines("kept as journal/.bad.invalid") != 1 || strings.Contains(mt.log.String(), "garbage") {
		t.Errorf("the log does not name the kept file once, or carries its content:\n%s", mt.log.String())
	}
	st := mt.status()
	held, _ := st["held"].([]any)
	if len(held) != 1 || !strings.Contains(fmt.Sprint(held[0]), ".bad.invalid") {
		t.Errorf("held: %v, want journal/.bad.invalid", held)
	}
	mt.mustCtl("flush")
	if got := readFile(t, mt.path("journal/.bad.invalid")); got != "garbage\n" {
		t.Errorf("after a flush, journal/.bad.invalid = %q", got)
	}
	out := a.mustRun("", "export")
	if strings.Contains(out, "fresh") || strings.Contains(out, `"tmp"`) || strings.Contains(out, "ada") || strings.Contains(out, "bad") {
		t.Errorf("export after the allowed changes:\n%s", out)
	}
	if got, err := unix.Getxattr(mt.path("reference/r"), "user.kint.meta", make([]byte, 64)); err != nil || got != len(`{"src":"y"}`) {
		t.Errorf("the reference's meta after the flush: %d bytes, %v", got, err)
	}
}

// TestVaultModelFull: the full model is refused without the word, allowed with it (the
// command, mount --vault-model), kept across remounts and a new init, shown in status and
// doctor; status and doctor name anchored rows kint cannot hold, by path.
func TestVaultModelFull(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "model")
	a.connect("model pass")
	if got := strings.TrimSpace(a.mustRun("", "vault-model")); got != "kint" {
		t.Fatalf("default model %q", got)
	}
	if _, errs, code := a.run("", "vault-model", "everything"); code != 2 || !strings.Contains(errs, "vault-model [kint | full]") {
		t.Fatalf("vault-model everything: exit %d, %q", code, errs)
	}
	mt := a.mount()
	sh(t, mt.dir, `printf doc > state/s && printf ref > reference/r`)
	mt.mustCtl("flush")
	if err := unix.Setxattr(mt.path("state/s"), "user.kint.status", []byte("open"), 0); errnoOf(err) != syscall.EPERM {
		t.Fatalf("status on a state row in the kint model: %v", err)
	}
	if st := mt.status(); st["vault_model"] != "kint" || len(st["kint_incompatible"].([]any)) != 0 {
		t.Fatalf("status: vault_model %v, kint_incompatible %v", st["vault_model"], st["kint_incompatible"])
	}
	// the word, through the running mount
	if got := strings.TrimSpace(a.mustRun("", "vault-model", "full")); got != "full" {
		t.Fatalf("vault-model full printed %q", got)
	}
	sh(t, mt.dir, `setfattr -n user.kint.status -v open state/s && setfattr -n user.kint.meta -v '{"a":1}' state/s && mv reference/r reference/r2`)
	mt.mustCtl("flush")
	st := mt.status()
	inc := fmt.Sprint(st["kint_incompatible"])
	if st["vault_model"] != "full" || !strings.Contains(inc, "state/s") || !strings.Contains(inc, "status on a state row, meta on a state row") {
		t.Fatalf("status: vault_model %v, kint_incompatible %s", st["vault_model"], inc)
	}
	a.expectDoctor(0, "vault model", "ok  ", "full")
	mt.unmount()
	// kept across a remount and a new init; doctor warns once kint's model is back
	a.mustRun("model pass\n", "init", "--owner", a.owner(), "--passphrase-stdin")
	mt = a.mount()
	if st := mt.status(); st["vault_model"] != "full" {
		t.Fatalf("after a remount and init: vault_model %v", st["vault_model"])
	}
	if err := os.Remove(mt.path("state/s")); err != nil {
		t.Fatalf("rm of an anchored state row in the full model: %v", err)
	}
	mt.mustCtl("flush")
	sh(t, mt.dir, `printf again > state/s && setfattr -n user.kint.status -v open state/s`)
	mt.mustCtl("flush")
	mt.unmount()
	mt = a.mount("--vault-model", "kint")
	if st := mt.status(); st["vault_model"] != "kint" {
		t.Fatalf("mount --vault-model kint: vault_model %v", st["vault_model"])
	}
	a.expectDoctor(0, "kint shapes", "WARN", "state/s (status on a state row)")
	if out := a.mustRun("", "status"); !strings.Contains(out, "vault model: kint") || !strings.Contains(out, "kint cannot hold: state/s: status on a state row") {
		t.Fatalf("status:\n%s", out)
	}
	// the way to mend it: clearing is allowed
	sh(t, mt.dir, `setfattr -x user.kint.status state/s`)
	mt.mustCtl("flush")
	if st := mt.status(); len(st["kint_incompatible"].([]any)) != 0 {
		t.Fatalf("after clearing the status: %v", st["kint_incompatible"])
	}
}

// TestTemporariesNeverAnchored races sed -i and editors' write-then-rename saves of an
// anchored state row against flushes started at random moments: every save succeeds and no
// temporary name is ever anchored.
func TestTemporariesNeverAnchored(t *testing.T) {
	requireFUSE(t)
	requireTool(t, "sed", "sed")
	seed := time.Now().UnixNano()
	if s := os.Getenv("KINTFS_SHAPES_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (KINTFS_SHAPES_SEED=%d repeats this run)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	vim := "vim"
	if _, err := exec.LookPath(vim); err != nil {
		vim = "vim.tiny"
		requireTool(t, vim, "vim-tiny")
	}
	dc := startDevchain(t)
	a := newMachine(t, dc, "temps")
	a.connect("temps pass")
	a.extra = append(a.extra, "KINT_QUIET_SECONDS=3600")
	mt := a.mount()
	doc := mt.path("state/doc")
	writeFile(t, doc, "v0\n")
	mt.mustCtl("flush")
	rounds := envCount("KINTFS_SHAPES_ROUNDS", 12)
	var kinds [4]int // sed -i, write and mv, held open then mv, vim
	for i := 1; i <= rounds; i++ {
		delay := time.Duration(rng.Intn(400)) * time.Millisecond
		flushed := make(chan error, 1)
		go func() {
			time.Sleep(delay)
			flushed <- mt.ctl("flush")
		}()
		var script string
		kind := rng.Intn(4)
		kinds[kind]++
		switch kind {
		case 3:
			// vim's save: by default a backup by rename where it can, a copy where it cannot
			script = fmt.Sprintf(`%s -u NONE -N -i NONE -es -c '%%s/^v.*/v%d/' -c wq state/doc`, vim, i)
		case 0:
			script = fmt.Sprintf(`sed -i 's/^v.*/v%d/' state/doc`, i)
		case 1:
			script = fmt.Sprintf(`printf 'v%d\n' > state/doc.tmp%d && mv state/doc.tmp%d state/doc`, i, i, i)
		default:
			// an editor that keeps its temporary open a while before it closes and renames it
			script = fmt.Sprintf(`exec 3>state/doc.new && printf 'v%d\n' >&3 && sleep 0.%d && exec 3>&- && mv -f state/doc.new state/doc`, i, 1+rng.Intn(5))
		}
		if out, err := exec.Command("sh", "-c", "cd "+mt.dir+" && "+script).CombinedOutput(); err != nil {
			t.Fatalf("round %d (%s, flush after %v): the save failed: %v\n%s\nlog:\n%s", i, script, delay, err, out, mt.log.String())
		}
		if err := <-flushed; err != nil {
			t.Fatalf("round %d: flush: %v", i, err)
		}
		if got := readFile(t, doc); got != fmt.Sprintf("v%d\n", i) {
			t.Fatalf("round %d: state/doc = %q", i, got)
		}
	}
	mt.mustCtl("flush")
	if names := lsDir(t, mt.path("state")); strings.Join(names, " ") != "doc" {
		t.Fatalf("state lists %v", names)
	}
	// every anchored version of the state tier: only doc, ever
	blocks := strings.Split(strings.TrimSpace(readFile(t, mt.path(".kint/blocks"))), "\n")
	for _, line := range blocks {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		names := lsDir(t, mt.path("@"+f[1]+"/state"))
		for _, n := range names {
			if n != "doc" {
				t.Errorf("epoch %s (block %s) anchored the temporary state/%s", f[0], f[1], n)
			}
		}
	}
	if n := mt.logLines("warn:"); n != 0 {
		t.Errorf("%d warnings in the log:\n%s", n, mt.log.String())
	}
	t.Logf("%d saves (sed -i, write+mv, open+mv, vim: %v) raced against flushes, %d epochs, no temporary anchored", rounds, kinds, len(blocks))
}

// lsDir lists the names in a directory, sorted.
func lsDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, filepath.Base(e.Name()))
	}
	sort.Strings(out)
	return out
}

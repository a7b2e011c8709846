package fs

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"kintfs/replica/vault"
)

func TestJournalAppend(t *testing.T) {
	tm := mountForTest(t)
	tm.expectLog("warn: flush: EINVAL: an invalid value")
	event := `{"ts":"2026-09-09T21:15:00Z","evaluated":"checked the plan","acted":null,"forward":null,"extra":"{\"tool\":\"test\"}"}`
	mustSh(t, "printf '%s' '"+event+"' > "+tm.path("journal", "new-event"))
	mustSh(t, "printf '%s' '"+event+"' > "+tm.path("journal", "50%-off"))
	// The same event twice is two events: key and key:1.
	names := lsNames(t, tm.path("journal"))
	if len(names) != 2 || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(names[0]) || names[1] != names[0]+":1" {
		t.Fatalf("journal lists %q", names)
	}
	p := tm.path("journal", names[0])
	got := mustRun(t, "cat", p)
	var fields map[string]*string
	if err := json.Unmarshal([]byte(got), &fields); err != nil || fields["evaluated"] == nil || *fields["evaluated"] != "checked the plan" {
		t.Fatalf("event reads %q (%v)", got, err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0444 || st.Size() != int64(len(got)) {
		t.Fatalf("event stat: %v %v", st, err)
	}
	tm.expectLog("warn: open: EPERM: the journal is append-only")
	failsWith(t, "echo x > "+p, "Operation not permitted")
	// The created name is gone once the file is closed.
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, err := os.Stat(tm.path("journal", "new-event"))
		if err != nil {
			wantErrno(t, "created name after close", err, syscall.ENOENT)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the created name outlived its file")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// An event that is not a JSON object of the fields fails at close and appends nothing;
	// what was written is kept as a local file the log names.
	tm.expectLog("warn: flush: EINVAL: not a journal event (invalid value: a journal event is a JSON object of ts, evaluated, acted, forward, extra); what was written is kept as journal/.bad.invalid")
	f, err := os.Create(tm.path("journal", "bad"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("not json"); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "close a bad event", f.Close(), syscall.EINVAL)
	if got := lsNames(t, tm.path("journal")); len(got) != 3 || got[0] != ".bad.invalid" {
		t.Fatalf("journal lists %q after a bad event", got)
	}
	if got := readFile(t, tm.path("journal", ".bad.invalid")); got != "not json" {
		t.Fatalf("the bad event is kept as %q", got)
	}
	mustRun(t, "rm", tm.path("journal", ".bad.invalid"))
	// A finished local file moved into the journal is appended.
	mustSh(t, `printf '{"ts":"2026-02-02T00:00:00Z"}' > `+tm.path("journal", ".tmp")+" && mv "+tm.path("journal", ".tmp")+" "+tm.path("journal", "moved"))
	if got := lsNames(t, tm.path("journal")); len(got) != 3 {
		t.Fatalf("journal lists %q after moving an event in", got)
	}
	// One that is no event is refused, and stays as it was.
	tm.expectLog("warn: rename: EINVAL: an invalid value")
	mustSh(t, "echo nope > "+tm.path("journal", ".nope"))
	wantErrno(t, "move a file that is no event in", os.Rename(tm.path("journal", ".nope"), tm.path("journal", "nope")), syscall.EINVAL)
	if got := readFile(t, tm.path("journal", ".nope")); got != "nope\n" {
		t.Fatalf("the refused file reads %q", got)
	}
	// While open, the created name can be reopened.
	f, err = os.Create(tm.path("journal", "open"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(`{"ts":"2026-01-01T00:00:00Z"}`); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, tm.path("journal", "open")); got != `{"ts":"2026-01-01T00:00:00Z"}` {
		t.Fatalf("reopened event reads %q", got)
	}
}

func TestLocalDotfiles(t *testing.T) {
	tm := mountForTest(t)
	mustSh(t, "echo swap > "+tm.path("state", ".goal.swp"))
	if got := lsNames(t, tm.path("state")); strings.Join(got, " ") != ".goal.swp" {
		t.Fatalf("state lists %q", got)
	}
	v, err := tm.r.Get(vault.Key{Tier: "state", Key: ".goal.swp", Local: true})
	if err != nil || !v.Key.Local {
		t.Fatalf("local file in backend: %+v %v", v, err)
	}
	if _, err := tm.r.Get(stateKey(".goal.swp")); err == nil {
		t.Fatal("a dotfile became a row")
	}
	if got, err := getxattr(t, tm.path("state", ".goal.swp"), "user.kint.anchored"); err != nil || !strings.Contains(got, "local") {
		t.Fatalf("anchored %q %v", got, err)
	}
	// A key that starts with '.' is a row, named %2E... (written as a pull would, and told).
	if _, err := tm.r.Write(stateKey(".real"), []byte("r"), time.Now()); err != nil {
		t.Fatal(err)
	}
	tm.m.fs.changed([]vault.Key{stateKey(".real")})
	eventually(t, "the new row listed", func() bool {
		return strings.Join(lsNames(t, tm.path("state")), " ") == "%2Ereal .goal.swp"
	})
	if got := mustRun(t, "cat", tm.path("state", "%2Ereal")); got != "r" {
		t.Fatalf("%%2Ereal reads %q", got)
	}
	// Local files live in categories too.
	mustRun(t, "mkdir", tm.path("entity", "c"))
	mustSh(t, "echo x > "+tm.path("entity", "c", ".tmp"))
	if _, err := tm.r.Get(vault.Key{Tier: "entity", Category: "c", HasCategory: true, Key: ".tmp", Local: true}); err != nil {
		t.Fatal(err)
	}
}

func TestCollisionRule(t *testing.T) {
	tm := mountForTest(t)
	mustRun(t, "mkdir", tm.path("entity", "person"))
	// entity/person is the category; person% is the null-category entity person.
	mustSh(t, `echo '{"who":"null"}' > `+tm.path("entity", "person%"))
	mustSh(t, `echo '{"who":"cat"}' > `+tm.path("entity", "person", "ann"))
	if got := lsNames(t, tm.path("entity")); strings.Join(got, " ") != "person person%" {
		t.Fatalf("entity lists %q", got)
	}
	if got := backendContent(t, tm.r, vault.Key{Tier: "entity", Key: "person"}); got != "{\"who\":\"null\"}\n" {
		t.Fatalf("null-category person holds %q", got)
	}
	if got := mustRun(t, "cat", tm.path("entity", "person%")); got != "{\"who\":\"null\"}\n" {
		t.Fatalf("person%% reads %q", got)
	}
	if st, err := os.Stat(tm.path("entity", "person")); err != nil || !st.IsDir() {
		t.Fatalf("entity/person: %v %v", st, err)
	}
	// Without a category of that name, name% is the same file as name.
	mustSh(t, `echo '{}' > `+tm.path("entity", "solo"))
	if got := mustRun(t, "cat", tm.path("entity", "solo%")); got != "{}\n" {
		t.Fatalf("solo%% reads %q", got)
	}
	mustRun(t, "rm", tm.path("entity", "person%"))
	if got := lsNames(t, tm.path("entity")); strings.Join(got, " ") != "person solo" {
		t.Fatalf("entity lists %q", got)
	}
}

func TestEscapedAndLongNames(t *testing.T) {
	tm := mountForTest(t)
	write := func(k vault.Key, body string) {
		if _, err := tm.r.Write(k, []byte(body), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	write(vault.Key{Tier: "reference", Key: "doc/readme"}, "the readme text")
	write(vault.Key{Tier: "reference", Key: "50%"}, "half")
	write(vault.Key{Tier: "reference", Key: ""}, "empty key")
	long := strings.Repeat("long/key-", 40)
	write(vault.Key{Tier: "reference", Key: long}, "long body")
	names := lsNames(t, tm.path("reference"))
	short := EscapeName(long)
	want := []string{"%", "50%25", "doc%2Freadme", short}
	if strings.Join(names, "|") != strings.Join(sortedCopy(want), "|") {
		t.Fatalf("reference lists %q, want %q", names, want)
	}
	for name, body := range map[string]string{"doc%2Freadme": "the readme text", "50%25": "half", "%": "empty key", short: "long body"} {
		if got := mustRun(t, "cat", tm.path("reference", name)); got != body {
			t.Errorf("%s reads %q", name, got)
		}
	}
	if got, err := getxattr(t, tm.path("reference", short), "user.kint.key"); err != nil || got != long {
		t.Fatalf("shortened name's key %q %v", got, err)
	}
	// Written through its shortened name, the long key changes.
	mustSh(t, "printf new > "+tm.path("reference", short))
	if got := backendContent(t, tm.r, vault.Key{Tier: "reference", Key: long}); got != "new" {
		t.Fatalf("long key holds %q", got)
	}
	// A long category and a long null-category entity of the same name.
	longCat := strings.Repeat("c", 300)
	write(vault.Key{Tier: "entity", Category: longCat, HasCategory: true, Key: "k"}, "{}")
	write(vault.Key{Tier: "entity", Key: longCat}, `{"null":true}`)
	names = lsNames(t, tm.path("entity"))
	if len(names) != 2 || names[0] != EscapeName(longCat) || names[1] != collidedName(longCat) {
		t.Fatalf("entity lists %q", names)
	}
	if got := mustRun(t, "cat", tm.path("entity", collidedName(longCat))); got != `{"null":true}` {
		t.Fatalf("collided long entity reads %q", got)
	}
	if got := mustRun(t, "cat", tm.path("entity", EscapeName(longCat), "k")); got != "{}" {
		t.Fatalf("entity in a long category reads %q", got)
	}
	if got, err := getxattr(t, tm.path("entity", EscapeName(longCat)), "user.kint.key"); err != nil || got != longCat {
		t.Fatalf("long category key %q %v", got, err)
	}
	// Vector names with non-ASCII keys.
	for _, k := range []string{"🔥hot", "ﬁrst", "café ünïcode"} {
		mustSh(t, `echo '{}' > '`+tm.path("entity", k)+`'`)
		if _, err := tm.r.Get(vault.Key{Tier: "entity", Key: k}); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

func TestStableInodes(t *testing.T) {
	tm := mountForTest(t)
	mustRun(t, "mkdir", tm.path("entity", "cat"))
	mustSh(t, "echo a > "+tm.path("state", "a")+" && echo b > "+tm.path("state", "b"))
	mustSh(t, `echo '{}' > `+tm.path("entity", "cat", "x"))
	for _, dir := range []string{tm.path("state"), tm.path("entity"), tm.path("entity", "cat")} {
		for name, ino := range direntInos(t, dir) {
			if name == "." || name == ".." {
				continue
			}
			st, err := os.Stat(dir + "/" + name)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Sys().(*syscall.Stat_t).Ino; got != ino {
				t.Errorf("%s/%s: readdir ino %d, stat ino %d", dir, name, ino, got)
			}
		}
	}
	v, err := tm.r.Get(stateKey("a"))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(tm.path("state", "a"))
	if st.Sys().(*syscall.Stat_t).Ino != v.Ino {
		t.Fatalf("stat ino %d, backend ino %d", st.Sys().(*syscall.Stat_t).Ino, v.Ino)
	}
	// Rewriting a file keeps its number.
	mustSh(t, "echo again > "+tm.path("state", "a"))
	st2, _ := os.Stat(tm.path("state", "a"))
	if st2.Sys().(*syscall.Stat_t).Ino != v.Ino {
		t.Fatal("rewriting changed the inode number")
	}
}

func TestVimSave(t *testing.T) {
	vim, err := exec.LookPath("vim")
	if err != nil {
		if vim, err = exec.LookPath("vim.tiny"); err != nil {
			t.Skip("VIM TEST NOT RUN: no vim on PATH")
		}
	}
	tm := mountForTest(t)
	p := tm.path("entity", "notes")
	mustSh(t, "printf 'one\ntwo\n' > "+p)
	mustRun(t, "setfattr", "-n", "user.kint.status", "-v", "kept", p)
	mustRun(t, vim, "-u", "NONE", "-N", "-i", "NONE", "-es", "-c", "%s/two/three/", "-c", "wq", p)
	if got := mustRun(t, "cat", p); got != "one\nthree\n" {
		t.Fatalf("after vim: %q", got)
	}
	if got, err := getxattr(t, p, "user.kint.status"); err != nil || got != "kept" {
		t.Fatalf("status after vim: %q %v", got, err)
	}
	if got := lsNames(t, tm.path("entity")); strings.Join(got, " ") != "notes" {
		t.Fatalf("vim left %q", got)
	}
}

// TestVimBackupIsLocal: vim with backups on renames the file to its backup (vim's "4913"
// probe first) and writes it anew; the backup "notes~" is a local-only file, never a row.
func TestVimBackupIsLocal(t *testing.T) {
	vim, err := exec.LookPath("vim")
	if err != nil {
		if vim, err = exec.LookPath("vim.tiny"); err != nil {
			t.Skip("VIM TEST NOT RUN: no vim on PATH")
		}
	}
	tm := mountForTest(t)
	p := tm.path("state", "notes")
	mustSh(t, "printf 'one\ntwo\n' > "+p)
	mustRun(t, vim, "-u", "NONE", "-N", "-i", "NONE", "-es", "-c", "set backup writebackup backupcopy=no backupskip=", "-c", "%s/two/three/", "-c", "wq", p)
	if got := mustRun(t, "cat", p); got != "one\nthree\n" {
		t.Fatalf("after vim: %q", got)
	}
	if got := mustRun(t, "cat", p+"~"); got != "one\ntwo\n" {
		t.Fatalf("the backup: %q", got)
	}
	if _, err := tm.r.Get(vault.Key{Tier: "state", Key: "notes~", Local: true}); err != nil {
		t.Fatalf("the backup is not a local file: %v", err)
	}
	if _, err := tm.r.Get(stateKey("notes~")); err == nil {
		t.Fatal("the backup is a row")
	}
	if got, err := getxattr(t, p+"~", "user.kint.anchored"); err != nil || got != "local: *~ (default rule)" {
		t.Fatalf("the backup's user.kint.anchored: %q %v", got, err)
	}
	st, err := tm.r.Status()
	if err != nil {
		t.Fatal(err)
	}
	if st.StagedRows != 1 || st.LocalFiles != 1 {
		t.Fatalf("staged %d rows and %d local files, want 1 and 1", st.StagedRows, st.LocalFiles)
	}
}

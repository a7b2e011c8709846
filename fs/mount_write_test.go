package fs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"kintfs/replica/vault"
)

func stateKey(k string) vault.Key { return vault.Key{Tier: "state", Key: k} }

func TestCreateReadOverwriteAppendTruncate(t *testing.T) {
	tm := mountForTest(t)
	p := tm.path("state", "goal")
	mustSh(t, "echo hello > "+p)
	if got := mustRun(t, "cat", p); got != "hello\n" {
		t.Fatalf("cat after create: %q", got)
	}
	// Durable once close returned.
	if got := backendContent(t, tm.r, stateKey("goal")); got != "hello\n" {
		t.Fatalf("backend after create: %q", got)
	}
	mustSh(t, "echo world >> "+p)
	if got := mustRun(t, "cat", p); got != "hello\nworld\n" {
		t.Fatalf("cat after append: %q", got)
	}
	mustSh(t, "printf abc > "+p)
	if got := mustRun(t, "cat", p); got != "abc" {
		t.Fatalf("cat after overwrite: %q", got)
	}
	// A write in the middle keeps the rest: read-modify-write.
	mustSh(t, "printf X | dd of="+p+" bs=1 seek=1 conv=notrunc status=none")
	if got := mustRun(t, "cat", p); got != "aXc" {
		t.Fatalf("cat after dd: %q", got)
	}
	mustRun(t, "truncate", "-s", "1", p)
	if got := backendContent(t, tm.r, stateKey("goal")); got != "a" {
		t.Fatalf("backend after truncate: %q", got)
	}
	mustRun(t, "truncate", "-s", "4", p)
	if got := readFile(t, p); got != "a\x00\x00\x00" {
		t.Fatalf("after extending truncate: %q", got)
	}
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Size() != 0 || st.Mode().Perm() != 0644 {
		t.Fatalf("stat after truncate: %v %v", st, err)
	}
	// touch makes an empty file, and is accepted on an existing one.
	mustRun(t, "touch", tm.path("state", "empty"), p)
	if got := backendContent(t, tm.r, stateKey("empty")); got != "" {
		t.Fatalf("touched file holds %q", got)
	}
	// A larger file, written in many pieces.
	big := strings.Repeat("0123456789abcdef", 20000)
	if err := os.WriteFile(tm.path("reference", "big"), []byte(big), 0644); err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, "cat", tm.path("reference", "big")); got != big {
		t.Fatalf("big file reads %d bytes", len(got))
	}
}

func TestFsyncIsDurableBeforeClose(t *testing.T) {
	tm := mountForTest(t)
	f, err := os.Create(tm.path("state", "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("synced"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := backendContent(t, tm.r, stateKey("f")); got != "synced" {
		t.Fatalf("backend after fsync: %q", got)
	}
	// Size seen through the open handle while more is buffered.
	if _, err := f.WriteString(" more"); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Stat(); err != nil || st.Size() != int64(len("synced more")) {
		t.Fatalf("fstat while writing: %v %v", st, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := backendContent(t, tm.r, stateKey("f")); got != "synced more" {
		t.Fatalf("backend after close: %q", got)
	}
}

func TestRenameWithinTierAndAcrossCategories(t *testing.T) {
	tm := mountForTest(t)
	mustSh(t, "echo one > "+tm.path("state", "a"))
	mustRun(t, "mv", tm.path("state", "a"), tm.path("state", "b"))
	if got := mustRun(t, "cat", tm.path("state", "b")); got != "one\n" {
		t.Fatalf("renamed file reads %q", got)
	}
	_, err := os.Stat(tm.path("state", "a"))
	wantErrno(t, "old name after rename", err, syscall.ENOENT)
	if _, err := tm.r.Get(stateKey("a")); err == nil {
		t.Fatal("backend still has the old key")
	}
	// Replacing a target.
	mustSh(t, "echo two > "+tm.path("state", "c"))
	mustRun(t, "mv", tm.path("state", "c"), tm.path("state", "b"))
	if got := mustRun(t, "cat", tm.path("state", "b")); got != "two\n" {
		t.Fatalf("replaced target reads %q", got)
	}
	// Across categories, and from no category into one.
	mustRun(t, "mkdir", tm.path("entity", "c1"), tm.path("entity", "c2"))
	mustSh(t, `echo '{"n":1}' > `+tm.path("entity", "c1", "x"))
	mustRun(t, "mv", tm.path("entity", "c1", "x"), tm.path("entity", "c2", "x"))
	if got := backendContent(t, tm.r, vault.Key{Tier: "entity", Category: "c2", HasCategory: true, Key: "x"}); got != "{\"n\":1}\n" {
		t.Fatalf("moved entity reads %q", got)
	}
	mustSh(t, `echo '{}' > `+tm.path("entity", "y"))
	mustRun(t, "mv", tm.path("entity", "y"), tm.path("entity", "c1", "y"))
	if got := lsNames(t, tm.path("entity", "c1")); strings.Join(got, " ") != "y" {
		t.Fatalf("c1 lists %q", got)
	}
	if got := lsNames(t, tm.path("entity")); strings.Join(got, " ") != "c1 c2" {
		t.Fatalf("entity lists %q", got)
	}
	// A file being written is renamed with what was written so far.
	f, err := os.Create(tm.path("state", "open"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("pending"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tm.path("state", "open"), tm.path("state", "moved")); err != nil {
		t.Fatal(err)
	}
	if got := backendContent(t, tm.r, stateKey("moved")); got != "pending" {
		t.Fatalf("renamed open file holds %q", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRenameAcrossTiers(t *testing.T) {
	tm := mountForTest(t)
	mustSh(t, "echo text > "+tm.path("state", "a"))
	err := os.Rename(tm.path("state", "a"), tm.path("reference", "a"))
	wantErrno(t, "rename across tiers", err, syscall.EXDEV)
	// mv falls back to copy and delete.
	mustRun(t, "mv", tm.path("state", "a"), tm.path("reference", "a"))
	if got := backendContent(t, tm.r, vault.Key{Tier: "reference", Key: "a"}); got != "text\n" {
		t.Fatalf("moved across tiers: %q", got)
	}
	if _, err := tm.r.Get(stateKey("a")); err == nil {
		t.Fatal("the source survived mv across tiers")
	}
	// A category is moved by copying it.
	mustRun(t, "mkdir", tm.path("entity", "old"))
	mustSh(t, `echo '{}' > `+tm.path("entity", "old", "k"))
	wantErrno(t, "rename a category", os.Rename(tm.path("entity", "old"), tm.path("entity", "new")), syscall.EXDEV)
	mustRun(t, "mv", tm.path("entity", "old"), tm.path("entity", "new"))
	if got := lsNames(t, tm.path("entity")); strings.Join(got, " ") != "new" {
		t.Fatalf("entity lists %q after moving a category", got)
	}
}

func TestUnlink(t *testing.T) {
	tm := mountForTest(t)
	p := tm.path("reference", "r")
	mustSh(t, "echo r > "+p)
	mustRun(t, "rm", p)
	_, err := os.Stat(p)
	wantErrno(t, "stat after rm", err, syscall.ENOENT)
	wantErrno(t, "rm again", os.Remove(p), syscall.ENOENT)
	// Recreated under the same name, it is a new file with the new content.
	mustSh(t, "echo again > "+p)
	if got := mustRun(t, "cat", p); got != "again\n" {
		t.Fatalf("recreated file reads %q", got)
	}
	// Writing to an unlinked open file does not bring it back.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("ghost"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.r.Get(vault.Key{Tier: "reference", Key: "r"}); err == nil {
		t.Fatal("an unlinked file came back on close")
	}
}

func TestMkdirRmdirNlink(t *testing.T) {
	tm := mountForTest(t)
	nlink := func(p string) uint64 {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return uint64(st.Sys().(*syscall.Stat_t).Nlink)
	}
	if n := nlink(tm.path("entity")); n != 2 {
		t.Fatalf("empty entity nlink %d", n)
	}
	mustRun(t, "mkdir", tm.path("entity", "person"), tm.path("entity", "place"))
	if n := nlink(tm.path("entity")); n != 4 {
		t.Fatalf("entity nlink %d with two categories", n)
	}
	if n := nlink(tm.path("entity", "person")); n != 2 {
		t.Fatalf("category nlink %d", n)
	}
	mustSh(t, `echo '{}' > `+tm.path("entity", "person", "ann"))
	if n := nlink(tm.path("entity", "person", "ann")); n != 1 {
		t.Fatalf("file nlink %d", n)
	}
	wantErrno(t, "rmdir non-empty", syscall.Rmdir(tm.path("entity", "person")), syscall.ENOTEMPTY)
	wantErrno(t, "mkdir existing", syscall.Mkdir(tm.path("entity", "person"), 0755), syscall.EEXIST)
	wantErrno(t, "mkdir outside entity", syscall.Mkdir(tm.path("state", "d"), 0755), syscall.EPERM)
	wantErrno(t, "mkdir in a category", syscall.Mkdir(tm.path("entity", "person", "d"), 0755), syscall.EPERM)
	mustRun(t, "rm", tm.path("entity", "person", "ann"))
	mustRun(t, "rmdir", tm.path("entity", "person"))
	if got := lsNames(t, tm.path("entity")); strings.Join(got, " ") != "place" {
		t.Fatalf("entity lists %q", got)
	}
	if n := nlink(tm.path("entity")); n != 3 {
		t.Fatalf("entity nlink %d after rmdir", n)
	}
	mustRun(t, "mkdir", tm.path("entity", "person"))
	if got := lsNames(t, tm.path("entity", "person")); len(got) != 0 {
		t.Fatalf("a remade category lists %q", got)
	}
	// rm -r of a category with files.
	mustSh(t, `echo '{}' > `+tm.path("entity", "place", "p1")+` && echo '{}' > `+tm.path("entity", "place", "p2"))
	mustRun(t, "rm", "-r", tm.path("entity", "place"))
	if got := lsNames(t, tm.path("entity")); strings.Join(got, " ") != "person" {
		t.Fatalf("entity lists %q after rm -r", got)
	}
}

func TestCopyTreeIn(t *testing.T) {
	tm := mountForTest(t)
	src := filepath.Join(t.TempDir(), "team")
	if err := os.MkdirAll(src, 0755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"ann": `{"name":"ann"}`, "bob": `{"name":"bob"}`} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0644); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, "cp", "-r", src, tm.path("entity"))
	if got := lsNames(t, tm.path("entity", "team")); strings.Join(got, " ") != "ann bob" {
		t.Fatalf("copied category lists %q", got)
	}
	if got := backendContent(t, tm.r, vault.Key{Tier: "entity", Category: "team", HasCategory: true, Key: "bob"}); got != `{"name":"bob"}` {
		t.Fatalf("copied entity holds %q", got)
	}
	// And back out, with cp -r of the mount's own tree.
	out := filepath.Join(t.TempDir(), "out")
	mustRun(t, "cp", "-r", tm.path("entity"), out)
	if got := readFile(t, filepath.Join(out, "team", "ann")); got != `{"name":"ann"}` {
		t.Fatalf("copied out: %q", got)
	}
}

package fs

import (
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kintfs/replica/replicatest"
	"kintfs/replica/vault"
)

// requireTool fails in CI (which installs it, see .ci/run) and skips loudly elsewhere when a
// tool a test drives is missing.
func requireTool(t *testing.T, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	msg := fmt.Sprintf("TEST NOT RUN: %s is missing; apt-get install -y %s to run it", name, pkg)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// statf is stat -c format of p.
func statf(t *testing.T, format, p string) string {
	t.Helper()
	return strings.TrimSpace(mustRun(t, "stat", "-c", format, p))
}

// remount unmounts tm, reopens its replica as a restart would, and mounts it again.
func remount(t *testing.T, tm *testMount) *testMount {
	t.Helper()
	for i := 0; ; i++ {
		err := tm.m.Unmount()
		if err == nil {
			break
		}
		if i == 50 {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	tm.m = nil
	r := replicatest.Reopen(t, tm.r)
	m, err := Mount(tm.dir, r, MountOptions{Xattrs: true, Logger: log.New(tm.log, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	tm.m, tm.r = m, r
	// Registered after the reopened replica's cleanup, so it runs first: unmount, then close.
	t.Cleanup(func() {
		if tm.m == nil {
			return
		}
		var err error
		for i := 0; i < 50; i++ {
			if err = tm.m.Unmount(); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("unmount: %v", err)
		}
		tm.m = nil
	})
	return tm
}

func TestTouchAndChmodKeptLocally(t *testing.T) {
	tm := mountForTest(t)
	f := tm.path("state", "f")
	mustSh(t, "echo hello > "+f)
	before, err := tm.r.Get(stateKey("f"))
	if err != nil {
		t.Fatal(err)
	}
	ino := statf(t, "%i", f)
	mustRun(t, "touch", "-d", "2020-01-02T03:04:05.123456789Z", f)
	mustRun(t, "chmod", "600", f)
	if got := statf(t, "%y %a", f); !strings.HasPrefix(got, "2020-01-02 03:04:05.123456789") || !strings.HasSuffix(got, " 600") {
		t.Fatalf("after touch -d and chmod 600: %q", got)
	}
	after, err := tm.r.Get(stateKey("f"))
	if err != nil {
		t.Fatal(err)
	}
	if after.Leaf != before.Leaf || after.Staged != before.Staged || after.Size != before.Size {
		t.Fatalf("touch and chmod changed the row: leaf %x -> %x, staged %v -> %v", before.Leaf, after.Leaf, before.Staged, after.Staged)
	}
	mustRun(t, "chmod", "4755", f) // set-uid is not kept
	if got := statf(t, "%a", f); got != "755" {
		t.Fatalf("chmod 4755 shows %s, want 755", got)
	}
	mustRun(t, "chmod", "640", f)
	mustRun(t, "chmod", "750", tm.path("state"))
	mustRun(t, "touch", "-d", "2019-05-06T07:08:09Z", tm.path("state"))

	tm = remount(t, tm)
	if got := statf(t, "%y %a %i", f); !strings.HasPrefix(got, "2020-01-02 03:04:05.123456789") || !strings.HasSuffix(got, " 640 "+ino) {
		t.Fatalf("after remount: %q, want the 2020 time, mode 640 and inode %s", got, ino)
	}
	if got := statf(t, "%y %a", tm.path("state")); !strings.HasPrefix(got, "2019-05-06 07:08:09") || !strings.HasSuffix(got, " 750") {
		t.Fatalf("state/ after remount: %q", got)
	}
	// a write is a new mtime, and the mode stays
	mustSh(t, "echo again >> "+f)
	if got := statf(t, "%Y %a", f); strings.HasPrefix(got, "1577934245") || !strings.HasSuffix(got, " 640") {
		t.Fatalf("after a write: %q, want a new mtime and mode 640", got)
	}
}

func TestCreateModeAndCtime(t *testing.T) {
	tm := mountForTest(t)
	f := tm.path("state", "private")
	mustSh(t, "umask 077; echo secret > "+f)
	if got := statf(t, "%a", f); got != "600" {
		t.Fatalf("created under umask 077: mode %s, want 600", got)
	}
	g := tm.path("state", "plain")
	mustSh(t, "umask 022; echo x > "+g)
	if got := statf(t, "%a", g); got != "644" {
		t.Fatalf("created under umask 022: mode %s, want 644", got)
	}
	// ctime follows any change, an older mtime set by touch included
	mustRun(t, "touch", "-d", "2001-01-01T00:00:00Z", g)
	var mtime, ctime int64
	fmt.Sscan(statf(t, "%Y %Z", g), &mtime, &ctime)
	if mtime != 978307200 || ctime < time.Now().Unix()-60 {
		t.Fatalf("after touch -d 2001: mtime %d, ctime %d: ctime must be the time of the change", mtime, ctime)
	}
	// a row deleted and made again starts afresh
	mustRun(t, "chmod", "600", g)
	mustRun(t, "rm", g)
	mustSh(t, "umask 022; echo y > "+g)
	if got := statf(t, "%a", g); got != "644" {
		t.Fatalf("recreated: mode %s, want 644", got)
	}
}

func TestDefaultModeOption(t *testing.T) {
	tm := mountForTest(t, func(o *MountOptions) { o.FileMode, o.DirMode = 0o640, 0o750 })
	mustSh(t, "echo x > "+tm.path("state", "a"))
	if _, err := tm.r.Write(stateKey("b"), []byte("y"), time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := statf(t, "%a", tm.path("state", "b")); got != "640" {
		t.Fatalf("a row that never had a mode: %s, want 640", got)
	}
	if got := statf(t, "%a", tm.path("state")); got != "750" {
		t.Fatalf("state/: %s, want 750", got)
	}
}

func TestRenameKeepsInode(t *testing.T) {
	tm := mountForTest(t)
	a, b := tm.path("state", "a"), tm.path("state", "b")
	mustSh(t, "echo a > "+a)
	mustRun(t, "touch", "-d", "2011-11-11T11:11:11Z", a)
	mustRun(t, "chmod", "600", a)
	ino := statf(t, "%i", a)
	mustRun(t, "mv", a, b)
	if got := statf(t, "%i %Y %a", b); got != ino+" 1321009871 600" {
		t.Fatalf("renamed: %q, want inode %s, its time and mode", got, ino)
	}
	// across categories
	mustRun(t, "mkdir", tm.path("entity", "c"))
	e := tm.path("entity", "e")
	mustSh(t, "echo e > "+e)
	eino := statf(t, "%i", e)
	mustRun(t, "mv", e, tm.path("entity", "c", "e"))
	if got := statf(t, "%i", tm.path("entity", "c", "e")); got != eino {
		t.Fatalf("moved to a category: inode %s, want %s", got, eino)
	}
	// an editor's atomic save: the temporary file replaces the row, with its number
	tmp := tm.path("state", ".b.tmp")
	mustSh(t, "echo new > "+tmp)
	tino := statf(t, "%i", tmp)
	mustRun(t, "mv", tmp, b)
	if got := statf(t, "%i", b); got != tino {
		t.Fatalf("saved over: inode %s, want the temporary file's %s", got, tino)
	}
	if got := readFile(t, b); got != "new\n" {
		t.Fatalf("content %q", got)
	}
	// the name left behind gets a new number
	mustSh(t, "echo again > "+a)
	if got := statf(t, "%i", a); got == ino || got == tino {
		t.Fatalf("a new file at the old name took inode %s", got)
	}
	remount(t, tm)
	if got := statf(t, "%i", b); got != tino {
		t.Fatalf("after remount: inode %s, want %s", got, tino)
	}
}

// tree500 makes a tree of 500 files with varied times and modes.
func tree500(t *testing.T) string {
	src := t.TempDir()
	base := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := 0; i < 500; i++ {
		p := filepath.Join(src, fmt.Sprintf("f%03d", i))
		if err := os.WriteFile(p, []byte(strings.Repeat(fmt.Sprint(i), i%7+1)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := base.Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			if err := os.Chmod(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return src
}

func TestRsyncTwiceTransfersNothing(t *testing.T) {
	requireTool(t, "rsync", "rsync")
	tm := mountForTest(t)
	src := tree500(t)
	dst := tm.path("state") + "/"
	first := mustRun(t, "rsync", "-a", "--itemize-changes", src+"/", dst)
	if n := strings.Count(first, ">f+++++++"); n != 500 {
		t.Fatalf("first run sent %d new files, want 500:\n%s", n, first)
	}
	second := mustRun(t, "rsync", "-a", "--itemize-changes", src+"/", dst)
	if second != "" {
		t.Fatalf("second run itemized changes, want none:\n%s", second)
	}
	stats := mustRun(t, "rsync", "-a", "--stats", src+"/", dst)
	if !strings.Contains(stats, "Number of regular files transferred: 0") {
		t.Fatalf("third run transferred files:\n%s", stats)
	}
	if got := statf(t, "%a %Y", tm.path("state", "f005")); got != fmt.Sprintf("600 %d", time.Date(2021, 3, 4, 10, 6, 7, 0, time.UTC).Unix()) {
		t.Fatalf("f005: %q", got)
	}
	remount(t, tm)
	if again := mustRun(t, "rsync", "-a", "--itemize-changes", src+"/", dst); again != "" {
		t.Fatalf("after remount rsync itemized changes, want none:\n%s", again)
	}
}

func TestCpAAndTarKeepMtime(t *testing.T) {
	tm := mountForTest(t)
	src := tree500(t)
	names := []string{"f000", "f001", "f123", "f499"}
	cpDst := tm.path("reference")
	for _, n := range names {
		mustRun(t, "cp", "-a", filepath.Join(src, n), cpDst)
	}
	tarDst := tm.path("state")
	mustSh(t, "tar -C "+src+" -cf - "+strings.Join(names, " ")+" | tar -C "+tarDst+" -xf -")
	for _, n := range names {
		want := statf(t, "%Y %a", filepath.Join(src, n))
		for _, dir := range []string{cpDst, tarDst} {
			if got := statf(t, "%Y %a", filepath.Join(dir, n)); got != want {
				t.Fatalf("%s/%s: mtime and mode %q, want %q", filepath.Base(dir), n, got, want)
			}
		}
	}
	// again over the same files: the vault's content is unchanged, the times hold
	mustSh(t, "tar -C "+src+" -cf - "+strings.Join(names, " ")+" | tar -C "+tarDst+" -xf -")
	for _, n := range names {
		mustRun(t, "cp", "-a", filepath.Join(src, n), cpDst)
	}
	for _, n := range names {
		want := statf(t, "%Y", filepath.Join(src, n))
		for _, dir := range []string{cpDst, tarDst} {
			if got := statf(t, "%Y", filepath.Join(dir, n)); got != want {
				t.Fatalf("second copy %s/%s: mtime %s, want %s", filepath.Base(dir), n, got, want)
			}
		}
	}
}

func TestTrashMoveRestoreEmpty(t *testing.T) {
	tm := mountForTest(t)
	if err := tm.r.SetVaultModel(vault.ModelFull); err != nil { // a status on a state row, which only the full model keeps
		t.Fatal(err)
	}
	f := tm.path("state", "g1")
	mustSh(t, "echo keep me > "+f)
	if err := tm.r.SetAttr(stateKey("g1"), "status", strp("open")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "chmod", "600", f)
	ino := statf(t, "%i", f)
	trash := tm.path(".Trash-0")
	mustRun(t, "mkdir", "-m", "700", trash)
	mustRun(t, "mkdir", trash+"/files", trash+"/info")
	mustRun(t, "mv", f, trash+"/files/g1")
	mustSh(t, "printf '[Trash Info]\\nPath=state/g1\\n' > "+trash+"/info/g1.trashinfo")
	if _, err := os.Stat(f); !os.IsNotExist(err) {
		t.Fatalf("state/g1 after the move to the trash: %v", err)
	}
	if _, err := tm.r.Get(stateKey("g1")); err == nil {
		t.Fatal("the row is still in the tree")
	}
	if got := readFile(t, trash+"/files/g1"); got != "keep me\n" {
		t.Fatalf("trashed content %q", got)
	}
	if got := statf(t, "%i %a", trash+"/files/g1"); got != ino+" 600" {
		t.Fatalf("trashed file: %q, want inode %s mode 600", got, ino)
	}
	if got := lsNames(t, tm.dir); strings.Join(got, " ") != "entity journal reference state" {
		t.Fatalf("root lists %q", got)
	}
	if out, _ := sh(t, "grep -r 'keep me' "+tm.path("state")); out != "" {
		t.Fatalf("grep -r of state/ finds the trashed file: %s", out)
	}
	// restore: a rename back
	mustRun(t, "mv", trash+"/files/g1", f)
	mustRun(t, "rm", trash+"/info/g1.trashinfo")
	if got := readFile(t, f); got != "keep me\n" {
		t.Fatalf("restored content %q", got)
	}
	v, err := tm.r.Get(stateKey("g1"))
	if err != nil || v.Row.Status == nil || *v.Row.Status != "open" {
		t.Fatalf("restored row: %+v, %v; want status open", v, err)
	}
	if got := statf(t, "%i %a", f); got != ino+" 600" {
		t.Fatalf("restored file: %q, want inode %s mode 600", got, ino)
	}
	// trash again and empty: the local copy is freed
	mustRun(t, "mv", f, trash+"/files/g1")
	mustSh(t, "rm -rf "+trash+"/files/* "+trash+"/info/*")
	if got := lsNames(t, trash+"/files"); len(got) != 0 {
		t.Fatalf("emptied trash lists %q", got)
	}
	if _, err := tm.r.Get(stateKey("g1")); err == nil {
		t.Fatal("the row came back")
	}
	mustRun(t, "rm", "-r", trash)
}

func TestGioTrash(t *testing.T) {
	requireTool(t, "gio", "libglib2.0-bin")
	tm := mountForTest(t)
	f := tm.path("state", "g1")
	mustSh(t, "echo via gio > "+f)
	mustRun(t, "gio", "trash", f)
	uid := os.Getuid()
	trashed := tm.path(fmt.Sprintf(".Trash-%d", uid), "files", "g1")
	if got := readFile(t, trashed); got != "via gio\n" {
		t.Fatalf("trashed content %q", got)
	}
	info := readFile(t, tm.path(fmt.Sprintf(".Trash-%d", uid), "info", "g1.trashinfo"))
	if !strings.Contains(info, "Path=") || !strings.Contains(info, "g1") {
		t.Fatalf("trashinfo %q", info)
	}
	if _, err := os.Stat(f); !os.IsNotExist(err) {
		t.Fatalf("state/g1 after gio trash: %v", err)
	}
}

// TestUmaskClearsDefaultsAndCreates: the mount's umask clears bits of the default mode and of
// the mode a create asks for; a mode set by chmod shows as set.
func TestUmaskClearsDefaultsAndCreates(t *testing.T) {
	tm := mountForTest(t, func(o *MountOptions) { o.Umask = 0o077 })
	if _, err := tm.r.Write(stateKey("b"), []byte("y"), time.Now()); err != nil {
		t.Fatal(err)
	}
	f := tm.path("state", "f")
	mustSh(t, "umask 022; echo x > "+f)
	if got := statf(t, "%a %a %a", tm.path("state", "b")) + " " + statf(t, "%a", f) + " " + statf(t, "%a", tm.path("state")); got != "600 600 600 600 700" {
		t.Fatalf("default, created and directory modes under umask 077: %s", got)
	}
	mustRun(t, "chmod", "644", f)
	mustRun(t, "chmod", "755", tm.path("state"))
	if got := statf(t, "%a", f) + " " + statf(t, "%a", tm.path("state")); got != "644 755" {
		t.Fatalf("after chmod: %s, want 644 755", got)
	}
}

package fs

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kintfs/replica"
	"kintfs/replica/vault"
)

// copyFile is one file of the copy tests: where it lives under a tree, its content, the
// attributes it carries, its mode and modification time.
type copyFile struct {
	rel, body    string
	status, meta string // "" when not set
	mode         os.FileMode
	mtime        time.Time
}

// copySet: an entity with a status, a reference with meta, a state row with neither, each
// with a mode and a time of its own.
func copySet(suffix string) []copyFile {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	return []copyFile{
		{rel: "entity/person" + suffix + "/alice", body: `{"name":"alice"}`, status: "active", mode: 0o640, mtime: at},
		{rel: "reference/guide" + suffix, body: "read me\n", meta: `{"source":"copy"}`, mode: 0o600, mtime: at.Add(time.Hour)},
		{rel: "state/plan" + suffix, body: "ship it\n", mode: 0o644, mtime: at.Add(2 * time.Hour)},
	}
}

// writeCopySet writes files under root with their attributes, modes and times.
func writeCopySet(t *testing.T, root string, files []copyFile) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(root, f.rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]string{"user.kint.status": f.status, "user.kint.meta": f.meta} {
			if v != "" {
				if err := unix.Setxattr(p, name, []byte(v), 0); err != nil {
					t.Fatalf("setxattr %s %s: %v", name, p, err)
				}
			}
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, f.mtime, f.mtime); err != nil {
			t.Fatal(err)
		}
	}
}

// listXattrs is what listxattr names on p, sorted.
func listXattrs(t *testing.T, p string) []string {
	t.Helper()
	buf := make([]byte, 4096)
	n, err := unix.Listxattr(p, buf)
	if err != nil {
		t.Fatalf("listxattr %s: %v", p, err)
	}
	var names []string
	for _, s := range strings.Split(string(buf[:n]), "\x00") {
		if s != "" {
			names = append(names, s)
		}
	}
	sort.Strings(names)
	return names
}

// checkCopySet checks content, attributes (exactly status and meta where set), mode and
// mtime of files under root.
func checkCopySet(t *testing.T, what, root string, files []copyFile) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(root, f.rel)
		if got := readFile(t, p); got != f.body {
			t.Errorf("%s: %s holds %q, want %q", what, f.rel, got, f.body)
		}
		var want []string
		if f.meta != "" {
			want = append(want, "user.kint.meta")
		}
		if f.status != "" {
			want = append(want, "user.kint.status")
		}
		if got := listXattrs(t, p); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: %s lists attributes %q, want %q", what, f.rel, got, want)
		}
		for name, v := range map[string]string{"user.kint.status": f.status, "user.kint.meta": f.meta} {
			if v == "" {
				continue
			}
			if got, err := getxattr(t, p, name); err != nil || got != v {
				t.Errorf("%s: %s %s = %q %v, want %q", what, f.rel, name, got, err, v)
			}
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != f.mode {
			t.Errorf("%s: %s mode %v, want %v", what, f.rel, st.Mode().Perm(), f.mode)
		}
		if !st.ModTime().Equal(f.mtime) {
			t.Errorf("%s: %s mtime %v, want %v", what, f.rel, st.ModTime().UTC(), f.mtime)
		}
	}
}

// checkRows checks that the replica holds the files' rows with their status and meta.
func checkRows(t *testing.T, what string, r *replica.Replica, files []copyFile) {
	t.Helper()
	for _, f := range files {
		parts := strings.Split(f.rel, "/")
		k := vault.Key{Tier: parts[0], Key: parts[len(parts)-1]}
		if len(parts) == 3 {
			k.Category, k.HasCategory = parts[1], true
		}
		v, err := r.Get(k)
		if err != nil {
			t.Errorf("%s: row %s: %v", what, f.rel, err)
			continue
		}
		if got := deref(v.Row.Status); got != f.status {
			t.Errorf("%s: row %s status %q, want %q", what, f.rel, got, f.status)
		}
		if got := deref(v.Row.Meta); got != f.meta {
			t.Errorf("%s: row %s meta %q, want %q", what, f.rel, got, f.meta)
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// quiet runs a copy tool, which must exit 0 and print nothing (no warning).
func quiet(t *testing.T, name string, args ...string) {
	t.Helper()
	if out := mustRun(t, name, args...); out != "" {
		t.Errorf("%s %s printed:\n%s", name, strings.Join(args, " "), out)
	}
}

// TestCopyToolsInAndOut copies rows out of a mount, back onto themselves and into a fresh
// mount with the copy tools people use, which must succeed without a warning and keep
// content, status, meta, modes and times; the attributes kintfs computes stay out of copies.
func TestCopyToolsInAndOut(t *testing.T) {
	requireTools(t, "rsync", "tar", "cp", "getfattr")
	tools := []struct {
		name string
		copy func(t *testing.T, from, to string)
	}{
		{"rsync -aX", func(t *testing.T, from, to string) { quiet(t, "rsync", "-aX", from+"/", to+"/") }},
		{"rsync -aHAX", func(t *testing.T, from, to string) { quiet(t, "rsync", "-aHAX", from+"/", to+"/") }},
		{"cp -a", func(t *testing.T, from, to string) { quiet(t, "cp", "-a", from+"/.", to) }},
		{"cp --preserve=all", func(t *testing.T, from, to string) {
			quiet(t, "cp", "-R", "--preserve=all", from+"/.", to)
		}},
		{"tar --xattrs", func(t *testing.T, from, to string) {
			ar := filepath.Join(t.TempDir(), "x.tar")
			quiet(t, "tar", "--xattrs", "-C", from, "-cf", ar, "entity", "reference", "state")
			quiet(t, "tar", "--xattrs", "-xpf", ar, "-C", to)
		}},
	}
	for _, tool := range tools {
		t.Run(strings.ReplaceAll(tool.name, " ", "_"), func(t *testing.T) {
			src := mountForTest(t)
			files := copySet("")
			writeCopySet(t, src.dir, files)
			checkCopySet(t, "written in the mount", src.dir, files)

			out := t.TempDir()
			tool.copy(t, src.dir, out)
			checkCopySet(t, tool.name+" out of the mount", out, files)

			// back onto the same rows, and into a fresh mount
			tool.copy(t, out, src.dir)
			checkCopySet(t, tool.name+" back onto the same rows", src.dir, files)
			dst := mountForTest(t)
			tool.copy(t, out, dst.dir)
			checkCopySet(t, tool.name+" into a fresh mount", dst.dir, files)
			checkRows(t, tool.name+" into a fresh mount", dst.r, files)
		})
	}
}

// TestCopyOfOlderCopies: files copied out before the computed attributes were unlisted carry
// user.kint.key, leaf and anchored. Copying them back onto their rows succeeds: a computed
// attribute set to the value it has is accepted.
func TestCopyOfOlderCopies(t *testing.T) {
	requireTools(t, "rsync", "cp")
	tm := mountForTest(t)
	files := copySet("")
	writeCopySet(t, tm.dir, files)
	out := t.TempDir()
	quiet(t, "cp", "-a", tm.dir+"/.", out)
	for _, f := range files {
		for _, name := range []string{"user.kint.key", "user.kint.leaf"} {
			v, err := getxattr(t, filepath.Join(tm.dir, f.rel), name)
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Setxattr(filepath.Join(out, f.rel), name, []byte(v), 0); err != nil {
				t.Fatalf("the local file system takes no user attributes: %v", err)
			}
		}
	}
	quiet(t, "cp", "-a", out+"/.", tm.dir)
	checkRows(t, "cp -a of older copies", tm.r, files)
	// A wrong value is still refused, and a deliberate setfattr still works.
	failsWith(t, "setfattr -n user.kint.key -v other "+tm.path("state", "plan"), "Operation not permitted")
	failsWith(t, "setfattr -n user.kint.meta -v 'not json' "+tm.path("reference", "guide"), "Invalid argument")
	tm.expectLog("warn: setxattr: EINVAL")
	mustRun(t, "setfattr", "-n", "user.kint.status", "-v", "done", tm.path("entity", "person", "alice"))
	if got, err := getxattr(t, tm.path("entity", "person", "alice"), "user.kint.status"); err != nil || got != "done" {
		t.Fatalf("status after setfattr: %q %v", got, err)
	}
}

// TestMvAcrossTiersAndFileSystems: mv across tiers (EXDEV, then a copy) and in and out of the
// mount prints nothing and keeps the row's attributes.
func TestMvAcrossTiersAndFileSystems(t *testing.T) {
	tm := mountForTest(t)
	files := copySet("")
	writeCopySet(t, tm.dir, files)
	quiet(t, "mv", tm.path("state", "plan"), tm.path("reference", "plan"))
	moved := []copyFile{files[2]}
	moved[0].rel = "reference/plan"
	checkCopySet(t, "mv state to reference", tm.dir, moved)

	out := t.TempDir()
	quiet(t, "mv", tm.path("entity", "person", "alice"), filepath.Join(out, "alice"))
	back := []copyFile{files[0]}
	back[0].rel = "alice"
	checkCopySet(t, "mv out of the mount", out, back)
	quiet(t, "mv", filepath.Join(out, "alice"), tm.path("entity", "person", "alice"))
	checkCopySet(t, "mv into the mount", tm.dir, files[:1])
	checkRows(t, "mv into the mount", tm.r, files[:2])
}

// requireTools fails the test when a tool it drives is missing (CI installs them).
func requireTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Fatalf("%s is not installed: apt-get install rsync attr tar coreutils", n)
		}
	}
}

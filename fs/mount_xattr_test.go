package fs

import (
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"kintfs/replica/vault"
)

func getxattr(t *testing.T, p, name string) (string, error) {
	t.Helper()
	n, err := unix.Getxattr(p, name, nil)
	if err != nil {
		return "", err
	}
	buf := make([]byte, n)
	n, err = unix.Getxattr(p, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func TestXattrs(t *testing.T) {
	tm := mountForTest(t)
	if err := tm.r.SetVaultModel(vault.ModelFull); err != nil { // status and meta on one state row; kint's model is TestXattrShapes'
		t.Fatal(err)
	}
	tm.expectLog("warn: setxattr: EINVAL: an invalid value")
	p := tm.path("state", "goal")
	mustSh(t, "echo ship > "+p)

	mustRun(t, "setfattr", "-n", "user.kint.status", "-v", "active", p)
	if got, err := getxattr(t, p, "user.kint.status"); err != nil || got != "active" {
		t.Fatalf("status %q %v", got, err)
	}
	v, err := tm.r.Get(stateKey("goal"))
	if err != nil || v.Row.Status == nil || *v.Row.Status != "active" {
		t.Fatalf("backend status: %+v %v", v, err)
	}
	mustRun(t, "setfattr", "-n", "user.kint.meta", "-v", `{"source":"test"}`, p)
	// getfattr -d lists status and meta; the computed attributes are read by name.
	out := mustRun(t, "getfattr", "-d", "-m", "-", p)
	for _, want := range []string{`user.kint.status="active"`, `user.kint.meta="{\"source\":\"test\"}"`} {
		if !strings.Contains(out, want) {
			t.Errorf("getfattr -d lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "user.kint.key") || strings.Contains(out, "user.kint.leaf") || strings.Contains(out, "user.kint.anchored") {
		t.Errorf("getfattr -d lists a computed attribute:\n%s", out)
	}
	for name, want := range map[string]string{"user.kint.key": "goal", "user.kint.anchored": "unanchored"} {
		if got, err := getxattr(t, p, name); err != nil || got != want {
			t.Errorf("%s by name: %q %v", name, got, err)
		}
	}
	leaf, err := getxattr(t, p, "user.kint.leaf")
	if err != nil || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(leaf) {
		t.Fatalf("leaf %q %v", leaf, err)
	}
	// Meta must be JSON: refused at once.
	failsWith(t, "setfattr -n user.kint.meta -v 'not json' "+p, "Invalid argument")
	// "null" and removexattr make it null.
	mustRun(t, "setfattr", "-n", "user.kint.meta", "-v", "null", p)
	_, err = getxattr(t, p, "user.kint.meta")
	wantErrno(t, "meta after null", err, syscall.ENODATA)
	mustRun(t, "setfattr", "-x", "user.kint.status", p)
	_, err = getxattr(t, p, "user.kint.status")
	wantErrno(t, "status after removexattr", err, syscall.ENODATA)
	wantErrno(t, "remove a missing attribute", unix.Removexattr(p, "user.kint.status"), syscall.ENODATA)

	// The size probe and ERANGE.
	n, err := unix.Getxattr(p, "user.kint.key", nil)
	if err != nil || n != len("goal") {
		t.Fatalf("probe: %d %v", n, err)
	}
	_, err = unix.Getxattr(p, "user.kint.key", make([]byte, 2))
	wantErrno(t, "small buffer", err, syscall.ERANGE)
	_, err = unix.Getxattr(p, "user.other", make([]byte, 64))
	wantErrno(t, "missing name", err, syscall.ENODATA)

	// Listxattr, probe included: nothing set, nothing listed; then the status alone.
	if n, err := unix.Listxattr(p, nil); err != nil || n != 0 {
		t.Fatalf("listxattr with no status or meta: %d %v", n, err)
	}
	mustRun(t, "setfattr", "-n", "user.kint.status", "-v", "active", p)
	n, err = unix.Listxattr(p, nil)
	if err != nil || n == 0 {
		t.Fatalf("listxattr probe: %d %v", n, err)
	}
	buf := make([]byte, n)
	n, err = unix.Listxattr(p, buf)
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
	sort.Strings(names)
	if strings.Join(names, " ") != "user.kint.status" {
		t.Fatalf("listxattr: %q", names)
	}
	_, err = unix.Listxattr(p, make([]byte, 3))
	wantErrno(t, "small list buffer", err, syscall.ERANGE)
	mustRun(t, "setfattr", "-x", "user.kint.status", p)

	// XATTR_CREATE and XATTR_REPLACE.
	wantErrno(t, "replace a missing status", unix.Setxattr(p, "user.kint.status", []byte("x"), xattrReplace), syscall.ENODATA)
	if err := unix.Setxattr(p, "user.kint.status", []byte("x"), xattrCreate); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "create an existing status", unix.Setxattr(p, "user.kint.status", []byte("y"), xattrCreate), syscall.EEXIST)
	// Read-only and unknown names.
	wantErrno(t, "set leaf", unix.Setxattr(p, "user.kint.leaf", []byte("00"), 0), syscall.EPERM)
	// A computed attribute set to the value it has changes nothing; removing one finds none.
	for _, name := range []string{"user.kint.key", "user.kint.leaf", "user.kint.anchored"} {
		cur, err := getxattr(t, p, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Setxattr(p, name, []byte(cur), 0); err != nil {
			t.Errorf("set %s to its own value: %v", name, err)
		}
		wantErrno(t, "remove "+name, unix.Removexattr(p, name), syscall.ENODATA)
	}
	wantErrno(t, "set key to another", unix.Setxattr(p, "user.kint.key", []byte("other"), 0), syscall.EPERM)
	wantErrno(t, "set unknown", unix.Setxattr(p, "user.whatever", []byte("1"), 0), syscall.ENOTSUP)

	// A category's true name.
	mustRun(t, "mkdir", tm.path("entity", "a%2Fb"))
	cat := tm.path("entity", "a%2Fb")
	if got, err := getxattr(t, cat, "user.kint.key"); err != nil || got != "a/b" {
		t.Fatalf("category key %q %v", got, err)
	}
	if n, err := unix.Listxattr(cat, nil); err != nil || n != 0 {
		t.Errorf("a category lists attributes: %d %v", n, err)
	}
	if err := unix.Setxattr(cat, "user.kint.key", []byte("a/b"), 0); err != nil {
		t.Errorf("set a category's key to its name: %v", err)
	}
	wantErrno(t, "set a category's key to another", unix.Setxattr(cat, "user.kint.key", []byte("c"), 0), syscall.EPERM)
	wantErrno(t, "remove a category's key", unix.Removexattr(cat, "user.kint.key"), syscall.ENODATA)
	// History is read-only, xattrs included.
	wantErrno(t, "set in history", unix.Setxattr(tm.path("@1", "state"), "user.kint.status", []byte("x"), 0), syscall.EROFS)
}

func TestXattrsOff(t *testing.T) {
	tm := mountForTest(t, func(o *MountOptions) { o.Xattrs = false })
	p := tm.path("state", "x")
	mustSh(t, "echo x > "+p)
	// The server answers ENOSYS; the kernel remembers it and answers EOPNOTSUPP itself.
	for i := 0; i < 2; i++ {
		_, err := unix.Getxattr(p, "user.kint.key", make([]byte, 64))
		wantErrno(t, "getxattr with xattrs off", err, syscall.EOPNOTSUPP)
	}
	if got := mustRun(t, "ls", "-l", p); !strings.Contains(got, "x") {
		t.Fatalf("ls -l: %q", got)
	}
}

func TestAttrsSurviveEditorSaves(t *testing.T) {
	tm := mountForTest(t)
	if err := tm.r.SetVaultModel(vault.ModelFull); err != nil { // status and meta on one row
		t.Fatal(err)
	}
	p := tm.path("state", "plan")
	mustSh(t, "printf 'alpha beta\n' > "+p)
	mustRun(t, "setfattr", "-n", "user.kint.status", "-v", "draft", p)
	mustRun(t, "setfattr", "-n", "user.kint.meta", "-v", `{"v":1}`, p)

	mustRun(t, "sed", "-i", "s/alpha/gamma/", p)
	if got := mustRun(t, "cat", p); got != "gamma beta\n" {
		t.Fatalf("after sed -i: %q", got)
	}
	// A write-to-temp-then-rename save, with a temp name that is a row, then a dotfile.
	mustSh(t, "printf 'delta\n' > "+p+".new && mv "+p+".new "+p)
	mustSh(t, "printf 'epsilon\n' > "+tm.path("state", ".plan.tmp")+" && mv "+tm.path("state", ".plan.tmp")+" "+p)
	if got := mustRun(t, "cat", p); got != "epsilon\n" {
		t.Fatalf("after temp saves: %q", got)
	}
	v, err := tm.r.Get(stateKey("plan"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Row.Status == nil || *v.Row.Status != "draft" || v.Row.Meta == nil || *v.Row.Meta != `{"v":1}` {
		t.Fatalf("attributes after saves: status %v meta %v", v.Row.Status, v.Row.Meta)
	}
	for _, left := range []string{"plan.new", ".plan.tmp"} {
		if _, err := tm.r.Get(vault.Key{Tier: "state", Key: left, Local: strings.HasPrefix(left, ".")}); err == nil {
			t.Errorf("temporary %s left behind", left)
		}
	}
	if got := lsNames(t, tm.path("state")); strings.Join(got, " ") != "plan" {
		t.Fatalf("state lists %q", got)
	}
}

// TestAttrsSurviveBackupRename saves the way Emacs does by default: the file becomes its
// backup, and a fresh file is written under the name.
func TestAttrsSurviveBackupRename(t *testing.T) {
	tm := mountForTest(t)
	p := tm.path("entity", "plan")
	mustSh(t, "printf 'v1\n' > "+p)
	mustRun(t, "setfattr", "-n", "user.kint.status", "-v", "draft", p)
	mustSh(t, "mv "+p+" "+p+"~ && printf 'v2\n' > "+p+" && rm "+p+"~")
	if got, err := getxattr(t, p, "user.kint.status"); err != nil || got != "draft" {
		t.Fatalf("status after a backup-rename save: %q %v", got, err)
	}
	if got := mustRun(t, "cat", p); got != "v2\n" {
		t.Fatalf("content %q", got)
	}
}

package fs

import (
	"encoding/json"
	"errors"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"kintfs/replica"
	"kintfs/replica/replicatest"
	"kintfs/replica/vault"
)

// testMount is a live mount over a fresh test replica.
type testMount struct {
	dir string
	m   *Mounted
	r   *replica.Replica
	log *testLog
}

// expectLog lets a test's mount log lines containing s; any other line is a failure, since
// the mount logs only real faults and lost writes.
func (tm *testMount) expectLog(s string) {
	tm.log.mu.Lock()
	tm.log.allowed = append(tm.log.allowed, s)
	tm.log.mu.Unlock()
}

// path joins elements under the mountpoint.
func (tm *testMount) path(elem ...string) string {
	return filepath.Join(append([]string{tm.dir}, elem...)...)
}

// requireFuse stops a test that cannot mount: loudly skipped on a developer machine without
// FUSE, a failure in CI, which has it.
func requireFuse(t testing.TB) {
	t.Helper()
	var missing []string
	if _, err := os.Stat("/dev/fuse"); err != nil {
		missing = append(missing, "/dev/fuse")
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		if _, err := exec.LookPath("fusermount"); err != nil {
			missing = append(missing, "fusermount3")
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "MOUNT TEST NOT RUN: " + strings.Join(missing, " and ") + " missing; install fuse3 and load the fuse module to run it"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// mountForTest mounts replicatest.New(t) on a temporary directory and unmounts it when
// the test ends. opts, when given, adjust the mount options.
func mountForTest(t testing.TB, opts ...func(*MountOptions)) *testMount {
	t.Helper()
	requireFuse(t)
	r := replicatest.New(t)
	dir := t.TempDir()
	// Many tests write entity bodies that are not JSON: the close says such a row is held
	// (TestHeldWriteSaidAtClose checks the line).
	tl := &testLog{t: t, allowed: []string{"warn: held: "}}
	o := MountOptions{Xattrs: true, Logger: log.New(tl, "kintfs: ", 0)}
	for _, fn := range opts {
		fn(&o)
	}
	m, err := Mount(dir, r, o)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	tm := &testMount{dir: dir, m: m, r: r, log: tl}
	// Registered after the replica's own cleanup, so it runs first: unmount, then close.
	t.Cleanup(func() {
		var err error
		for i := 0; i < 50 && tm.m != nil; i++ {
			if err = tm.m.Unmount(); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("unmount: %v", err)
		}
		tl.close()
		tl.check()
	})
	return tm
}

// testLog collects the mount's log lines and passes them to the test while it runs.
type testLog struct {
	t       testing.TB
	mu      sync.Mutex
	lines   []string
	allowed []string
	closed  bool
}

// check fails the test for every line it did not expect.
func (l *testLog) check() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if !strings.HasPrefix(line, "kintfs: ") {
			continue // go-fuse's own debug output
		}
		ok := false
		for _, a := range l.allowed {
			ok = ok || strings.Contains(line, a)
		}
		if !ok {
			l.t.Errorf("unexpected mount log: %s", strings.TrimSpace(line))
		}
	}
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	if !l.closed {
		l.t.Logf("mount log: %s", strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func (l *testLog) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

func (l *testLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "")
}

// run runs a tool and returns its combined output. The working directory is never inside the
// mount (a chdir there from the forked child could deadlock the test's own server).
func run(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := run(t, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// sh runs a shell command line, in bash when there is one: dash reports every failed write
// as "I/O error", whatever the errno.
func sh(t *testing.T, script string) (string, error) {
	t.Helper()
	return run(t, shell(), "-c", script)
}

func mustSh(t *testing.T, script string) string {
	t.Helper()
	return mustRun(t, shell(), "-c", script)
}

func shell() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "sh"
}

// failsWith runs a shell command line that must fail with a message containing want.
func failsWith(t *testing.T, script, want string) {
	t.Helper()
	out, err := sh(t, script)
	if err == nil {
		t.Fatalf("%q succeeded, want %q\n%s", script, want, out)
	}
	if !strings.Contains(out, want) {
		t.Fatalf("%q failed with %q, want %q", script, strings.TrimSpace(out), want)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

// lsNames lists a directory with ls -A, one name a line.
func lsNames(t *testing.T, dir string) []string {
	t.Helper()
	out := strings.TrimSuffix(mustRun(t, "ls", "-A1", dir), "\n")
	if out == "" {
		return nil
	}
	names := strings.Split(out, "\n")
	sort.Strings(names)
	return names
}

func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

func strp(s string) *string { return &s }

// backendContent is what the replica holds for k.
func backendContent(t *testing.T, r *replica.Replica, k vault.Key) string {
	t.Helper()
	b, err := r.Content(k)
	if err != nil {
		t.Fatalf("backend content %+v: %v", k, err)
	}
	return string(b)
}

func TestMountRootAndControlFiles(t *testing.T) {
	tm := mountForTest(t)
	tm.expectLog("warn: ctl flush: no route to host: cannot reach the RPC")
	if got := lsNames(t, tm.dir); strings.Join(got, " ") != "entity journal reference state" {
		t.Fatalf("root lists %q", got)
	}
	if out := mustRun(t, "ls", "-a", tm.dir); strings.Contains(out, ".kint") || strings.Contains(out, "@") {
		t.Fatalf("ls -a shows hidden entries: %q", out)
	}
	// Never listed, but there.
	st, err := os.Stat(tm.path(".kint"))
	if err != nil || st.Mode().Perm() != 0700 || !st.IsDir() {
		t.Fatalf(".kint: %v %v", st, err)
	}
	for _, name := range []string{"ctl", "status", "blocks"} {
		st, err := os.Stat(tm.path(".kint", name))
		if err != nil || st.Mode().Perm() != 0600 {
			t.Fatalf(".kint/%s: %v %v", name, st, err)
		}
	}
	if got := mustRun(t, "cat", tm.path(".kint", "ctl")); !strings.Contains(got, "flush\n") || !strings.Contains(got, "pull full\n") {
		t.Fatalf("ctl reads %q", got)
	}
	if status := mustRun(t, "cat", tm.path(".kint", "status")); !json.Valid([]byte(status)) {
		t.Fatalf("status is not JSON: %q", status)
	}
	mustRun(t, "cat", tm.path(".kint", "blocks"))
	failsWith(t, "echo bogus > "+tm.path(".kint", "ctl"), "Invalid argument")
	failsWith(t, "echo x > "+tm.path(".kint", "status"), "Permission denied")
	// Without a chain a flush cannot run, and the write says so.
	failsWith(t, "echo flush > "+tm.path(".kint", "ctl"), "No route to host")
	// The type the spec names.
	mounts := readFile(t, "/proc/self/mounts")
	if !strings.Contains(mounts, " "+tm.dir+" fuse.kintfs ") {
		t.Fatalf("%s is not a fuse.kintfs mount:\n%s", tm.dir, mounts)
	}
	root, _ := os.Stat(tm.dir)
	if n := root.Sys().(*syscall.Stat_t).Nlink; n != 6 {
		t.Fatalf("root nlink %d, want 6", n)
	}
}

func TestMountpointMustBeEmpty(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0644); err != nil {
		t.Fatal(err)
	}
	// Refused before anything is mounted, so no FUSE is needed here.
	_, err := Mount(dir, nil, MountOptions{})
	if err == nil {
		t.Fatal("mounted without a backend")
	}
	r := replicatest.New(t)
	_, err = Mount(dir, r, MountOptions{})
	if err == nil || !strings.Contains(err.Error(), "--allow-non-empty") {
		t.Fatalf("non-empty mountpoint: %v", err)
	}
}

func TestMountAllowNonEmpty(t *testing.T) {
	requireFuse(t)
	r := replicatest.New(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0644); err != nil {
		t.Fatal(err)
	}
	m, err := Mount(dir, r, MountOptions{AllowNonEmpty: true})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	defer func() {
		if err := m.Unmount(); err != nil {
			t.Error(err)
		}
	}()
	if got := lsNames(t, dir); strings.Join(got, " ") != "entity journal reference state" {
		t.Fatalf("root lists %q", got)
	}
}

func TestReadOnlyMount(t *testing.T) {
	tm := mountForTest(t, func(o *MountOptions) { o.ReadOnly = true })
	failsWith(t, "echo x > "+tm.path("state", "x"), "Read-only file system")
	failsWith(t, "mkdir "+tm.path("entity", "c"), "Read-only file system")
	// the kernel mounts it ro: ctl cannot be opened for writing either (kintfs pull, which
	// the mount answers over its socket, still pulls), and nothing changed below the kernel
	failsWith(t, "echo bogus > "+tm.path(".kint", "ctl"), "Read-only file system")
	if opts := mountOpts(t, tm.dir); !strings.HasPrefix(opts, "ro,") {
		t.Fatalf("/proc/mounts: %q, want ro", opts)
	}
}

func TestHistoryReadOnly(t *testing.T) {
	tm := mountForTest(t)
	mustSh(t, "echo hi > "+tm.path("state", "x"))
	h := tm.path("@123")
	if got := lsNames(t, h); strings.Join(got, " ") != "entity journal reference state" {
		t.Fatalf("@123 lists %q", got)
	}
	if got := lsNames(t, filepath.Join(h, "state")); len(got) != 0 {
		t.Fatalf("nothing is anchored, yet @123/state lists %q", got)
	}
	_, err := os.Stat(filepath.Join(h, "state", "x"))
	wantErrno(t, "stat unanchored row in history", err, syscall.ENOENT)
	err = os.WriteFile(filepath.Join(h, "state", "y"), []byte("x"), 0644)
	wantErrno(t, "create in history", err, syscall.EROFS)
	wantErrno(t, "mkdir in history", os.Mkdir(filepath.Join(h, "entity", "c"), 0755), syscall.EROFS)
	wantErrno(t, "rename into history", os.Rename(tm.path("state", "x"), filepath.Join(h, "state", "x")), syscall.EXDEV)
	for _, bad := range []string{"@", "@x", "@-1", "@+5", "@99999999999999999999999"} {
		_, err := os.Stat(tm.path(bad))
		wantErrno(t, "stat "+bad, err, syscall.ENOENT)
	}
	if _, err := os.Stat(tm.path("@0", "entity")); err != nil {
		t.Fatalf("@0/entity: %v", err)
	}
}

func TestUnknownAndBadNames(t *testing.T) {
	tm := mountForTest(t)
	_, err := os.Stat(tm.path("state", "nope"))
	wantErrno(t, "stat missing", err, syscall.ENOENT)
	_, err = os.Stat(tm.path("nope"))
	wantErrno(t, "stat missing tier", err, syscall.ENOENT)
	_, err = os.Stat(tm.path("state", "100%done"))
	wantErrno(t, "stat a name no key escapes to", err, syscall.EINVAL)
	err = os.WriteFile(tm.path("state", "a%2Eb"), nil, 0644)
	wantErrno(t, "create a name no key escapes to", err, syscall.EINVAL)
	failsWith(t, "cat "+tm.path("state", "nope"), "No such file or directory")
	wantErrno(t, "mkdir in root", os.Mkdir(tm.path("extra"), 0755), syscall.EPERM)
	wantErrno(t, "rmdir a tier", syscall.Rmdir(tm.path("state")), syscall.EPERM)
	if strings.Contains(tm.log.String(), "kintfs:") {
		t.Fatalf("expected errors were logged as faults:\n%s", tm.log.String())
	}
}

// mountOpts is the option field /proc/mounts has for dir.
func mountOpts(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[1] == dir {
			return f[3]
		}
	}
	t.Fatalf("%s is not mounted", dir)
	return ""
}

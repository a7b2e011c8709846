package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kintfs/seal"
)

// doctorLine finds the line of one check in doctor's output.
func doctorLine(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 7 && strings.HasPrefix(l[7:], name+":") {
			return l
		}
	}
	return ""
}

// expectDoctor runs doctor and checks the exit code and the tag of one check.
func (m *machine) expectDoctor(code int, name, tag, detail string, args ...string) string {
	m.t.Helper()
	out, errs, got := m.run("", append([]string{"doctor"}, args...)...)
	line := doctorLine(out, name)
	if got != code || !strings.HasPrefix(line, "["+tag+"]") || !strings.Contains(line, detail) {
		m.t.Fatalf("doctor %v: exit %d (want %d), check %q: %q (want [%s] with %q)\n%s%s", args, got, code, name, line, tag, detail, out, errs)
	}
	return out
}

// TestDoctor: every check is ok on a connected machine (mounted or not), and each fails,
// with exit 1, when its input is broken.
func TestDoctor(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "doctor")
	a.connect("pass doctor")
	out := a.expectDoctor(0, "KINT_HOME", "ok  ", "mode 0700")
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "[ok  ] ") {
			t.Fatalf("a connected machine: %q is not ok\n%s", l, out)
		}
	}
	for _, name := range []string{"vault", "data key", "recovery file", "primary RPC", "secondary RPC", "contract",
		"session key", "session key balance", "session key authorization", "head", "staged", "held", "FUSE device", "fusermount3", "mount point"} {
		if doctorLine(out, name) == "" {
			t.Fatalf("doctor has no %q line:\n%s", name, out)
		}
	}
	if !strings.Contains(doctorLine(out, "primary RPC"), "chain id 1337") {
		t.Fatalf("primary RPC line: %s", out)
	}

	// KINT_HOME readable by others
	if err := os.Chmod(a.home, 0o755); err != nil {
		t.Fatal(err)
	}
	a.expectDoctor(1, "KINT_HOME", "FAIL", "mode 0755")
	os.Chmod(a.home, 0o700)

	// the recovery file deleted
	rec, _ := filepath.Glob(filepath.Join(a.home, "RECOVERY-*.txt"))
	if len(rec) != 1 {
		t.Fatalf("recovery files: %v", rec)
	}
	code, err := os.ReadFile(rec[0])
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(rec[0])
	a.expectDoctor(1, "recovery file", "FAIL", "kintfs recovery-code")
	os.WriteFile(rec[0], code, 0o600)

	// the cached data key gone
	dek, _ := filepath.Glob(filepath.Join(a.home, "keys", "*.dek"))
	if len(dek) != 1 {
		t.Fatalf("cached keys: %v", dek)
	}
	os.Rename(dek[0], dek[0]+".aside")
	a.expectDoctor(1, "data key", "FAIL", "no data key cached")
	os.Rename(dek[0]+".aside", dek[0])

	// a dead secondary RPC, then a dead primary whose URL carries a secret path
	a.extra = []string{"KINT_RPC_URL_2=http://127.0.0.1:1/v2/SECRETKEY"}
	out = a.expectDoctor(1, "secondary RPC", "FAIL", "http://127.0.0.1:1/<redacted> cannot be reached")
	a.extra = []string{"KINT_RPC_URL_2=http://127.0.0.1:1/v2/SECRETKEY", "KINT_ALLOW_SINGLE_RPC=1"}
	a.expectDoctor(0, "secondary RPC", "WARN", "cannot be reached")
	a.extra = []string{"KINT_RPC_URL=http://127.0.0.1:1/v2/SECRETKEY"}
	out2 := a.expectDoctor(1, "primary RPC", "FAIL", "http://127.0.0.1:1/<redacted> cannot be reached")
	if strings.Contains(out+out2, "SECRETKEY") {
		t.Fatalf("doctor printed an RPC URL's path:\n%s%s", out, out2)
	}
	// no code at the contract address
	a.extra = []string{"KINT_CONTRACT=0x000000000000000000000000000000000000dEaD"}
	a.expectDoctor(1, "contract", "FAIL", "no code at 0x000000000000000000000000000000000000dEaD")
	// no fusermount3 on PATH
	a.extra = []string{"PATH=" + t.TempDir()}
	a.expectDoctor(1, "fusermount3", "FAIL", "not on PATH")
	a.extra = nil
	// user_allow_other, when asked
	if os.Getuid() == 0 {
		a.expectDoctor(0, "user_allow_other", "ok  ", "root", "--allow-other")
	} else if b, _ := os.ReadFile("/etc/fuse.conf"); !strings.Contains(string(b), "\nuser_allow_other") {
		a.expectDoctor(1, "user_allow_other", "FAIL", "/etc/fuse.conf", "--allow-other")
	}

	// mounted: the mount holds the database, and doctor still reads the mirror through it;
	// a held row warns
	ma := a.mount()
	writeFile(t, ma.path("state/x"), "anchored")
	writeFile(t, ma.path("entity/held"), "not json")
	ma.ctl("flush")
	out = a.expectDoctor(0, "head", "ok  ", "(from the mount)")
	if l := doctorLine(out, "held"); !strings.HasPrefix(l, "[WARN]") || !strings.Contains(l, "entity held") {
		t.Fatalf("held line: %q\n%s", l, out)
	}
	a.expectDoctor(0, "mount point", "ok  ", "is mounted and answers")
	// a dead mount left on the mount point
	ma.cmd.Process.Kill()
	ma.cmd.Wait()
	ma.cmd = nil
	a.expectDoctor(1, "mount point", "FAIL", "dead mount", ma.dir)
	exec.Command("fusermount3", "-uz", ma.dir).Run()
	a.expectDoctor(0, "mount point", "ok  ", "no dead mount", ma.dir)

	// another machine: no session key, then one not authorized or funded; its mirror behind
	b := newMachine(t, dc, "doctor")
	b.mustRun("pass doctor\n", "init", "--owner", b.owner(), "--passphrase-stdin")
	b.expectDoctor(1, "session key", "FAIL", "session-key create")
	b.mustRun("", "session-key", "create")
	b.expectDoctor(1, "session key authorization", "FAIL", "is not authorized")
	out = b.expectDoctor(1, "session key balance", "FAIL", "fund")
	if l := doctorLine(out, "head"); !strings.HasPrefix(l, "[WARN]") || !strings.Contains(l, "kintfs pull") {
		t.Fatalf("head of a machine that never pulled: %q\n%s", l, out)
	}
	// a machine that joined the vault has no recovery file of its own: a warning, not a failure
	if l := doctorLine(out, "recovery file"); !strings.HasPrefix(l, "[WARN]") || !strings.Contains(l, "joined the vault") {
		t.Fatalf("recovery file of a machine that joined: %q\n%s", l, out)
	}

	// no vault at all
	c := newMachine(t, dc, "doctor")
	os.MkdirAll(c.home, 0o700)
	c.expectDoctor(1, "vault", "FAIL", "no vault configured")
}

// TestDoctorFailures makes fail, once each, the checks TestDoctor leaves standing: an
// expired cached data key, an expired authorization, a missing FUSE device, a stale RPC, a
// fork at the mirror's seq and one below the head, and a gap the last pull recorded.
func TestDoctorFailures(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "doctorfail")
	a.connect("pass doctor")
	ma := a.mount()
	writeFile(t, ma.path("state/x"), "epoch one")
	ma.mustCtl("flush")
	ma.unmount()
	a.expectDoctor(0, "head", "ok  ", "mirror in step")

	// the cached data key past its KINT_KEY_TTL
	a.extra = []string{"KINT_KEY_TTL=1s"}
	a.mustRun("pass doctor\n", "init", "--owner", a.owner(), "--passphrase-stdin")
	a.extra = nil
	time.Sleep(2100 * time.Millisecond)
	a.expectDoctor(1, "data key", "FAIL", "has expired")
	a.mustRun("pass doctor\n", "init", "--owner", a.owner(), "--passphrase-stdin")
	a.expectDoctor(0, "data key", "ok  ", "cached, expires")

	// the session key's authorization past its expiry
	a.extra = []string{"KINT_OWNER_KEY=" + dc.ownerKeyHex()}
	a.mustRun("", "authorize", "--expiry", "2s")
	a.extra = nil
	time.Sleep(3 * time.Second)
	a.expectDoctor(1, "session key authorization", "FAIL", "expired")
	a.extra = []string{"KINT_OWNER_KEY=" + dc.ownerKeyHex()}
	a.mustRun("", "authorize")
	a.extra = nil
	a.expectDoctor(0, "session key authorization", "ok  ", "authorized for")

	// no FUSE device: doctor in a mount namespace of its own whose /dev is empty
	cmd := exec.Command("unshare", "-m", "sh", "-c", `mount -t tmpfs none /dev && exec "$0" doctor`, kintfsBin)
	cmd.Env = a.env()
	out, err := cmd.Output()
	if _, uerr := exec.LookPath("unshare"); uerr != nil || os.Getuid() != 0 {
		t.Logf("NOT CHECKED: a missing /dev/fuse needs root and unshare (uid %d, %v)", os.Getuid(), uerr)
	} else if l := doctorLine(string(out), "FUSE device"); !strings.HasPrefix(l, "[FAIL]") || !strings.Contains(l, "/dev/fuse") ||
		!strings.Contains(l, "no such file") {
		t.Fatalf("doctor without /dev/fuse: %v: %q\n%s", err, l, out)
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("doctor without /dev/fuse: %v, want exit 1", err)
	}

	// a copy of the chain left at seq 1: a stale RPC, then a fork at the mirror's seq, then one
	// below the head
	dc.stop(t)
	dc2 := &devChain{dir: t.TempDir()}
	sh(t, "/", "cp -a "+dc.dir+"/. "+dc2.dir)
	dc.start(t)
	dc2.start(t)
	t.Cleanup(func() { dc2.stop(t) })
	b := &machine{t: t, dc: dc2, home: filepath.Join(t.TempDir(), "home"), tenant: a.tenant}
	sh(t, "/", "cp -a "+a.home+" "+b.home)
	ma = a.mount()
	writeFile(t, ma.path("state/x"), "epoch two on chain one")
	ma.mustCtl("flush")
	ma.unmount()
	a.extra = []string{"KINT_RPC_URL=" + dc2.info.RPC}
	a.expectDoctor(1, "head", "FAIL", "chain head seq 1 is older than the mirror's seq 2")
	mb := b.mount()
	writeFile(t, mb.path("state/x"), "epoch two on chain two")
	mb.mustCtl("flush")
	a.expectDoctor(1, "head", "FAIL", "a fork (kintfs pull --discard-local)")
	writeFile(t, mb.path("state/y"), "epoch three on chain two")
	mb.mustCtl("flush")
	mb.unmount()
	out2 := a.expectDoctor(1, "head", "FAIL", "chain epoch 3 names prev")
	if !strings.Contains(doctorLine(out2, "head"), "a fork (kintfs pull --discard-local)") {
		t.Fatalf("a fork below the head: %s", out2)
	}
	a.extra = nil
	a.expectDoctor(0, "head", "ok  ", "mirror in step")

	// an epoch nobody can open: the pull records a gap, and doctor names the way past it
	in := newIntruder(t, dc, dc.client(t), a)
	blob := randomBytes(t, 4096+seal.HeaderFixedLen+16)
	blob[0] = 0x7f
	rc := in.append(blob)
	if _, errs, code := a.run("", "pull"); code != 5 {
		t.Fatalf("pull over an epoch that does not open: exit %d: %s", code, errs)
	}
	a.expectDoctor(1, "gaps", "FAIL", fmt.Sprintf("the last pull stopped at epoch %d", rc.Seq))
	a.expectDoctor(1, "gaps", "FAIL", "kintfs compact --over-skipped")
}

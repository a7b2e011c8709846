package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/replica/homedir"
	"kintfs/seal"
)

// transcript collects everything kintfs showed: command output, logs, status files.
type transcript struct {
	parts []string
	names []string
}

func (tr *transcript) add(name, text string) {
	tr.names = append(tr.names, name)
	tr.parts = append(tr.parts, text)
}

// runAll runs a kintfs command and keeps its stdout and stderr, whatever its exit code.
func (tr *transcript) runAll(m *machine, stdin string, args ...string) (string, string, int) {
	m.t.Helper()
	out, errs, code := m.run(stdin, args...)
	tr.add("kintfs "+strings.Join(args, " "), out+errs)
	return out, errs, code
}

// connectRecorded is machine.connect with every command's output kept.
func (m *machine) connectRecorded(tr *transcript, passphrase string) {
	m.t.Helper()
	must := func(stdin string, args ...string) string {
		out, errs, code := tr.runAll(m, stdin, args...)
		if code != 0 {
			m.t.Fatalf("kintfs %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errs)
		}
		return out
	}
	must(passphrase+"\n", "init", "--owner", m.owner(), "--new-vault", "--passphrase-stdin")
	out := must("", "session-key", "create")
	addr := common.HexToAddress(strings.Fields(out)[2])
	owner, _ := crypto.HexToECDSA(strings.TrimPrefix(m.dc.ownerKeyHex(), "0x"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m.dc.client(m.t).Fund(ctx, owner, addr, new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)); err != nil {
		m.t.Fatal(err)
	}
	m.extra = append(m.extra, "KINT_OWNER_KEY="+m.dc.ownerKeyHex())
	must("", "authorize")
	m.extra = m.extra[:len(m.extra)-1]
}

// asNobody runs a command as uid/gid 65534 and returns its combined output and exit code.
func asNobody(t *testing.T, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// secretForms are the ways a secret could show up in text: raw, hex either case, 0x-hex,
// base64.
func secretForms(name string, b []byte) map[string]string {
	h := hex.EncodeToString(b)
	return map[string]string{
		name + " (hex)":    h,
		name + " (HEX)":    strings.ToUpper(h),
		name + " (base64)": base64.StdEncoding.EncodeToString(b),
		name + " (raw)":    string(b),
	}
}

// TestSecretsAndPermissions checks KINT_HOME (0700, every file 0600, no secret in it in the
// clear), that no secret (the passphrase, a wrong one tried, the KEK, the DEK, the recovery
// code, the local secret, the session key, the owner key) appears in any output, log, status
// file, extended attribute or error message, nor in the mount's argv or environment; that
// .kint is 0700 with 0600 files; and that the mount refuses other users (EACCES) unless
// --allow-other, which then still keeps them out of .kint and from writing.
func TestSecretsAndPermissions(t *testing.T) {
	requireFUSE(t)
	const pass = "sec-passphrase-Zq8v!tX3 never print me"
	const wrong = "sec-wrong-passphrase-Kj27 nor me"
	dc := startDevchain(t)
	c := dc.client(t)
	var tr transcript
	a := newMachine(t, dc, "secrets")
	a.connectRecorded(&tr, pass)

	// a mountpoint other users can reach, so that only the mount itself can refuse them
	base, err := os.MkdirTemp("", "kintfs-sec-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	mnt := filepath.Join(base, "mnt")
	for _, d := range []string{base, mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, code := asNobody(t, "ls", mnt); code != 0 {
		t.Fatalf("uid 65534 cannot list the empty mountpoint (%d: %s): the test cannot tell the mount's refusal apart", code, out)
	}

	mt := a.mountAt(mnt)
	writeFile(t, mt.path("state/plan"), "a plan nobody else may read")
	writeFile(t, mt.path("entity/people/ada"), `{"name":"ada"}`)
	mt.mustCtl("flush")
	writeFile(t, mt.path("entity/people/bad"), "not json: held, with a reason")
	_ = mt.ctl("flush")
	_ = mt.ctl("nonsense")
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"log"}, {"pull"}, {"push"}, {"verify", mt.path("state/plan")},
		{"history", "state", "plan"}, {"session-key", "show"}} {
		tr.runAll(a, "", args...)
	}
	tr.add(".kint/status", readFile(t, mt.path(".kint/status")))
	tr.add(".kint/blocks", readFile(t, mt.path(".kint/blocks")))
	if out, err := exec.Command("getfattr", "-d", "-m", "-", mt.path("state/plan"), mt.path("entity/people/bad")).CombinedOutput(); err == nil {
		tr.add("xattrs", string(out))
	} else {
		t.Errorf("getfattr: %v %s", err, out)
	}
	// error messages: a second machine with the wrong passphrase, an empty one
	b := newMachine(t, dc, "secrets")
	if _, errs, code := tr.runAll(b, wrong+"\n", "init", "--owner", b.owner(), "--passphrase-stdin"); code == 0 {
		t.Errorf("init with a wrong passphrase succeeded: %s", errs)
	}
	if _, _, code := tr.runAll(b, "\n", "init", "--owner", b.owner(), "--passphrase-stdin"); code == 0 {
		t.Errorf("init with an empty passphrase succeeded")
	}
	for _, f := range []string{"cmdline", "environ"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", mt.cmd.Process.Pid, f))
		if err != nil {
			t.Fatal(err)
		}
		tr.add("mount /proc/PID/"+f, string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	}

	// .kint is the owner's alone
	for rel, want := range map[string]fs.FileMode{".kint": 0o700 | fs.ModeDir, ".kint/status": 0o600, ".kint/ctl": 0o600, ".kint/blocks": 0o600} {
		if st, err := os.Stat(mt.path(rel)); err != nil || st.Mode()&(fs.ModeDir|fs.ModePerm) != want {
			t.Errorf("%s: mode %v, want %v (%v)", rel, st.Mode(), want, err)
		}
	}
	// other users are refused
	refused := 0
	for _, args := range [][]string{{"ls", mnt}, {"cat", filepath.Join(mnt, "state/plan")}, {"stat", filepath.Join(mnt, "state")}} {
		out, code := asNobody(t, args[0], args[1:]...)
		if code == 0 || !strings.Contains(out, "Permission denied") {
			t.Errorf("as uid 65534, %s: exit %d: %s; want EACCES", strings.Join(args, " "), code, out)
		} else {
			refused++
		}
	}

	// the secrets, derived here as kint derives them
	home := homedir.Home{Dir: a.home}
	kek, dek := vaultKeys(t, c, a, pass)
	local, err := os.ReadFile(home.Path("local.secret"))
	if err != nil {
		t.Fatal(err)
	}
	localKey, err := home.LocalKey()
	if err != nil {
		t.Fatal(err)
	}
	session, _, err := chain.LoadSessionKey(home.Path("session"), hex.EncodeToString(localKey))
	if err != nil {
		t.Fatal(err)
	}
	code := seal.EncodeRecoveryCode(dek)
	secrets := map[string]string{"passphrase": pass, "wrong passphrase": wrong, "recovery code": code,
		"owner key": strings.TrimPrefix(dc.ownerKeyHex(), "0x")}
	binary := map[string][]byte{"KEK": kek[:], "DEK": dek[:], "local secret": local, "local key": localKey,
		"session key": crypto.FromECDSA(session)}
	kinds := len(secrets) + len(binary)
	secrets["recovery code (no hyphens)"] = strings.ReplaceAll(code, "-", "")
	for name, b := range binary {
		for n, v := range secretForms(name, b) {
			secrets[n] = v
		}
	}
	if !strings.Contains(readFile(t, home.Path("RECOVERY-"+seal.Space16(a.space())+".txt")), code) {
		t.Fatalf("the recovery file does not hold the recovery code the DEK gives: the derivation here is wrong")
	}

	mt.unmount()
	tr.add("mount log", mt.log.String())
	leaks := 0
	for i, text := range tr.parts {
		for name, s := range secrets {
			if strings.Contains(text, s) {
				leaks++
				t.Errorf("%s shows the %s", tr.names[i], name)
			}
		}
	}

	// KINT_HOME: 0700 directories, 0600 files, no secret in the clear
	walked, clear := 0, 0
	err = filepath.WalkDir(a.home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		walked++
		rel, _ := filepath.Rel(a.home, p)
		switch perm := info.Mode().Perm(); {
		case d.IsDir() && perm != 0o700:
			t.Errorf("KINT_HOME/%s: a directory with mode %v, want 0700", rel, perm)
		case !d.IsDir() && perm != 0o600:
			t.Errorf("KINT_HOME/%s: mode %v, want 0600", rel, perm)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for name, s := range secrets {
			if strings.HasPrefix(name, "recovery code") || strings.HasPrefix(name, "local secret") {
				continue // the recovery file holds the code, local.secret itself: by design, 0600
			}
			if bytes.Contains(body, []byte(s)) {
				clear++
				t.Errorf("KINT_HOME/%s holds the %s in the clear", rel, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(a.home); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("KINT_HOME mode %v (%v), want 0700", st.Mode().Perm(), err)
	}

	// --allow-other alone still keeps the plaintext to the mounting user (umask 077)
	mt = a.mountAt(mnt, "--allow-other")
	if out, code := asNobody(t, "cat", filepath.Join(mnt, "state/plan")); code == 0 || !strings.Contains(out, "Permission denied") {
		t.Errorf("with --allow-other and the default umask, uid 65534 reads a row: %d %s", code, out)
	}
	mt.unmount()
	// --umask opens the rows up, under the modes: still not into .kint, and not to write
	mt = a.mountAt(mnt, "--allow-other", "--umask", "022")
	out, code2 := asNobody(t, "ls", mnt)
	if code2 != 0 {
		t.Errorf("with --allow-other --umask 022, uid 65534 cannot list the mount: %d %s", code2, out)
	}
	if out, code := asNobody(t, "cat", filepath.Join(mnt, ".kint/status")); code == 0 || !strings.Contains(out, "Permission denied") {
		t.Errorf("with --allow-other, uid 65534 reads .kint/status: %d %s", code, out)
	}
	if out, code := asNobody(t, "sh", "-c", "echo x > "+filepath.Join(mnt, "state/intruder")); code == 0 {
		t.Errorf("with --allow-other, uid 65534 writes into the vault: %s", out)
	}
	readable := "no"
	if _, code := asNobody(t, "cat", filepath.Join(mnt, "state/plan")); code == 0 {
		readable = "yes (mode " + strconv.FormatUint(uint64(statMode(t, mt.path("state/plan"))), 8) + ")"
	}
	mt.unmount()
	mt.checkNoPanic()

	recordFigure(t, "secrets checked", "%d forms of %d secrets in %d outputs, logs and status files: %d leaks", len(secrets), kinds, len(tr.parts), leaks)
	recordFigure(t, "KINT_HOME", "%d entries walked, modes 0700/0600; secrets in the clear: %d", walked, clear)
	recordFigure(t, "other users (uid 65534)", "without --allow-other: %d/3 refused with EACCES; with it: rows refused at umask 077; at --umask 022 .kint and writes refused, files readable: %s", refused, readable)
}

func statMode(t *testing.T, p string) fs.FileMode {
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

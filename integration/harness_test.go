// Package integration drives kintfs end to end: the kintfs binary as a separate process, a
// real development chain, real FUSE mounts, and ordinary tools.
package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/chain/devchain"
	"kintfs/chain/devchain/devinfo"
)

var kintfsBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kintfs-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kintfsBin = filepath.Join(dir, "kintfs")
	// kintfs and, beside it as make build puts it, the dev chain's program
	for pkg, out := range map[string]string{"kintfs/cmd/kintfs": kintfsBin, "kintfs/cmd/kintfs/devchain": filepath.Join(dir, devinfo.Program)} {
		build := exec.Command("go", "build", "-o", out, pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build", pkg+":", err)
			os.Exit(1)
		}
	}
	// The tests hold bodies of up to the file limit (64 MiB) and run side by side: a soft limit
	// makes the collector run sooner, under the race detector too. (What grew this process to
	// 21.9 GB, and the kernel killed it, was the power-cut disks' images in the heap; they
	// live outside it now, integration/powercut.) The mounts and chains it starts are
	// processes of their own and keep their own limits.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(4 << 30)
	}
	code := m.Run()
	printReliabilitySummary()
	os.RemoveAll(dir)
	os.Exit(code)
}

// requireFUSE fails a test loudly in CI when FUSE is missing, and skips it loudly elsewhere.
func requireFUSE(t *testing.T) {
	t.Helper()
	_, errDev := os.Stat("/dev/fuse")
	_, errBin := exec.LookPath("fusermount3")
	if errDev == nil && errBin == nil {
		return
	}
	msg := fmt.Sprintf("FUSE IS NOT AVAILABLE (/dev/fuse: %v, fusermount3: %v): this mount test did NOT run", errDev, errBin)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// devChain is a `kintfs devchain` process.
type devChain struct {
	info devchain.Info
	dir  string
	cmd  *exec.Cmd
	args []string // more flags for kintfs devchain
}

func startDevchain(t *testing.T, args ...string) *devChain {
	t.Helper()
	d := &devChain{dir: t.TempDir(), args: args}
	d.start(t)
	t.Cleanup(func() { d.stop(t) })
	return d
}

func (d *devChain) start(t *testing.T) {
	t.Helper()
	// --max-lead 0: blocks as fast as the tests ask for them, as before the dev chain kept to
	// the wall clock (TestFirstRunNextSteps and chain/devchain test that it does)
	cmd := exec.Command(kintfsBin, append([]string{"devchain", "--datadir", d.dir, "--http", "127.0.0.1:0", "--max-lead", "0"}, d.args...)...)
	cmd.Env = append(os.Environ(), "KINT_HOME="+d.dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
	}()
	select {
	case line := <-lines:
		if err := json.Unmarshal([]byte(line), &d.info); err != nil {
			cmd.Process.Kill()
			t.Fatalf("devchain printed %q: %v\n%s", line, err, stderr.String())
		}
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("devchain did not become ready:\n%s", stderr.String())
	}
	d.cmd = cmd
}

func (d *devChain) stop(t *testing.T) {
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-done
		t.Errorf("devchain did not stop on SIGTERM")
	}
	d.cmd = nil
}

func (d *devChain) client(t *testing.T) *chain.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := chain.Dial(ctx, d.info.RPC, common.HexToAddress(d.info.Contract), chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func (d *devChain) ownerKeyHex() string { return d.info.Accounts[0].PrivateKey }

// machine is one KINT_HOME: another computer of the same owner.
type machine struct {
	t      *testing.T
	dc     *devChain
	home   string
	tenant string
	extra  []string
	// ownGroup starts its mounts in a process group of their own, as a shell starts a job, so
	// that a test can signal the group as a terminal's Ctrl-C does
	ownGroup bool
}

func newMachine(t *testing.T, dc *devChain, tenant string) *machine {
	return &machine{t: t, dc: dc, home: filepath.Join(t.TempDir(), "home"), tenant: tenant}
}

func (m *machine) env() []string {
	return append(append(os.Environ(),
		"KINT_HOME="+m.home,
		"KINT_RPC_URL="+m.dc.info.RPC,
		"KINT_CONTRACT="+m.dc.info.Contract,
		"KINT_TENANT="+m.tenant,
		"KINT_CONFIRMATIONS=1",
	), m.extra...)
}

func (m *machine) owner() string {
	key, err := crypto.HexToECDSA(strings.TrimPrefix(m.dc.ownerKeyHex(), "0x"))
	if err != nil {
		m.t.Fatal(err)
	}
	return crypto.PubkeyToAddress(key.PublicKey).Hex()
}

// run runs kintfs with stdin and returns stdout, stderr and the exit code.
func (m *machine) run(stdin string, args ...string) (string, string, int) {
	m.t.Helper()
	cmd := exec.Command(kintfsBin, args...)
	cmd.Env = m.env()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		m.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func (m *machine) mustRun(stdin string, args ...string) string {
	m.t.Helper()
	out, errs, code := m.run(stdin, args...)
	if code != 0 {
		m.t.Fatalf("kintfs %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// connect inits the vault with a passphrase and creates, funds and authorizes a session key.
func (m *machine) connect(passphrase string) {
	m.t.Helper()
	m.mustRun(passphrase+"\n", "init", "--owner", m.owner(), "--new-vault", "--passphrase-stdin")
	out := m.mustRun("", "session-key", "create")
	addr := common.HexToAddress(strings.Fields(out)[2])
	owner, _ := crypto.HexToECDSA(strings.TrimPrefix(m.dc.ownerKeyHex(), "0x"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	eth := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	if err := m.dc.client(m.t).Fund(ctx, owner, addr, eth); err != nil {
		m.t.Fatal(err)
	}
	m.extra = append(m.extra, "KINT_OWNER_KEY="+m.dc.ownerKeyHex())
	m.mustRun("", "authorize")
	m.extra = m.extra[:len(m.extra)-1]
}

// mounted is a `kintfs mount` process.
type mounted struct {
	t   *testing.T
	dir string
	cmd *exec.Cmd
	log *syncBuffer
}

func (m *machine) mount(args ...string) *mounted {
	m.t.Helper()
	requireFUSE(m.t)
	dir := filepath.Join(m.t.TempDir(), "mnt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		m.t.Fatal(err)
	}
	return m.mountAt(dir, args...)
}

func (m *machine) mountAt(dir string, args ...string) *mounted {
	m.t.Helper()
	mt := &mounted{t: m.t, dir: dir, log: &syncBuffer{}}
	mt.cmd = exec.Command(kintfsBin, append(append([]string{"mount", "--poll", "1s"}, args...), dir)...)
	mt.cmd.Env = m.env()
	mt.cmd.Stdout, mt.cmd.Stderr = mt.log, mt.log
	if m.ownGroup {
		mt.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := mt.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		// the log line, not a stat: the kernel may answer a stat of a dead mount from its cache
		if strings.Contains(mt.log.String(), "mounted "+dir) {
			if _, err := os.Stat(filepath.Join(dir, ".kint", "status")); err == nil {
				break
			}
		}
		if time.Now().After(deadline) || mt.cmd.ProcessState != nil {
			mt.kill()
			m.t.Fatalf("mount did not come up:\n%s", mt.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.t.Cleanup(func() { mt.unmount() })
	return mt
}

func (mt *mounted) path(rel string) string { return filepath.Join(mt.dir, rel) }

// waitLog waits for the mount's log to hold every one of parts: a mount logs a refusal before
// it answers the request, and the line reaches the test through a pipe, a moment later.
func (mt *mounted) waitLog(what string, parts ...string) {
	mt.t.Helper()
	eventually(mt.t, 10*time.Second, "the log naming "+what, func() error {
		log := mt.log.String()
		for _, p := range parts {
			if !strings.Contains(log, p) {
				return fmt.Errorf("no %q in the log:\n%s", p, log)
			}
		}
		return nil
	})
}

// unmount stops the mount with SIGTERM (which flushes first) and waits for it.
func (mt *mounted) unmount() {
	if mt.cmd == nil {
		return
	}
	mt.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- mt.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			mt.t.Errorf("mount exited with %v:\n%s", err, mt.log.String())
		}
	case <-time.After(120 * time.Second):
		mt.kill()
		mt.t.Errorf("mount did not stop on SIGTERM:\n%s", mt.log.String())
	}
	mt.cmd = nil
}

// kill ends the mount with SIGKILL, as a crash or power cut would, and clears the dead mount.
func (mt *mounted) kill() {
	if mt.cmd == nil {
		return
	}
	mt.cmd.Process.Kill()
	// A thread killed inside a kernel cache notification waits on a directory lock that a
	// request to the dead mount holds, so the process never finishes exiting: abort the
	// connection first, as the kernel would once the device closed.
	abortFUSE(mt.dir)
	mt.cmd.Wait()
	mt.cmd = nil
	exec.Command("fusermount3", "-uz", mt.dir).Run()
}

// abortFUSE aborts the FUSE connection of the mount at dir through fusectl (mounted here if
// it is not yet); nothing when dir is not a FUSE mount.
func abortFUSE(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[4] != dir {
			continue
		}
		_, minor, ok := strings.Cut(f[2], ":")
		if !ok {
			return
		}
		ctl := "/sys/fs/fuse/connections"
		if _, err := os.Stat(ctl + "/" + minor); err != nil {
			exec.Command("mount", "-t", "fusectl", "none", ctl).Run()
		}
		os.WriteFile(ctl+"/"+minor+"/abort", []byte("1"), 0)
		return
	}
}

// ctl writes a command to .kint/ctl and returns the write's error.
func (mt *mounted) ctl(cmd string) error {
	return os.WriteFile(mt.path(".kint/ctl"), []byte(cmd+"\n"), 0)
}

func (mt *mounted) mustCtl(cmd string) {
	mt.t.Helper()
	if err := mt.ctl(cmd); err != nil {
		mt.t.Fatalf("ctl %s: %v\nlog:\n%s", cmd, err, mt.log.String())
	}
}

func (mt *mounted) status() map[string]any {
	mt.t.Helper()
	b, err := os.ReadFile(mt.path(".kint/status"))
	if err != nil {
		mt.t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		mt.t.Fatalf("status %s: %v", b, err)
	}
	return st
}

func sh(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// eventually retries fn until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

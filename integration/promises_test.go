package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"kintfs/chain/rpcproxy"
)

// Operations keep the promises the README makes: read-only is read-only, commands work beside
// a mount, a dead RPC is reported fast, exit codes are the table's.

// mountOptions are the options /proc/mounts lists for the mount at dir.
func mountOptions(t *testing.T, dir string) string {
	t.Helper()
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 4 && fields[1] == dir {
			return fields[3]
		}
	}
	t.Fatalf("%s is not in /proc/mounts", dir)
	return ""
}

// stageWithoutFlush leaves rows staged in a: a mount that never flushes on its own, killed.
func stageWithoutFlush(t *testing.T, a *machine, rows map[string]string) {
	t.Helper()
	a.extra = append(a.extra, "KINT_QUIET_SECONDS=3600")
	mt := a.mount()
	for p, body := range rows {
		writeFile(t, mt.path(p), body)
	}
	mt.kill()
	a.extra = a.extra[:len(a.extra)-1]
}

// TestReadOnlyEnforced: a --read-only mount is ro for the kernel, and the engine refuses every
// other way of staging or anchoring, each by name, with exit 2 or EROFS; rows staged before
// stay staged and are not anchored by the read-only mount.
func TestReadOnlyEnforced(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "readonly")
	a.connect("pw")
	mt := a.mount()
	writeFile(t, mt.path("entity/e1"), `{"a":1}`)
	mt.mustCtl("flush")
	mt.unmount()
	stageWithoutFlush(t, a, map[string]string{"state/pending": "staged before"})
	headBefore := chainHead(t, dc.client(t), a)

	ro := a.mount("--read-only")
	if opts := mountOptions(t, ro.dir); !strings.HasPrefix(opts, "ro,") && opts != "ro" {
		t.Fatalf("/proc/mounts lists %q, want ro", opts)
	}
	if err := os.WriteFile(ro.path("state/new"), []byte("x"), 0o644); errnoOf(err) != syscall.EROFS {
		t.Fatalf("write on a read-only mount: %v, want EROFS", err)
	}
	refusals := [][]string{
		{"attr", ro.path("entity/e1"), "status", "--set", "x"},
		{"attr", ro.path("entity/e1"), "meta", "--unset"},
		{"push"},
		{"compact"},
	}
	for _, args := range refusals {
		_, errs, code := a.run("", args...)
		if code != 2 || !strings.Contains(errs, "--read-only") {
			t.Errorf("kintfs %s on a read-only mount: exit %d, %q; want 2 naming --read-only", strings.Join(args, " "), code, errs)
		}
	}
	if _, errs, code := a.run("pw\n", "rekey", "--passphrase-stdin"); code != 2 || !strings.Contains(errs, "--read-only") {
		t.Errorf("kintfs rekey on a read-only mount: exit %d, %q; want 2 naming --read-only", code, errs)
	}
	if err := ro.ctl("flush"); errnoOf(err) != syscall.EROFS {
		t.Errorf("ctl flush on a read-only mount: %v, want EROFS", err)
	}
	if out, errs, code := a.run("", "pull"); code != 0 {
		t.Errorf("pull on a read-only mount: exit %d\n%s%s", code, out, errs)
	}
	st := ro.status()
	if st["read_only"] != true || st["staged_rows"].(float64) != 1 {
		t.Errorf("status of the read-only mount: read_only %v, staged_rows %v", st["read_only"], st["staged_rows"])
	}
	if _, errs, code := a.run("", "unmount", ro.dir); code != 0 {
		t.Fatalf("unmount of a read-only mount: exit %d, %q", code, errs)
	}
	ro.cmd.Wait()
	ro.cmd = nil
	if after := chainHead(t, dc.client(t), a); after.Seq != headBefore.Seq {
		t.Fatalf("the read-only mount anchored: head seq %d -> %d", headBefore.Seq, after.Seq)
	}
	if n := a.stagedRows(); n != 1 {
		t.Fatalf("staged rows after the read-only mount: %v, want 1", n)
	}
}

// TestCommandsBesideAMount: each command either works while the vault is mounted or is
// refused with a sentence naming the way out, never badger's lock error; status answers at
// once while a push is held at the RPC.
func TestCommandsBesideAMount(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "beside")
	a.connect("pw")
	p := startRPCProxy(t, dc.info.RPC)
	a.useRPC(p.URL)
	mt := a.mount()

	if out, errs, code := a.run("", "session-key", "show"); code != 0 || !strings.Contains(out, "authorized for") {
		t.Errorf("session-key show while mounted: exit %d\n%s%s", code, out, errs)
	}
	a.extra = append(a.extra, "KINT_OWNER_KEY="+dc.ownerKeyHex())
	if out, errs, code := a.run("", "authorize"); code != 0 {
		t.Errorf("authorize while mounted: exit %d\n%s%s", code, out, errs)
	}
	a.extra = a.extra[:len(a.extra)-1]
	want := "the vault is mounted at " + mt.dir + ": unmount it first"
	for _, c := range []struct {
		stdin string
		args  []string
	}{
		{"", []string{"pull", "--discard-local"}}, // rekey runs in the mount: TestRekeyWhileMounted
		{"", []string{"mount", filepath.Join(t.TempDir())}},
	} {
		_, errs, code := a.run(c.stdin, c.args...)
		if code != 2 || !strings.Contains(errs, want) || strings.Contains(errs, "Badger") {
			t.Errorf("kintfs %s while mounted: exit %d, %q; want 2 and %q", c.args[0], code, errs, want)
		}
	}

	// a push held at its transaction: status, log and attr answer meanwhile
	writeFile(t, mt.path("state/slow"), "held at the RPC")
	p.SetRule("eth_sendRawTransaction", rpcproxy.Rule{Hold: true})
	sentBefore := p.Seen("eth_sendRawTransaction")
	push := exec.Command(kintfsBin, "push")
	push.Env = a.env()
	var pushOut syncBuffer
	push.Stdout, push.Stderr = &pushOut, &pushOut
	if err := push.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the push reaches the RPC", func() error {
		if p.Seen("eth_sendRawTransaction") == sentBefore {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	for _, args := range [][]string{{"status", "--json"}, {"log"}, {"attr", mt.path("state/slow")}} {
		start := time.Now()
		out, errs, code := a.run("", args...)
		took := time.Since(start)
		if code != 0 || took > 2*time.Second {
			t.Errorf("kintfs %s during a push: exit %d after %v\n%s%s", args[0], code, took, out, errs)
		}
		if args[0] == "status" {
			var st map[string]any
			if err := json.Unmarshal([]byte(out), &st); err != nil || st["pushing"] != true {
				t.Errorf("status during a push: pushing %v (%v)", st["pushing"], err)
			}
		}
		t.Logf("kintfs %s during a push answered in %v", args[0], took.Round(time.Millisecond))
	}
	p.ClearRules()
	p.Release(true)
	if err := push.Wait(); err != nil {
		t.Fatalf("the held push: %v\n%s", err, pushOut.String())
	}
}

// switchableRPC is a reverse proxy to the node on a fixed address that can be taken down
// (connections refused, as when the node dies) and brought back.
type switchableRPC struct {
	t      *testing.T
	addr   string
	target *url.URL
	srv    *http.Server
}

func startSwitchableRPC(t *testing.T, upstream string) *switchableRPC {
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &switchableRPC{t: t, addr: ln.Addr().String(), target: target}
	s.serve(ln)
	t.Cleanup(s.down)
	return s
}

func (s *switchableRPC) URL() string { return "http://" + s.addr }

func (s *switchableRPC) serve(ln net.Listener) {
	s.srv = &http.Server{Handler: httputil.NewSingleHostReverseProxy(s.target)}
	go s.srv.Serve(ln)
}

func (s *switchableRPC) down() {
	if s.srv != nil {
		s.srv.Close()
		s.srv = nil
	}
}

func (s *switchableRPC) up() {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.serve(ln)
}

// TestDeadRPCReportedFast: when the chain dies under a running mount, status says offline,
// push and pull exit 5, ctl flush fails with EHOSTUNREACH and status answers, each within 3 s;
// the mount reconnects on its own once the RPC is back, and the staged row is anchored.
func TestDeadRPCReportedFast(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "dying")
	a.connect("pw")
	rpc := startSwitchableRPC(t, dc.info.RPC)
	a.useRPC(rpc.URL())
	mt := a.mount()
	writeFile(t, mt.path("state/before"), "anchored")
	mt.mustCtl("flush")
	writeFile(t, mt.path("state/during"), "staged while the chain is down")

	rpc.down()
	died := time.Now()
	eventually(t, 3*time.Second, "status says offline", func() error {
		if off, _ := mt.status()["offline"].(string); off == "" {
			return fmt.Errorf("not offline yet")
		}
		return nil
	})
	t.Logf("offline in .kint/status %v after the RPC died (poll 1s)", time.Since(died).Round(time.Millisecond))

	start := time.Now()
	err := mt.ctl("flush")
	if took := time.Since(start); errnoOf(err) != syscall.EHOSTUNREACH || took > 3*time.Second {
		t.Errorf("ctl flush with the RPC dead: %v after %v, want EHOSTUNREACH within 3s", err, took)
	} else {
		t.Logf("ctl flush: EHOSTUNREACH in %v", took.Round(time.Millisecond))
	}
	for _, args := range [][]string{{"push"}, {"pull"}, {"status"}} {
		start := time.Now()
		_, errs, code := a.run("", args...)
		took := time.Since(start)
		want := 5
		if args[0] == "status" {
			want = 0
		}
		if code != want || took > 3*time.Second {
			t.Errorf("kintfs %s with the RPC dead: exit %d after %v, want %d within 3s: %q", args[0], code, took, want, errs)
		} else {
			t.Logf("kintfs %s with the RPC dead: exit %d in %v: %s", args[0], code, took.Round(time.Millisecond), strings.TrimSpace(errs))
		}
		if strings.Contains(errs, "read head: read head") {
			t.Errorf("doubled prefix: %q", errs)
		}
	}
	if !strings.Contains(mt.log.String(), "offline:") {
		t.Errorf("the mount did not log going offline:\n%s", mt.log.String())
	}

	rpc.up()
	eventually(t, 30*time.Second, "the mount reconnects", func() error {
		if off, _ := mt.status()["offline"].(string); off != "" {
			return fmt.Errorf("still %s", off)
		}
		return nil
	})
	mt.mustCtl("flush")
	if st := mt.status(); st["staged_rows"].(float64) != 0 {
		t.Fatalf("after reconnecting: %v staged", st["staged_rows"])
	}
	if !strings.Contains(mt.log.String(), "online again") {
		t.Errorf("the mount did not log coming back:\n%s", mt.log.String())
	}
}

// TestExitCodeTable runs rows of the README's exit-code table, each in the foreground and,
// for a mount, with --daemon too: the code and a piece of the message.
func TestExitCodeTable(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "codes")
	a.connect("pw")
	// a machine of the same vault with a session passphrase the keys were not sealed under
	wrongSession := newMachine(t, dc, "codes2")
	wrongSession.extra = append(wrongSession.extra, "KINT_SESSION_PASSPHRASE=right")
	wrongSession.connect("pw2")
	wrongSession.extra = []string{"KINT_SESSION_PASSPHRASE=wrong"}
	fresh := newMachine(t, dc, "codes3") // no vault
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadURL := "http://" + dead.Addr().String()
	dead.Close()
	// the vault exists on chain: a second machine adopting it with the wrong passphrase
	mt := a.mount()
	writeFile(t, mt.path("state/x"), "one")
	mt.mustCtl("flush")
	mt.unmount()
	adopter := newMachine(t, dc, "codes")
	// 6: a copy of the chain left behind at seq 1 while the chain goes on to seq 2, which this
	// machine saw: the copy's node is a stale RPC
	dc.stop(t)
	behind := &devChain{dir: t.TempDir()}
	sh(t, "/", "cp -a "+dc.dir+"/. "+behind.dir)
	dc.start(t)
	behind.start(t)
	t.Cleanup(func() { behind.stop(t) })
	mt = a.mount()
	writeFile(t, mt.path("state/x"), "two")
	mt.mustCtl("flush")
	mt.unmount()

	emptyDir := func() string { d := filepath.Join(t.TempDir(), "mnt"); os.MkdirAll(d, 0o755); return d }
	rows := []struct {
		name   string
		m      *machine
		env    []string
		stdin  string
		args   []string
		daemon bool // also run with --daemon
		code   int
		msg    string
	}{
		{"done", a, nil, "", []string{"log"}, false, 0, ""},
		{"refused: no mountpoint", a, nil, "", []string{"mount", filepath.Join(t.TempDir(), "missing")}, true, 2, "no such file"},
		{"nothing to push", a, nil, "", []string{"push"}, false, 2, "nothing to push"},
		{"no vault", fresh, nil, "", []string{"mount", emptyDir()}, true, 2, "kintfs init"},
		{"wrong passphrase", adopter, nil, "not pw\n", []string{"init", "--owner", a.owner(), "--passphrase-stdin"}, false, 2, "the passphrase does not open this vault"},
		{"not mounted", a, nil, "", []string{"unmount", emptyDir()}, false, 2, "is not a kintfs mount"},
		{"unknown command", a, nil, "", []string{"frobnicate"}, false, 2, "unknown command"},
		{"wrong session passphrase", wrongSession, nil, "", []string{"mount", emptyDir()}, true, 3, "KINT_SESSION_PASSPHRASE"},
		{"offline push", a, []string{"KINT_RPC_URL=" + deadURL}, "", []string{"push"}, false, 5, "cannot reach the RPC http://"},
		{"offline pull", a, []string{"KINT_RPC_URL=" + deadURL}, "", []string{"pull"}, false, 5, "cannot reach the RPC http://"},
		{"stale RPC", a, []string{"KINT_RPC_URL=" + behind.info.RPC}, "", []string{"pull"}, false, 6, "stale or lying RPC: the RPC says the head is seq 1, but this machine has already seen seq 2"},
	}
	for _, r := range rows {
		modes := []bool{false}
		if r.daemon {
			modes = append(modes, true)
		}
		for _, daemon := range modes {
			args := r.args
			name := r.name
			if daemon {
				args = append([]string{args[0], "--daemon"}, args[1:]...)
				name += " (--daemon)"
			}
			saved := r.m.extra
			r.m.extra = append(append([]string{}, saved...), r.env...)
			start := time.Now()
			_, errs, code := r.m.run(r.stdin, args...)
			r.m.extra = saved
			if code != r.code || !strings.Contains(errs, r.msg) {
				t.Errorf("%s: kintfs %s: exit %d, %q; want %d and %q", name, strings.Join(args, " "), code, errs, r.code, r.msg)
			}
			if strings.Count(strings.TrimSpace(errs), "\n") > 0 {
				t.Errorf("%s: the message spans lines: %q", name, errs)
			}
			t.Logf("%-34s exit %d in %v", name, code, time.Since(start).Round(time.Millisecond))
		}
	}

	// 4: the chain moved under a push: another machine anchors between the push's read of the
	// head and its gas estimate, which the contract then refuses with StaleHead
	proxy := startRPCProxy(t, dc.info.RPC)
	stageWithoutFlush(t, a, map[string]string{"state/racer": "staged here"})
	other := newMachine(t, dc, "codes")
	other.connect("pw")
	mo := other.mount()
	writeFile(t, mo.path("state/other"), "anchored in the window")
	a.useRPC(proxy.URL)
	proxy.SetRule("eth_estimateGas", rpcproxy.Rule{Hold: true})
	before := proxy.Seen("eth_estimateGas")
	push := exec.Command(kintfsBin, "push")
	push.Env = a.env()
	var pushErr syncBuffer
	push.Stderr = &pushErr
	if err := push.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the push reaches its gas estimate", func() error {
		if proxy.Seen("eth_estimateGas") == before {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	mo.mustCtl("flush")
	proxy.ClearRules()
	proxy.Release(true)
	err := push.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || !strings.Contains(pushErr.String(), "the chain moved") ||
		strings.Count(strings.TrimSpace(pushErr.String()), "\n") > 0 {
		t.Errorf("push while another machine anchored: %v, %q; want exit 4 and \"the chain moved\"", err, pushErr.String())
	}
	a.extra = a.extra[:len(a.extra)-1]
	mo.unmount()
	// the staged row was kept: the next push rebases it on the other machine's epoch
	if out := a.mustRun("", "push"); !strings.Contains(out, "1 rows") {
		t.Errorf("push after the refusal: %s", out)
	}

	// 5 from an unmount whose flush failed: the mount goes, the row stays staged
	rpc := startSwitchableRPC(t, dc.info.RPC)
	a.useRPC(rpc.URL())
	mt = a.mount()
	writeFile(t, mt.path("state/y"), "staged")
	rpc.down()
	_, errs, code := a.run("", "unmount", mt.dir)
	if code != 5 || !strings.Contains(errs, "stay staged") {
		t.Errorf("unmount whose flush failed: exit %d, %q; want 5", code, errs)
	}
	mt.cmd.Wait()
	mt.cmd = nil
	a.extra = a.extra[:len(a.extra)-1]
	if n := a.stagedRows(); n != 1 {
		t.Errorf("after the failed flush: %v staged, want 1", n)
	}

	// 7: busy, the holder named on one line, without the mount and the unmount themselves
	mt = a.mount()
	// a process holding a file whose path merely starts with the mount point's is no holder
	neighbour, err := os.Create(mt.dir + ".log")
	if err != nil {
		t.Fatal(err)
	}
	bystander := exec.Command("sleep", "60")
	bystander.Stdout = neighbour
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { bystander.Process.Kill(); bystander.Wait(); neighbour.Close() }()
	hold := exec.Command("sleep", "60")
	hold.Dir = mt.path("state")
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, errs, code = a.run("", "unmount", "--timeout", "2s", mt.dir)
	took := time.Since(start)
	hold.Process.Kill()
	hold.Wait()
	want := fmt.Sprintf("sleep (pid %d)", hold.Process.Pid)
	// the unmount's flush streams its epochs first (the row the failed flush above left
	// staged); the refusal is one line of its own
	var refusal []string
	for _, l := range strings.Split(strings.TrimSpace(errs), "\n") {
		if !strings.HasPrefix(l, "push: ") {
			refusal = append(refusal, l)
		}
	}
	if code != 7 || !strings.Contains(errs, want) || strings.Contains(errs, "kintfs (pid") || strings.Contains(errs, "pid self") ||
		strings.Contains(errs, fmt.Sprintf("pid %d", bystander.Process.Pid)) ||
		len(refusal) != 1 || took > 5*time.Second {
		t.Errorf("busy unmount: exit %d after %v, %q; want 7 within the timeout naming only %s", code, took, errs, want)
	}
	t.Logf("busy unmount: exit %d in %v: %s", code, took.Round(time.Millisecond), strings.TrimSpace(errs))
}

// statusSchema is the README's schema of .kint/status: every field, with its one JSON type.
var statusSchema = map[string]string{
	"owner": "string", "tenant": "string", "space": "string", "chain": "object", "head": "object", "mirror": "object",
	"read_only": "bool", "pushing": "bool", "last_poll": "string", "offline": "string",
	"staged_rows": "int", "staged_deletions": "int", "staged_bytes": "int", "oldest_staged_age_seconds": "int", "local_files": "int",
	"held": "list", "conflicts": "list", "gaps": "list", "pending_push": "list",
	"last_push": "object|null", "last_pull": "object|null",
	"history_from": "object", "backfill": "string", "live": "string",
	"vault_model": "string", "kint_incompatible": "list",
	"last_dry_run": "object|null", "bucket_policy": "string",
	"next_flush": "string",
}

// checkStatusSchema fails for a missing or extra field, or a value of another type.
func checkStatusSchema(t *testing.T, state string, raw []byte) {
	t.Helper()
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("%s: status %s: %v", state, raw, err)
	}
	for k := range st {
		if _, ok := statusSchema[k]; !ok {
			t.Errorf("%s: status field %q is not in the schema", state, k)
		}
	}
	for k, typ := range statusSchema {
		v, ok := st[k]
		if !ok {
			t.Errorf("%s: status has no %q", state, k)
			continue
		}
		got := "other"
		switch x := v.(type) {
		case nil:
			got = "null"
		case string:
			got = "string"
		case bool:
			got = "bool"
		case []any:
			got = "list"
		case map[string]any:
			got = "object"
		case float64:
			got = "float"
			if x == math.Trunc(x) && !strings.ContainsAny(fmt.Sprint(x), ".e") {
				got = "int"
			}
		}
		if !strings.Contains("|"+typ+"|", "|"+got+"|") {
			t.Errorf("%s: status %q is %s (%v), want %s", state, k, got, v, typ)
		}
	}
}

// TestStatusSchema checks .kint/status against its schema in each state a mount passes
// through: fresh, staged, pushing, offline, read-only.
func TestStatusSchema(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "schema")
	a.connect("pw")
	p := startRPCProxy(t, dc.info.RPC)
	a.useRPC(p.URL)
	a.extra = append(a.extra, "KINT_QUIET_SECONDS=3600")
	mt := a.mount()
	read := func() []byte {
		b, err := os.ReadFile(mt.path(".kint/status"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	checkStatusSchema(t, "fresh", read())
	writeFile(t, mt.path("state/a"), "one")
	time.Sleep(1100 * time.Millisecond) // oldest_staged_age_seconds past a whole second
	checkStatusSchema(t, "staged", read())

	p.SetRule("eth_sendRawTransaction", rpcproxy.Rule{Hold: true})
	sentBefore := p.Seen("eth_sendRawTransaction")
	flushed := make(chan error, 1)
	go func() { flushed <- mt.ctl("flush") }()
	eventually(t, 30*time.Second, "the push is held", func() error {
		if p.Seen("eth_sendRawTransaction") == sentBefore {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	raw := read()
	checkStatusSchema(t, "pushing", raw)
	if !strings.Contains(string(raw), `"pushing": true`) {
		t.Errorf("pushing: %s", raw)
	}
	p.ClearRules()
	p.Release(true)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	checkStatusSchema(t, "pushed", read())
	mt.unmount()

	// offline from the start: last_poll is there at once
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadURL := "http://" + dead.Addr().String()
	dead.Close()
	a.useRPC(deadURL)
	mt = a.mount()
	eventually(t, 5*time.Second, "offline start polled", func() error {
		var st map[string]any
		json.Unmarshal(read(), &st)
		if st["last_poll"] == "" || st["offline"] == "" {
			return fmt.Errorf("last_poll %v offline %v", st["last_poll"], st["offline"])
		}
		return nil
	})
	checkStatusSchema(t, "offline", read())
	mt.unmount()
	a.extra = a.extra[:len(a.extra)-1]
	mt = a.mount("--read-only")
	checkStatusSchema(t, "read-only", read())
}

// TestAllowOtherUmask: with --allow-other the plaintext is the mounting user's alone (rows
// 0600, directories 0700, another user gets EACCES); --umask 022 opens it up.
func TestAllowOtherUmask(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "umask")
	a.connect("pw")
	base := t.TempDir()
	os.Chmod(base, 0o755)
	for d := filepath.Dir(base); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // the test's temp directories: another user must reach the mount
	}
	nobody := func(path string) error {
		cmd := exec.Command("cat", path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	for _, c := range []struct {
		args          []string
		file, dir     os.FileMode
		othersReadRow bool
	}{
		{[]string{"--allow-other"}, 0o600, 0o700, false},
		{[]string{"--allow-other", "--umask", "022"}, 0o644, 0o755, true},
	} {
		dir := filepath.Join(base, fmt.Sprintf("mnt%d", len(c.args)))
		os.MkdirAll(dir, 0o755)
		mt := a.mountAt(dir, c.args...)
		writeFile(t, mt.path("state/secret"), "plaintext")
		fi, err := os.Stat(mt.path("state/secret"))
		if err != nil {
			t.Fatal(err)
		}
		di, err := os.Stat(mt.path("state"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != c.file || di.Mode().Perm() != c.dir {
			t.Errorf("%v: row %v, tier directory %v; want %v and %v", c.args, fi.Mode().Perm(), di.Mode().Perm(), c.file, c.dir)
		}
		err = nobody(mt.path("state/secret"))
		if (err == nil) != c.othersReadRow {
			t.Errorf("%v: another user reading a row: %v, want readable %v", c.args, err, c.othersReadRow)
		}
		mt.unmount()
	}
	if _, errs, code := a.run("", "mount", "--umask", "9", filepath.Join(base, "x")); code != 2 || !strings.Contains(errs, "octal") {
		t.Errorf("--umask 9: exit %d, %q", code, errs)
	}
}

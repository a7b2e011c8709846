package integration

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unit is what a crash-and-restart needs of an example systemd unit.
type unit struct {
	settings map[string]string // the last value of each key
	pre      []string          // ExecStartPre lines
}

func readUnit(t *testing.T, name string) unit {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "contrib", "systemd", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{settings: map[string]string{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		u.settings[k] = v
		if k == "ExecStartPre" {
			u.pre = append(u.pre, v)
		}
	}
	return u
}

// service runs a unit's commands the way systemd does, with the unit's mount point replaced
// by mnt and its binary by the one under test.
type service struct {
	t       *testing.T
	m       *machine
	u       unit
	unitMnt string
	mnt     string
	notify  *net.UnixConn
	sock    string
	cmd     *exec.Cmd
	log     *syncBuffer
	exited  chan struct{}
}

// command is a unit's command line made runnable (its "-", failure ignored, taken off).
func (s *service) command(line string) []string {
	line = strings.ReplaceAll(strings.TrimPrefix(line, "-"), s.unitMnt, s.mnt)
	args := strings.Fields(line)
	if args[0] == "/usr/local/bin/kintfs" {
		args[0] = kintfsBin
	}
	return args
}

// startPre runs the ExecStartPre lines; one without "-" must succeed.
func (s *service) startPre() {
	s.t.Helper()
	for _, line := range s.u.pre {
		ignore := strings.HasPrefix(line, "-")
		args := s.command(line)
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil && !ignore {
			s.t.Fatalf("ExecStartPre %s: %v\n%s", line, err, out)
		}
	}
}

// start runs ExecStartPre and ExecStart, and waits for READY=1 on the notify socket, as
// Type=notify does, with a generous deadline: the machine may be loaded.
func (s *service) start() {
	s.t.Helper()
	s.startPre()
	args := s.command(s.u.settings["ExecStart"])
	s.log = &syncBuffer{}
	s.cmd = exec.Command(args[0], args[1:]...)
	s.cmd.Env = append(s.m.env(), "NOTIFY_SOCKET="+s.sock)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	exited := make(chan struct{})
	s.exited = exited
	go func(c *exec.Cmd) { c.Wait(); close(exited) }(s.cmd)
	deadline := time.Now().Add(120 * time.Second)
	buf := make([]byte, 256)
	for {
		select {
		case <-exited:
			s.t.Fatalf("ExecStart exited before READY=1:\n%s", s.log.String())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no READY=1 within 120 s:\n%s", s.log.String())
		}
		s.notify.SetReadDeadline(time.Now().Add(time.Second))
		n, err := s.notify.Read(buf)
		if err == nil && strings.Contains(string(buf[:n]), "READY=1") {
			return
		}
	}
}

// crash kills the main process with SIGKILL and does not wait for it to finish exiting.
func (s *service) crash() (exited chan struct{}) {
	s.cmd.Process.Signal(syscall.SIGKILL)
	return s.exited
}

// stop runs ExecStop, bounded by TimeoutStopSec, and returns its exit code.
func (s *service) stop() int {
	s.t.Helper()
	args := s.command(s.u.settings["ExecStop"])
	limit, err := time.ParseDuration(s.u.settings["TimeoutStopSec"] + "s")
	if err != nil {
		s.t.Fatalf("TimeoutStopSec %q: %v", s.u.settings["TimeoutStopSec"], err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = s.m.env()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		s.t.Fatalf("ExecStop did not finish within TimeoutStopSec (%s):\n%s", limit, out)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	return 0
}

// waitExited waits for a killed main process to be gone.
func waitExited(t *testing.T, exited chan struct{}) {
	t.Helper()
	select {
	case <-exited:
	case <-time.After(120 * time.Second):
		t.Fatal("the killed mount process did not finish exiting within 120 s")
	}
}

// TestUnitRestartAfterCrash runs what systemd does with the example units when the mount
// crashes: SIGKILL the main process, ExecStop, RestartSec, ExecStartPre and ExecStart again,
// which must mount (READY=1) with the data there. A restart at once, without ExecStop (a
// mount started by hand right after the crash), must mount too: the dead mount is recognised
// from the mount table and the connection, whatever the delay.
func TestUnitRestartAfterCrash(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "restart")
	a.connect("pw")
	for name, unitMnt := range map[string]string{"kintfs-user.service": "%h/kint", "kintfs@.service": "/mnt/kint/%i"} {
		t.Run(name, func(t *testing.T) {
			u := readUnit(t, name)
			for k, want := range map[string]string{"Type": "notify", "Restart": "on-failure"} {
				if u.settings[k] != want {
					t.Fatalf("%s: %s=%q, want %q", name, k, u.settings[k], want)
				}
			}
			restartDelay, err := time.ParseDuration(u.settings["RestartSec"])
			if err != nil {
				t.Fatalf("%s: RestartSec %q: %v", name, u.settings["RestartSec"], err)
			}
			dir := t.TempDir()
			sock := filepath.Join(dir, "notify")
			conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			s := &service{t: t, m: a, u: u, unitMnt: unitMnt, mnt: filepath.Join(dir, "mnt"), notify: conn, sock: sock}
			t.Cleanup(func() {
				// after a failure: no mount process left behind, no dead mount on the directory
				if s.exited != nil {
					select {
					case <-s.exited:
					default:
						s.cmd.Process.Kill()
						abortFUSE(s.mnt)
						<-s.exited
					}
				}
				abortFUSE(s.mnt)
				exec.Command("fusermount3", "-uz", s.mnt).Run()
			})
			s.start()
			writeFile(t, filepath.Join(s.mnt, "state", "kept"), "durable on close")

			// systemd's sequence: the crash, ExecStop, RestartSec, the start again
			exited := s.crash()
			code := s.stop()
			t.Logf("ExecStop after the crash exited %d", code)
			time.Sleep(restartDelay)
			s.start()
			waitExited(t, exited)
			if got := readFile(t, filepath.Join(s.mnt, "state", "kept")); got != "durable on close" {
				t.Fatalf("after the restart: %q", got)
			}

			// a start at once, without ExecStop: the dead mount is cleared by the mount itself
			exited = s.crash()
			s.start()
			if !strings.Contains(s.log.String(), "dead mount") {
				t.Errorf("the restarted mount does not say it cleared a dead mount:\n%s", s.log.String())
			}
			waitExited(t, exited)
			if got := readFile(t, filepath.Join(s.mnt, "state", "kept")); got != "durable on close" {
				t.Fatalf("after an immediate restart: %q", got)
			}

			// and a clean stop flushes and unmounts
			if code := s.stop(); code != 0 {
				t.Fatalf("ExecStop of a live mount exited %d:\n%s", code, s.log.String())
			}
			select {
			case <-s.exited:
			case <-time.After(120 * time.Second):
				s.cmd.Process.Kill()
				t.Fatalf("the mount did not exit after ExecStop:\n%s", s.log.String())
			}
		})
	}
}

// TestHungMountReplaced: a kintfs mount whose process no longer answers (stopped here with
// SIGSTOP, as a process killed in the middle of a request never finishes exiting) leaves a
// connection that statfs waits on forever. The next mount on the directory aborts that
// connection through fusectl, detaches it, and mounts.
func TestHungMountReplaced(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "hung-a")
	a.connect("pw")
	b := newMachine(t, dc, "hung-b")
	b.connect("pw")
	ma := a.mount()
	writeFile(t, ma.path("state/a"), "from a")
	if err := ma.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := ma.cmd
	t.Cleanup(func() {
		stopped.Process.Signal(syscall.SIGCONT)
		stopped.Process.Kill()
		stopped.Wait()
	})
	ma.cmd = nil // not unmounted by the harness: its connection is aborted below
	mb := b.mountAt(ma.dir)
	if !strings.Contains(mb.log.String(), "dead mount") || !strings.Contains(mb.log.String(), "has not answered") {
		t.Errorf("the mount does not say it replaced a hung mount:\n%s", mb.log.String())
	}
	writeFile(t, mb.path("state/b"), "from b")
	if got := readFile(t, mb.path("state/b")); got != "from b" {
		t.Fatalf("the new mount reads %q", got)
	}
	if _, err := os.Stat(mb.path("state/a")); !os.IsNotExist(err) {
		t.Fatalf("the new mount shows the other vault's file: %v", err)
	}
}

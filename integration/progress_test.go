//go:build linux

package integration

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kintfs/chain/rpcproxy"
)

// timedOutput collects a command's output with the time its first progress line arrived.
type timedOutput struct {
	mu    sync.Mutex
	buf   strings.Builder
	start time.Time
	first time.Duration // when the first progress output arrived (0: none yet)
	task  string
}

func (o *timedOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	if o.first == 0 && strings.Contains(o.buf.String(), o.task+": ") {
		o.first = time.Since(o.start)
	}
	return len(p), nil
}

func (o *timedOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// openPTY opens a pseudo-terminal: its master and the path of its slave.
func openPTY(t *testing.T) (*os.File, string) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	return master, fmt.Sprintf("/dev/pts/%d", n)
}

// runProgress runs kintfs with its output on a pseudo-terminal (tty) or in a file, and returns
// what it wrote, how long it ran and when its first progress output arrived.
func runProgress(t *testing.T, m *machine, tty bool, task string, args ...string) (out string, took, first time.Duration) {
	t.Helper()
	cmd := exec.Command(kintfsBin, args...)
	cmd.Env = m.env()
	o := &timedOutput{task: task}
	done := make(chan struct{}) // the reader has everything
	var file string
	if tty {
		master, slavePath := openPTY(t)
		defer master.Close()
		slave, err := os.OpenFile(slavePath, os.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = slave, slave
		o.start = time.Now() // before the reader reads it
		go func() {
			defer close(done)
			b := make([]byte, 4096)
			for {
				n, err := master.Read(b)
				o.Write(b[:n])
				if err != nil { // EIO once the last holder of the slave is gone
					return
				}
			}
		}()
		err = cmd.Start()
		slave.Close()
		if err != nil {
			t.Fatal(err)
		}
	} else {
		file = filepath.Join(t.TempDir(), "out")
		f, err := os.Create(file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
		o.start = time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		defer close(exited)
		go func() { // what a reader of the file sees, and when
			defer close(done)
			for {
				b, _ := os.ReadFile(file)
				if strings.Contains(string(b), task+": ") {
					o.mu.Lock()
					o.first = time.Since(o.start)
					o.mu.Unlock()
					return
				}
				select {
				case <-exited:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}
	err := cmd.Wait()
	took = time.Since(o.start)
	if tty {
		<-done
		out = o.String()
	} else {
		b, _ := os.ReadFile(file)
		out = string(b)
	}
	if err != nil {
		t.Fatalf("kintfs %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if !tty {
		select {
		case <-done:
		case <-time.After(time.Second):
		}
	}
	o.mu.Lock()
	first = o.first
	o.mu.Unlock()
	return out, took, first
}

// bigText is n bytes of text that does not compress much: one row per epoch.
func bigText(t *testing.T, n int) string {
	b := make([]byte, n*3/4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

var landedSeq = regexp.MustCompile(`epoch (\d+) (?:applied|anchored)`)

// checkOncePerEpoch checks that output, written to a file, reports each of want epochs on a
// line of its own, each once.
func checkOncePerEpoch(t *testing.T, what, out string, want int) {
	t.Helper()
	seen := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		if m := landedSeq.FindStringSubmatch(line); m != nil {
			seen[m[1]]++
		}
	}
	if len(seen) != want {
		t.Errorf("%s: %d epochs reported, want %d:\n%s", what, len(seen), want, clip(out))
	}
	for seq, n := range seen {
		if n != 1 {
			t.Errorf("%s: epoch %s reported %d times", what, seq, n)
		}
	}
}

// checkTerminal checks that output, written to a terminal, is an updating line that counts up
// to want epochs, never back.
func checkTerminal(t *testing.T, what, out string, want int) {
	t.Helper()
	re := regexp.MustCompile(`(\d+)(?:/\d+)? epochs (?:applied|anchored)`)
	last := 0
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		var n int
		fmt.Sscan(m[1], &n)
		if n < last {
			t.Errorf("%s: the count went back from %d to %d", what, last, n)
		}
		last = n
	}
	if last != want || !strings.Contains(out, "\r") {
		t.Errorf("%s: the terminal line ended at %d epochs, want %d (an updating line):\n%q", what, last, want, clip(out))
	}
}

// firstProgressFloor is how soon the first progress may come however short the run: a task
// reports its first batch after a few round trips to the node (50 ms each through the proxy
// below), which a pull of 200 epochs that takes a second spends a quarter of.
const firstProgressFloor = 500 * time.Millisecond

// earlyEnough reports whether the first progress came within the first quarter of a run that
// took took, or within firstProgressFloor.
func earlyEnough(first, took time.Duration) bool {
	return first > 0 && first <= max(took/4, firstProgressFloor)
}

// TestProgress: a 30-epoch push beside a mount and a 200-epoch pull on a fresh machine, through
// a proxy that adds 50 ms to each request, under a pseudo-terminal and into a file: the first
// progress output arrives before a quarter of the run has passed (see earlyEnough), and each
// epoch is reported once (the push's stream comes from the mount, which does the work).
func TestProgress(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "progress")
	a.connect("progress passphrase")
	proxy := startRPCProxy(t, dc.info.RPC)
	a.useRPC(proxy.URL)
	a.extra = append(a.extra, "KINT_SIZE_TRIGGER_BYTES=1000000000")
	ma := a.mount()
	pushEpochs(t, ma, 1, 140)
	for _, m := range latencyMethods {
		proxy.SetRule(m, rpcproxy.Rule{Delay: 50 * time.Millisecond})
	}
	for i, tty := range []bool{true, false} {
		for j := 0; j < 30; j++ {
			writeFile(t, ma.path(fmt.Sprintf("state/big%d-%02d", i, j)), bigText(t, 70000))
		}
		if i == 0 { // the human status says when the next automatic flush runs, and why
			human := a.mustRun("", "status")
			for _, want := range []string{"next automatic flush: 20", "quiet period (5m0s after the last change", "last push: 20", "last pull: ", "backfill ", "held: 0 rows"} {
				if !strings.Contains(human, want) {
					t.Errorf("kintfs status does not say %q:\n%s", want, human)
				}
			}
		}
		out, took, first := runProgress(t, a, tty, "push", "push")
		t.Logf("push of 30 epochs (tty %v): %v, first progress after %v", tty, took.Round(time.Millisecond), first.Round(time.Millisecond))
		if !earlyEnough(first, took) {
			t.Errorf("push (tty %v): first progress after %v of %v, want within the first quarter (or %v)", tty, first, took, firstProgressFloor)
		}
		if tty {
			checkTerminal(t, "push on a terminal", out, 30)
		} else {
			checkOncePerEpoch(t, "push into a file", out, 30)
		}
		if !strings.Contains(out, "in 30 epoch(s)") {
			t.Errorf("push: no summary of 30 epochs:\n%s", clip(out))
		}
	}
	if !strings.Contains(ma.log.String(), "(for kintfs push)") {
		t.Errorf("the mount's log does not have the epochs the forwarded push anchored")
	}
	for _, tty := range []bool{true, false} {
		b := newMachine(t, dc, "progress")
		b.useRPC(proxy.URL)
		b.mustRun("progress passphrase\n", "init", "--owner", a.owner(), "--passphrase-stdin")
		out, took, first := runProgress(t, b, tty, "pull", "pull")
		t.Logf("pull of 200 epochs (tty %v): %v, first progress after %v", tty, took.Round(time.Millisecond), first.Round(time.Millisecond))
		if !earlyEnough(first, took) {
			t.Errorf("pull (tty %v): first progress after %v of %v, want within the first quarter (or %v)", tty, first, took, firstProgressFloor)
		}
		var mirror, applied int
		if i := strings.Index(out, "mirror at seq"); i < 0 {
			t.Fatalf("pull: no report:\n%s", clip(out))
		} else {
			fmt.Sscanf(out[i:], "mirror at seq %d (head 200): %d epochs applied", &mirror, &applied)
		}
		if mirror != 200 || applied < 199 {
			t.Errorf("pull: mirror %d, %d applied:\n%s", mirror, applied, clip(out))
		}
		if tty {
			checkTerminal(t, "pull on a terminal", out, applied)
		} else {
			checkOncePerEpoch(t, "pull into a file", out, applied)
		}
	}
}

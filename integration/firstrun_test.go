package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"kintfs/chain/devchain/devinfo"
)

// TestFirstRunNextSteps: a first run (mount --dev, as make run does) prints the next steps
// once mounted, and each one, run as printed in a shell that has none of the mount's
// environment, works: the write is staged, the flush anchors it, status answers, .kint/blocks
// lists the epoch with its block time near the wall clock, and Ctrl-C (to the whole job, as a
// terminal sends it) flushes and unmounts, and the dev chain's program ends after the mount.
func TestFirstRunNextSteps(t *testing.T) {
	requireFUSE(t)
	m := &machine{t: t, dc: &devChain{}, home: filepath.Join(t.TempDir(), "home"), tenant: "firstrun", ownGroup: true}
	mt := m.mount("--dev")
	if pids := devChainPIDs(t, m.home); len(pids) != 1 {
		t.Fatalf("mount --dev runs %d dev chain programs for its home, want 1", len(pids))
	}
	var steps []string
	eventually(t, 30*time.Second, "the next steps after mounted", func() error {
		log := mt.log.String()
		i := strings.Index(log, "Next, in another shell:\n")
		j := strings.Index(log, "Ctrl-C here anchors what is staged, then unmounts.")
		if i < 0 || j < i {
			return errors.New("not printed yet")
		}
		steps = nil
		for _, l := range strings.Split(log[i:j], "\n")[1:] {
			// a command is indented two spaces; its explanation six
			if strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "   ") {
				steps = append(steps, strings.TrimSpace(l))
			}
		}
		return nil
	})
	if len(steps) != 4 || !strings.HasPrefix(steps[0], "echo ") || !strings.Contains(steps[0], mt.path("state")+"/") ||
		steps[1] != "echo flush > "+mt.path(".kint/ctl") || !strings.HasSuffix(steps[2], kintfsBin+" status") ||
		!strings.Contains(steps[2], "KINT_HOME="+m.home) || steps[3] != "cat "+mt.path(".kint/blocks") {
		t.Fatalf("next steps %q:\n%s", steps, mt.log.String())
	}
	// another shell: no KINT_* variables, another working directory, another HOME
	shell := func(line string) (string, error) {
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = t.TempDir()
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, step := range steps[:3] {
		out, err := shell(step)
		if err != nil {
			t.Fatalf("%s: %v\n%s", step, err, out)
		}
		if strings.HasSuffix(step, " status") && !strings.Contains(out, "head seq 1") {
			t.Fatalf("%s after the flush: %s", step, out)
		}
	}
	if got := readFile(t, mt.path("state/hello.txt")); got != "hello from kintfs\n" {
		t.Fatalf("state/hello.txt: %q", got)
	}
	// the block time is read from the chain in the background: wait for it
	var line string
	eventually(t, 60*time.Second, "the epoch's block time in .kint/blocks", func() error {
		out, err := shell(steps[3])
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		line = lines[len(lines)-1]
		if f := strings.Fields(line); len(f) != 4 || f[0] != "1" || f[3] == "-" {
			return fmt.Errorf(".kint/blocks: %q", out)
		}
		return nil
	})
	at, err := time.Parse(time.RFC3339, strings.Fields(line)[3])
	if err != nil {
		t.Fatalf(".kint/blocks line %q: %v", line, err)
	}
	// the dev chain's clock follows the wall clock: the epoch was anchored in the last minute
	// (a loaded machine is slow), and its block is not ahead of now by more than the lead
	if skew := time.Until(at); skew > 4*time.Second || skew < -2*time.Minute {
		t.Fatalf("the epoch's block time %s is %v from the wall clock", at, skew)
	}
	// Ctrl-C: SIGINT to the job flushes and unmounts; the chain, in a group of its own, is
	// still there for the flush
	writeFile(t, mt.path("state/second.txt"), "staged at Ctrl-C")
	if err := syscall.Kill(-mt.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mt.cmd.Wait() }()
	select {
	case err := <-done:
		mt.cmd = nil
		if err != nil {
			t.Fatalf("mount after Ctrl-C: %v\n%s", err, mt.log.String())
		}
	case <-time.After(120 * time.Second):
		t.Fatalf("mount did not stop on Ctrl-C:\n%s", mt.log.String())
	}
	if !strings.Contains(mt.log.String(), "pending: nothing; every change is anchored") {
		t.Fatalf("Ctrl-C did not anchor what was staged:\n%s", mt.log.String())
	}
	if _, err := os.Stat(mt.path(".kint")); !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("still mounted after Ctrl-C: %v", err)
	}
	if pids := devChainPIDs(t, m.home); len(pids) != 0 {
		t.Fatalf("the dev chain's program (pid %v) outlived the mount that started it", pids)
	}
}

// TestDevChainEndsWithTheMount: the dev chain a mount --dev started ends when that mount is
// killed (its input closes with the mount), having kept what was anchored: the next mount
// --dev starts it again on the same data and reads the file back.
func TestDevChainEndsWithTheMount(t *testing.T) {
	requireFUSE(t)
	m := &machine{t: t, dc: &devChain{}, home: filepath.Join(t.TempDir(), "home"), tenant: "devkill"}
	mt := m.mount("--dev")
	writeFile(t, mt.path("state/kept.txt"), "anchored before the kill")
	writeFile(t, mt.path(".kint/ctl"), "flush")
	pids := devChainPIDs(t, m.home)
	if len(pids) != 1 {
		t.Fatalf("mount --dev runs %d dev chain programs for its home, want 1", len(pids))
	}
	mt.kill()
	eventually(t, 60*time.Second, "the dev chain's program to end after the mount was killed", func() error {
		// a process that ended but was not yet reaped has no command line, so is not listed
		if left := devChainPIDs(t, m.home); len(left) > 0 {
			return fmt.Errorf("pid %v still runs", left)
		}
		return nil
	})
	mt = m.mountAt(mt.dir, "--dev")
	if got := readFile(t, mt.path("state/kept.txt")); got != "anchored before the kill" {
		t.Fatalf("state/kept.txt after the chain restarted: %q", got)
	}
}

// devChainPIDs are the processes of the dev chain's program running on home's chain.
func devChainPIDs(t *testing.T, home string) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if filepath.Base(args[0]) == devinfo.Program && slices.Contains(args, filepath.Join(home, "devchain")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

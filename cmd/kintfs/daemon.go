package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
)

// readyFDEnv names the descriptor a daemonized child reports readiness on.
const readyFDEnv = "KINTFS_READY_FD"

// readyReported is set once the parent was told: it is told once.
var readyReported atomic.Bool

// daemonize starts argv again in the background, without --daemon, and returns once the
// child's mount answers, or with the child's error. With no log file the child's output goes
// to /dev/null.
func daemonize(argv, env []string, logFile string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var args []string
	for _, a := range argv {
		if a != "--daemon" {
			args = append(args, a)
		}
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), env...), readyFDEnv+"=3") // with what fstab or -o gave
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if logFile == "" {
		devnull, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		cmd.Stdout, cmd.Stderr = devnull, devnull
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSpace(line)
	if err == nil && (line == "ok" || strings.HasPrefix(line, "ok ")) {
		fmt.Printf("kintfs: mounted in the background (pid %d): ready, %s\n", cmd.Process.Pid, strings.TrimPrefix(strings.TrimPrefix(line, "ok"), " "))
		return nil
	}
	if line == "" {
		werr := cmd.Wait()
		code := exitFailure
		var ee *exec.ExitError
		if errors.As(werr, &ee) && ee.ExitCode() > 0 {
			code = ee.ExitCode()
		}
		return exitCodeError{code: code, msg: fmt.Sprintf("the background mount exited before it was ready: %v", werr)}
	}
	_ = cmd.Wait()
	// "error: CODE MESSAGE": the child's own exit code, passed through
	var code int
	var msg string
	if _, err := fmt.Sscanf(line, "error: %d", &code); err == nil {
		msg = strings.TrimPrefix(line, fmt.Sprintf("error: %d ", code))
	} else {
		code, msg = exitFailure, strings.TrimPrefix(line, "error: ")
	}
	return exitCodeError{code: code, msg: msg}
}

// reportReadyState tells a waiting parent that the mount is up, and in what state (current
// at a seq, offline, ...).
func reportReadyState(state string) {
	if os.Getenv(readyFDEnv) == "" || !readyReported.CompareAndSwap(false, true) {
		return
	}
	f := os.NewFile(3, "ready")
	if f == nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "ok %s\n", strings.ReplaceAll(state, "\n", " "))
}

// reportReady tells a waiting parent whether the mount came up, and passes err through.
func reportReady(err error) error {
	if os.Getenv(readyFDEnv) == "" || !readyReported.CompareAndSwap(false, true) {
		return err
	}
	f := os.NewFile(3, "ready")
	if f == nil {
		return err
	}
	defer f.Close()
	if err != nil {
		fmt.Fprintf(f, "error: %d %s\n", exitCode(err), strings.ReplaceAll(err.Error(), "\n", " "))
	} else {
		fmt.Fprintln(f, "ok")
	}
	return err
}

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"
)

// nextSteps is what a foreground mount prints once it is mounted, for a first run: each
// command as it can be pasted into another shell (absolute paths, the binary as that shell
// finds it, KINT_HOME when it is not the default).
func nextSteps(absDir, kintfs string, quiet time.Duration) string {
	q := func(s string) string { return shellQuote(s) }
	state := filepath.Join(absDir, "state", "hello.txt")
	var b strings.Builder
	fmt.Fprintf(&b, "\nkintfs is mounted at %s. Next, in another shell:\n", absDir)
	fmt.Fprintf(&b, "  echo 'hello from kintfs' > %s\n", q(state))
	fmt.Fprintf(&b, "      write a row: state/ and reference/ take UTF-8 text, entity/CATEGORY/KEY a JSON value,\n")
	fmt.Fprintf(&b, "      a new file in journal/ one event (a JSON object); changes are anchored after %d s\n", int(quiet.Seconds()))
	fmt.Fprintf(&b, "      without a new one (KINT_QUIET_SECONDS), or at once with:\n")
	fmt.Fprintf(&b, "  echo flush > %s\n", q(filepath.Join(absDir, ".kint", "ctl")))
	fmt.Fprintf(&b, "  %s status\n", kintfs)
	fmt.Fprintf(&b, "      what is staged, held and anchored; the anchored epochs and their block times:\n")
	fmt.Fprintf(&b, "  cat %s\n", q(filepath.Join(absDir, ".kint", "blocks")))
	fmt.Fprintf(&b, "Ctrl-C here anchors what is staged, then unmounts.\n\n")
	return b.String()
}

// kintfsCommand is how another shell runs this binary: "kintfs" when that name on PATH is
// this binary, else its absolute path; KINT_HOME goes in front when it is set, since another
// shell may not have it.
func kintfsCommand(set settings) string {
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	self, _ = filepath.EvalSymlinks(self)
	cmd := shellQuote(self)
	if onPath, err := exec.LookPath("kintfs"); err == nil {
		if p, err := filepath.EvalSymlinks(onPath); err == nil && p == self {
			cmd = "kintfs"
		}
	}
	if home := set.given("KINT_HOME"); home != "" {
		if abs, err := filepath.Abs(home); err == nil {
			cmd = "KINT_HOME=" + shellQuote(abs) + " " + cmd
		}
	}
	return cmd
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '=' || r == ':' || r == '+' || r == ',' || r == '@' ||
			(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// showNextSteps says whether a mount prints the next steps: in the foreground, with --dev
// (the first run, make run) or on a terminal; never under systemd or as a --daemon child.
func showNextSteps(o *mountOptions, w io.Writer) bool {
	if os.Getenv(readyFDEnv) != "" || os.Getenv("NOTIFY_SOCKET") != "" {
		return false
	}
	if o.dev {
		return true
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

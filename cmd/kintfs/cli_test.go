package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// runCLI runs one kintfs command line in this process and returns its stdout, stderr and
// exit code.
func runCLI(t *testing.T, argv ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runIO(context.Background(), argv, &cmdIO{out: &out, err: &errb})
	return out.String(), errb.String(), code
}

// TestHelpOnStdout: --help, -h and help CMD print the usage and options on stdout and exit 0,
// for every command; no command at all is a usage error on stderr.
func TestHelpOnStdout(t *testing.T) {
	for _, argv := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		out, errs, code := runCLI(t, argv...)
		if code != 0 || errs != "" || !strings.Contains(out, "usage: kintfs COMMAND") || !strings.Contains(out, "mount") {
			t.Errorf("kintfs %v: exit %d, stdout %q, stderr %q", argv, code, out, errs)
		}
	}
	if out, errs, code := runCLI(t); code != exitUsage || out != "" || !strings.Contains(errs, "usage: kintfs COMMAND") {
		t.Errorf("kintfs: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, n := range commandNames() {
		for _, argv := range [][]string{{n, "--help"}, {n, "-h"}, {"help", n}} {
			out, errs, code := runCLI(t, argv...)
			if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: kintfs "+n+" ") {
				t.Errorf("kintfs %v: exit %d, stdout %q, stderr %q", argv, code, out, errs)
			}
		}
	}
	out, _, _ := runCLI(t, "mount", "--help")
	for _, want := range []string{"--umask", "--options", "-o,", "--uid", "--gid"} {
		if !strings.Contains(out, want) {
			t.Errorf("mount --help lacks %s:\n%s", want, out)
		}
	}
}

// TestDidYouMean: an unknown command or flag is refused with exit 2, naming the nearest.
func TestDidYouMean(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"moutn", "/mnt"}, `unknown command "moutn", did you mean mount?`},
		{[]string{"stauts"}, "did you mean status?"},
		{[]string{"help", "verfy"}, "did you mean verify?"},
		{[]string{"mount", "--umsak", "022", "/mnt"}, "unknown flag: --umsak, did you mean --umask?"},
		{[]string{"unmount", "--no-flsh", "/mnt"}, "did you mean --no-flush?"},
		{[]string{"status", "--jsn"}, "did you mean --json?"},
		{[]string{"completion", "bsh"}, "did you mean bash?"},
	} {
		out, errs, code := runCLI(t, c.argv...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("kintfs %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.argv, code, out, errs, c.want)
		}
	}
	if _, errs, _ := runCLI(t, "frobnicate"); strings.Contains(errs, "did you mean") {
		t.Errorf("a name near nothing got a suggestion: %q", errs)
	}
}

// TestVersion: the version, a commit line and the Go version, on stdout.
func TestVersion(t *testing.T) {
	for _, argv := range [][]string{{"version"}, {"--version"}} {
		out, errs, code := runCLI(t, argv...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || errs != "" || len(lines) != 3 || lines[0] != "kintfs "+version ||
			!strings.HasPrefix(lines[1], "commit ") || !strings.HasPrefix(lines[2], "go1.") {
			t.Errorf("kintfs %v: exit %d, stdout %q, stderr %q", argv, code, out, errs)
		}
	}
	old := commit
	commit = "0123456789ab"
	defer func() { commit = old }()
	if out, _, _ := runCLI(t, "version"); !strings.Contains(out, "commit 0123456789ab") {
		t.Errorf("version with -X main.commit: %q", out)
	}
}

// TestBashCompletion: the bash script loads in bash and completes a command, a flag of that
// command and help's argument.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed to load the completion script: %v", err)
	}
	out, errs, code := runCLI(t, "completion", "bash")
	if code != 0 || errs != "" {
		t.Fatalf("completion bash: exit %d: %s", code, errs)
	}
	script := filepath.Join(t.TempDir(), "kintfs.bash")
	if err := os.WriteFile(script, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		words string
		cword int
		want  string
	}{
		{"kintfs mou", 1, "mount"},
		{"kintfs mount --uma", 2, "--umask"},
		{"kintfs unmount --no", 2, "--no-flush"},
		{"kintfs help veri", 2, "verify"},
		{"kintfs completion fi", 2, "fish"},
	} {
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c",
			`source "$1" || exit 1; COMP_WORDS=($2); COMP_CWORD=$3; _kintfs; printf '%s\n' "${COMPREPLY[@]}"`,
			"bash", script, c.words, strconv.Itoa(c.cword))
		got, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(got)) != c.want {
			t.Errorf("completing %q: %q (%v), want %q", c.words, got, err, c.want)
		}
	}
	for _, shell := range []string{"zsh", "fish"} {
		out, _, code := runCLI(t, "completion", shell)
		if code != 0 {
			t.Fatalf("completion %s: exit %d", shell, code)
		}
		for _, n := range commandNames() {
			if !strings.Contains(out, n) {
				t.Errorf("the %s script lacks %s", shell, n)
			}
		}
		if !strings.Contains(out, "umask") {
			t.Errorf("the %s script lacks mount's flags", shell)
		}
	}
}

// TestManPage: the manual page names every command and every flag --help shows, and
// docs/kintfs.1, when it is there (make man), is the current one.
func TestManPage(t *testing.T) {
	out, _, code := runCLI(t, "man")
	if code != 0 || !strings.HasPrefix(out, ".TH KINTFS 1") {
		t.Fatalf("kintfs man: exit %d: %.100q", code, out)
	}
	for _, n := range commandNames() {
		if !strings.Contains(out, `.SS "kintfs `+roff(n)+" ") {
			t.Errorf("the man page lacks the command %s", n)
		}
		commandFlags(commands[n]).VisitAll(func(f *pflag.Flag) {
			if !strings.Contains(out, `\fB\-\-`+roff(f.Name)+`\fR`) {
				t.Errorf("the man page lacks %s --%s", n, f.Name)
			}
		})
	}
	if b, err := os.ReadFile("../../docs/kintfs.1"); err == nil && string(b) != out {
		t.Errorf("docs/kintfs.1 is not the current man page: run make man")
	}
}

// synopsisFlag finds the flags a README synopsis line names: --name (of --name, --name=x,
// [--name) and -x shorthands.
var synopsisFlag = regexp.MustCompile(`(?:^|[\s\[(|])(--?)([a-z][a-z0-9-]*)`)

// readmeSynopsis reads the README's command synopsis: for each command, the flags its lines
// name (a line starts with "kintfs NAME"; an indented line continues the one before).
func readmeSynopsis(t *testing.T) map[string]map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## Command line\n\n```\n")
	if i < 0 {
		t.Fatal("README.md has no ## Command line section with a synopsis block")
	}
	s = s[i+len("## Command line\n\n```\n"):]
	s = s[:strings.Index(s, "```")]
	out := map[string]map[string]bool{}
	cur := ""
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "kintfs ") {
			cur = strings.Fields(line)[1]
			if out[cur] == nil {
				out[cur] = map[string]bool{}
			}
			line = strings.TrimPrefix(line, "kintfs "+cur)
		} else if cur == "" || !strings.HasPrefix(line, " ") {
			continue
		}
		for _, m := range synopsisFlag.FindAllStringSubmatch(line, -1) {
			if m[1] == "-" && len(m[2]) != 1 {
				continue // a word with a dash, not a flag
			}
			out[cur][m[1]+m[2]] = true
		}
	}
	return out
}

// TestREADMESynopsisMatchesHelp: every command and every flag in -h is in the README's
// synopsis, and the synopsis names no command or flag that -h lacks.
func TestREADMESynopsisMatchesHelp(t *testing.T) {
	readme := readmeSynopsis(t)
	for _, n := range commandNames() {
		flags, ok := readme[n]
		if !ok {
			t.Errorf("README.md's Command line section has no line for `kintfs %s`: add one (kintfs %s -h shows its usage)", n, n)
			continue
		}
		fl := commandFlags(commands[n])
		fl.VisitAll(func(f *pflag.Flag) {
			if !flags["--"+f.Name] && (f.Shorthand == "" || !flags["-"+f.Shorthand]) {
				t.Errorf("README.md: the synopsis of `kintfs %s` lacks --%s, which kintfs %s -h has: add it to that line of the Command line section", n, f.Name, n)
			}
		})
		var names []string
		for f := range flags {
			names = append(names, f)
		}
		sort.Strings(names)
		for _, f := range names {
			name := strings.TrimLeft(f, "-")
			if f == "--help" || (len(f) == 2 && fl.ShorthandLookup(name) != nil) || (len(f) > 2 && fl.Lookup(name) != nil) {
				continue
			}
			t.Errorf("README.md: the synopsis of `kintfs %s` names %s, which kintfs %s -h does not have: remove it from that line, or add the flag", n, f, n)
		}
	}
	for n := range readme {
		if commands[n] == nil {
			t.Errorf("README.md's Command line section names `kintfs %s`, which is no command (kintfs --help lists them)", n)
		}
	}
}

// TestMountOptionsMatchFstab: every option of the table means the same through mount -o as
// through the mount.kintfs helper: the same flags and the same environment.
func TestMountOptionsMatchFstab(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "pass")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	values := map[string]string{"home": "/var/lib/kint", "tenant": "t2", "rpc": "http://127.0.0.1:1", "contract": "0x01",
		"quiet": "60", "size_trigger": "4096", "session_passphrase_file": secret, "poll": "10s", "log_file": "/tmp/kintfs.log",
		"file_mode": "0640", "dir_mode": "0750", "umask": "027", "uid": "1000", "gid": "1001", "vault_model": "full"}
	for _, m := range mountOptTable {
		t.Run(m.name, func(t *testing.T) {
			for _, kv := range []string{"KINT_HOME", "KINT_TENANT", "KINT_RPC_URL", "KINT_CONTRACT", "KINT_QUIET_SECONDS",
				"KINT_SIZE_TRIGGER_BYTES", "KINT_SESSION_PASSPHRASE"} {
				t.Setenv(kv, "")
			}
			opt := m.name
			if m.set == "" {
				v, ok := values[m.name]
				if !ok {
					t.Fatalf("no test value for %s=", m.name)
				}
				opt += "=" + v
			}
			// the helper: its argv parsed by the mount command, its environment as it sets it
			fm, err := parseFstab([]string{"dev", "/mnt/kint", "-o", "home=/var/lib/kint," + opt})
			if err != nil {
				t.Fatal(err)
			}
			fstabFlags, _ := mountFlagValues(t, fm.args[1:], false)
			fstabEnv := map[string]string{}
			for _, kv := range fm.env {
				k, v, _ := strings.Cut(kv, "=")
				fstabEnv[k] = v
			}
			// mount -o
			mountFlags, mountSettings := mountFlagValues(t, []string{"--daemon", "-o", "home=/var/lib/kint," + opt, "/mnt/kint"}, true)
			for k, v := range fstabEnv {
				if k == "KINT_TENANT" && m.name != "tenant" {
					continue // the helper's first argument; mount -o leaves the tenant to the environment
				}
				if got := envSettings().with(mountSettings).given(k); got != v {
					t.Errorf("%s: the helper sets %s=%q, mount -o %q", opt, k, v, got)
				}
			}
			for k, v := range fstabFlags {
				if k != "options" && mountFlags[k] != v {
					t.Errorf("%s: the helper gives --%s %q, mount -o %q", opt, k, v, mountFlags[k])
				}
			}
		})
	}
	if _, _, err := translateMountOpt("ro=1"); err == nil || !strings.Contains(err.Error(), "takes no value") {
		t.Errorf("ro=1: %v", err)
	}
	if _, _, err := translateMountOpt("umask"); err == nil || !strings.Contains(err.Error(), "needs a value") {
		t.Errorf("umask: %v", err)
	}
	if _, errs, code := runCLI(t, "mount", "-o", "passphrase=x", "/nonexistent"); code != exitUsage || !strings.Contains(errs, "would put a secret in the option string") {
		t.Errorf("mount -o passphrase=: exit %d: %s", code, errs)
	}
	if _, errs, code := runCLI(t, "mount", "-o", "umask=999", filepath.Join(t.TempDir())); code != exitUsage || !strings.Contains(errs, "--umask") {
		t.Errorf("mount -o umask=999: exit %d: %s", code, errs)
	}
}

// mountFlagValues parses argv with kintfs mount's flags, applying -o when withOpts, and
// returns every flag's value and the settings -o gave.
func mountFlagValues(t *testing.T, argv []string, withOpts bool) (flags, set map[string]string) {
	t.Helper()
	fl := commandFlags(commands["mount"])
	if err := fl.Parse(argv); err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	if withOpts {
		opts, err := fl.GetStringSlice("options")
		if err != nil {
			t.Fatal(err)
		}
		if set, err = applyMountOpts(fl, opts); err != nil {
			t.Fatalf("%v: %v", argv, err)
		}
	}
	flags = map[string]string{}
	fl.VisitAll(func(f *pflag.Flag) { flags[f.Name] = f.Value.String() })
	return flags, set
}

// TestMountChecksMountpointFirst: a missing, non-directory or non-empty mountpoint is refused
// with exit 2 before anything contacts a chain (none is configured here: the refusal must
// come first).
func TestMountChecksMountpointFirst(t *testing.T) {
	t.Setenv("KINT_HOME", filepath.Join(t.TempDir(), "home"))
	t.Setenv("KINT_RPC_URL", "http://127.0.0.1:1")
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mount", filepath.Join(dir, "missing")}, "no such file or directory: create it first (mkdir -p"},
		{[]string{"mount", "--daemon", filepath.Join(dir, "missing")}, "no such file or directory"},
		{[]string{"mount", "--dev", file}, "is not a directory"},
		{[]string{"mount", dir}, "is not empty: empty it, pick another directory, or pass --allow-non-empty"},
		{[]string{"mount", "-o", "ro", dir}, "is not empty"},
		{[]string{"mount", "--uid", "-5", t.TempDir()}, "--uid -5: give a numeric id"},
		{[]string{"mount"}, "mount takes one mountpoint"},
	} {
		out, errs, code := runCLI(t, c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) || strings.Contains(errs+out, "offline") {
			t.Errorf("kintfs %v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errs, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("KINT_HOME"))); err == nil {
		t.Errorf("a refused mount created KINT_HOME")
	}
}

// TestNextStepsQuoting: the next steps name paths a shell takes as printed, spaces and quotes
// included, and the binary with KINT_HOME in front when it is set.
func TestNextStepsQuoting(t *testing.T) {
	if got := shellQuote("/tmp/my kint/it's"); got != `'/tmp/my kint/it'\''s'` {
		t.Errorf("shellQuote: %s", got)
	}
	if got := shellQuote("/root/kint/.kint/ctl"); got != "/root/kint/.kint/ctl" {
		t.Errorf("shellQuote of a plain path: %s", got)
	}
	t.Setenv("KINT_HOME", "/var/lib/kint home")
	cmd := kintfsCommand(envSettings())
	if !strings.HasPrefix(cmd, `KINT_HOME='/var/lib/kint home' `) {
		t.Errorf("kintfsCommand: %s", cmd)
	}
	text := nextSteps("/mnt/my kint", cmd, 300*time.Second)
	for _, want := range []string{`echo flush > '/mnt/my kint/.kint/ctl'`, "  " + cmd + " status\n", "after 300 s", "Ctrl-C"} {
		if !strings.Contains(text, want) {
			t.Errorf("next steps lack %q:\n%s", want, text)
		}
	}
}

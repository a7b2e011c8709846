package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recoveryCodeIn is the code in a recovery file's text: its last line that is not empty (kint's
// layout puts the code alone there).
func recoveryCodeIn(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// TestSecretsReadAsKintReadsThem: passphrases and recovery codes lose their surrounding white
// space (spaces, tabs, CR, LF) on stdin and in files, for init and rekey, as kint's reader
// strips them: the bytes kint accepts open the same vault here. A secret that is nothing but
// white space is refused (exit 2) before anything is read from the chain or written.
func TestSecretsReadAsKintReadsThem(t *testing.T) {
	dc := startDevchain(t)
	a := newMachine(t, dc, "secrets")
	out := a.mustRun("  padded pass  \n", "init", "--owner", a.owner(), "--new-vault", "--passphrase-stdin")
	if !strings.Contains(out, "created a new vault") {
		t.Fatalf("init: %s", out)
	}
	rec, _ := filepath.Glob(filepath.Join(a.home, "RECOVERY-*.txt"))
	if len(rec) != 1 {
		t.Fatalf("recovery files: %v", rec)
	}
	text, err := os.ReadFile(rec[0])
	if err != nil {
		t.Fatal(err)
	}
	code := recoveryCodeIn(string(text))
	if !strings.HasPrefix(string(text), "kint recovery code for owner "+a.owner()+", space ") {
		t.Fatalf("recovery file is not in kint's layout: %q", text)
	}

	// the same passphrase, padded otherwise, opens the wraps: offline init unlocks only with the
	// very key-encryption key the first init wrapped the data key under
	offline := []string{"KINT_OFFLINE=1"}
	a.extra = offline
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, stdin string
		args        []string
	}{
		{"passphrase stdin, tabs and CRLF", "\t padded pass\t\r\n", []string{"--passphrase-stdin"}},
		{"passphrase stdin, no newline", "padded pass", []string{"--passphrase-stdin"}},
		{"passphrase file, CRLF", "", []string{"--passphrase-file", write("pass-crlf", "padded pass\r\n")}},
		{"passphrase file, spaces and tabs", "", []string{"--passphrase-file", write("pass-sp", " \t padded pass \t \n\n")}},
		{"recovery code stdin, CRLF and spaces", "  " + code + " \r\n", []string{"--recovery-code-stdin"}},
		{"recovery code file, tabs", "", []string{"--recovery-code-file", write("code", "\t"+code+"\t\r\n")}},
	} {
		out, errs, exit := a.run(tc.stdin, append([]string{"init", "--owner", a.owner()}, tc.args...)...)
		if exit != 0 || !strings.Contains(out, "unlocked data key") {
			t.Errorf("%s: exit %d\n%s%s", tc.name, exit, out, errs)
		}
	}
	// a different passphrase inside the white space still fails: only the edges are stripped
	if _, errs, exit := a.run("padded  pass\n", "init", "--owner", a.owner(), "--passphrase-stdin"); exit != 2 || !strings.Contains(errs, "opens none") {
		t.Errorf("inner white space: exit %d: %s", exit, errs)
	}

	// empty after stripping: refused by name, exit 2, for every reader
	a.extra = nil
	vault, _ := os.ReadFile(filepath.Join(a.home, "vault.json"))
	for _, tc := range []struct {
		name, stdin, what string
		args              []string
	}{
		{"init passphrase stdin", " \t\r\n", "passphrase", []string{"init", "--owner", a.owner(), "--passphrase-stdin"}},
		{"init passphrase file", "", "passphrase", []string{"init", "--owner", a.owner(), "--passphrase-file", write("blank", "\r\n\t \n")}},
		{"init recovery code stdin", "\n\n", "recovery code", []string{"init", "--owner", a.owner(), "--recovery-code-stdin"}},
		{"init recovery code file", "", "recovery code", []string{"init", "--owner", a.owner(), "--recovery-code-file", write("blank-code", "  ")}},
		{"rekey passphrase stdin", "\t\t\r\n", "passphrase", []string{"rekey", "--passphrase-stdin"}},
		{"rekey passphrase file", "", "passphrase", []string{"rekey", "--passphrase-file", write("blank-rekey", " \n")}},
	} {
		_, errs, exit := a.run(tc.stdin, tc.args...)
		if exit != 2 || !strings.Contains(errs, "the "+tc.what+" is empty") {
			t.Errorf("%s: exit %d, want 2 and %q: %s", tc.name, exit, "the "+tc.what+" is empty", errs)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(a.home, "vault.json")); string(after) != string(vault) {
		t.Errorf("a refused secret changed vault.json")
	}

	// mount --dev: the passphrase from KINT_PASSPHRASE is stripped too, and a blank one refused
	d := newMachine(t, dc, "secrets-dev")
	d.extra = []string{"KINT_PASSPHRASE= \t\r\n"}
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, errs, exit := d.run("", "mount", "--dev", mnt); exit != 2 || !strings.Contains(errs, "the passphrase in KINT_PASSPHRASE is empty") {
		t.Errorf("mount --dev with a blank KINT_PASSPHRASE: exit %d: %s", exit, errs)
	}
}

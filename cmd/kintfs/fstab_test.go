package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseFstab(t *testing.T) {
	t.Setenv("KINT_HOME", "")
	secret := filepath.Join(t.TempDir(), "pass")
	if err := os.WriteFile(secret, []byte(" \ts3cret \r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := parseFstab([]string{"dev", "/mnt/kint", "-o",
		"rw,_netdev,nofail,noauto,x-systemd.automount,home=/var/lib/kint,rpc=http://127.0.0.1:8545,poll=10s,quiet=60,allow_other,ro,session_passphrase_file=" + secret})
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Join(m.env, " ")
	for _, want := range []string{"KINT_HOME=/var/lib/kint", "KINT_TENANT=dev", "KINT_RPC_URL=http://127.0.0.1:8545", "KINT_QUIET_SECONDS=60", "KINT_SESSION_PASSPHRASE=s3cret"} {
		if !strings.Contains(env, want) {
			t.Errorf("env %q lacks %q", env, want)
		}
	}
	args := strings.Join(m.args, " ")
	if args != "mount --daemon --poll 10s --allow-other --read-only /mnt/kint" {
		t.Errorf("args = %q", args)
	}
	if strings.Contains(args, "s3cret") {
		t.Errorf("a secret reached argv: %q", args)
	}
}

func TestParseFstabRefusals(t *testing.T) {
	t.Setenv("KINT_HOME", "")
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"dev", "/mnt/kint"}, "give home=DIR"},
		{[]string{"dev", "/mnt/kint", "-o", "home=/h,passphrase=hunter2"}, "would put a secret in the option string"},
		{[]string{"dev", "/mnt/kint", "-o", "home=/h,frobnicate"}, `unknown option "frobnicate"`},
		{[]string{"dev"}, "usage: mount.kintfs"},
		{[]string{"dev", "/mnt", "--bogus"}, "unknown flag --bogus"},
	} {
		_, err := parseFstab(c.argv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.argv, err, c.want)
		}
	}
}

func TestParseFstabModes(t *testing.T) {
	m, err := parseFstab([]string{"dev", "/mnt/kint", "-o", "home=/var/lib/kint,file_mode=0640,dir_mode=0750"})
	if err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(m.args, " "); args != "mount --daemon --file-mode 0640 --dir-mode 0750 /mnt/kint" {
		t.Errorf("args = %q", args)
	}
	if f, d, err := parseModes("0640", "750"); err != nil || f != 0o640 || d != 0o750 {
		t.Errorf("parseModes = %o %o %v", f, d, err)
	}
	for _, bad := range []string{"", "0", "888", "01777", "rw"} {
		if _, _, err := parseModes(bad, "0755"); err == nil {
			t.Errorf("parseModes(%q) took it", bad)
		}
	}
}

// TestParseFstabVaultModel: vault_model= becomes --vault-model, which mount checks.
func TestParseFstabVaultModel(t *testing.T) {
	m, err := parseFstab([]string{"dev", "/mnt/kint", "-o", "home=/var/lib/kint,vault_model=full"})
	if err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(m.args, " "); args != "mount --daemon --vault-model full /mnt/kint" {
		t.Errorf("args = %q", args)
	}
	if _, err := checkMountFlags(&mountOptions{vaultModel: "everything"}, []string{"/mnt/kint"}); err == nil || !strings.Contains(err.Error(), "--vault-model is kint or full") {
		t.Errorf("mount --vault-model everything: %v", err)
	}
}

// TestFstabBlankSessionPassphrase: a session_passphrase_file holding only white space is
// refused by name rather than passed on as an empty secret.
func TestFstabBlankSessionPassphrase(t *testing.T) {
	t.Setenv("KINT_HOME", "")
	secret := filepath.Join(t.TempDir(), "pass")
	if err := os.WriteFile(secret, []byte(" \t\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := parseFstab([]string{"dev", "/mnt/kint", "-o", "home=/var/lib/kint,session_passphrase_file=" + secret})
	if err == nil || !strings.Contains(err.Error(), "session passphrase in "+secret+" is empty") {
		t.Fatalf("blank session_passphrase_file: %v", err)
	}
}

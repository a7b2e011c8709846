package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"kintfs/replica/homedir"
)

// mount.kintfs is how mount(8) and fstab lines of type kintfs reach kintfs:
//
//	mount.kintfs TENANT MOUNTPOINT [-o OPTIONS] [-s] [-n] [-v]
//
// The options become kintfs's own environment and flags; secrets only ever come from a file
// (session_passphrase_file=) or the environment, never from the option string, and $HOME is
// never consulted: home= (or KINT_HOME) names the state directory.

// fstabIgnored are options that belong to mount(8) or systemd, not to kintfs.
var fstabIgnored = map[string]bool{"_netdev": true, "nofail": true, "noauto": true, "auto": true, "defaults": true,
	"rw": true, "user": true, "users": true, "nouser": true, "exec": true, "noexec": true, "suid": true, "nosuid": true,
	"dev": true, "nodev": true, "async": true, "sync": true, "atime": true, "noatime": true, "relatime": true}

// fstabMount is what one mount.kintfs call asks for.
type fstabMount struct {
	env  []string
	args []string // kintfs's own argv
}

// fstabEnv are the options that become kintfs's environment, and fstabFlags those that
// become a flag with the option's value.
var (
	fstabEnv = map[string]string{"rpc": "KINT_RPC_URL", "contract": "KINT_CONTRACT", "quiet": "KINT_QUIET_SECONDS",
		"size_trigger": "KINT_SIZE_TRIGGER_BYTES"}
	fstabFlags = map[string]string{"poll": "--poll", "log_file": "--log-file", "file_mode": "--file-mode", "dir_mode": "--dir-mode"}
	// fstabSwitches become a flag of their own, with no value.
	fstabSwitches = map[string]string{"allow_other": "--allow-other", "allow_non_empty": "--allow-non-empty",
		"nonempty": "--allow-non-empty", "ro": "--read-only", "noxattrs": "--xattrs=false"}
)

// parseFstab turns mount.kintfs's arguments into kintfs's environment and argv.
func parseFstab(argv []string) (*fstabMount, error) {
	pos, opts, err := splitFstabArgs(argv)
	if err != nil {
		return nil, err
	}
	m := &fstabMount{args: []string{"mount", "--daemon"}}
	tenant, home := pos[0], os.Getenv("KINT_HOME")
	for _, o := range opts {
		name, val, hasVal := strings.Cut(strings.TrimSpace(o), "=")
		switch {
		case name == "tenant" && hasVal:
			tenant = val
		case name == "home" && hasVal:
			home = val
		default:
			if err := m.option(o, name, val, hasVal); err != nil {
				return nil, err
			}
		}
	}
	if home == "" {
		return nil, fmt.Errorf("mount.kintfs: give home=DIR (or KINT_HOME): a mount helper does not guess from $HOME")
	}
	abs, err := filepath.Abs(home)
	if err != nil {
		return nil, err
	}
	m.env = append(m.env, "KINT_HOME="+abs, "KINT_TENANT="+tenant)
	m.args = append(m.args, pos[1])
	return m, nil
}

// splitFstabArgs reads mount(8)'s command line: the two positional arguments (tenant and
// mountpoint) and the -o options, split at commas.
func splitFstabArgs(argv []string) (pos, opts []string, err error) {
	for i := 0; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "-o" && i+1 < len(argv):
			opts = append(opts, strings.Split(argv[i+1], ",")...)
			i++
		case strings.HasPrefix(a, "-o"):
			opts = append(opts, strings.Split(a[2:], ",")...)
		case a == "-s" || a == "-n" || a == "-f" || a == "-v":
			// sloppy, no mtab, fake, verbose: mount(8)'s own
		case strings.HasPrefix(a, "-"):
			return nil, nil, fmt.Errorf("mount.kintfs: unknown flag %s", a)
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) != 2 {
		return nil, nil, fmt.Errorf("usage: mount.kintfs TENANT MOUNTPOINT [-o home=DIR,tenant=T,rpc=URL,poll=30s,quiet=300,allow_other,ro]")
	}
	return pos, opts, nil
}

// option adds one -o option (o, read as name=val) to the environment or the argv; the options
// of mount(8) and systemd are ignored, and a secret in the option string is refused.
func (m *fstabMount) option(o, name, val string, hasVal bool) error {
	switch {
	case name == "" || fstabIgnored[name] || strings.HasPrefix(name, "x-systemd.") || strings.HasPrefix(name, "comment="):
	case fstabEnv[name] != "" && hasVal:
		m.env = append(m.env, fstabEnv[name]+"="+val)
	case fstabFlags[name] != "" && hasVal:
		m.args = append(m.args, fstabFlags[name], val)
	case name == "session_passphrase_file" && hasVal:
		b, err := os.ReadFile(val)
		if err != nil {
			return fmt.Errorf("mount.kintfs: session_passphrase_file: %w", err)
		}
		pass, err := homedir.CleanSecret(string(b), "session passphrase in "+val)
		if err != nil {
			return fmt.Errorf("mount.kintfs: session_passphrase_file: %w", err)
		}
		m.env = append(m.env, "KINT_SESSION_PASSPHRASE="+pass)
	case fstabSwitches[name] != "":
		m.args = append(m.args, fstabSwitches[name])
	case name == "passphrase" || name == "session_passphrase" || name == "key":
		return fmt.Errorf("mount.kintfs: %s= would put a secret in the option string; use session_passphrase_file= or the environment", name)
	default:
		return fmt.Errorf("mount.kintfs: unknown option %q", o)
	}
	return nil
}

// runFstab is main for the mount.kintfs name.
func runFstab(argv []string) int {
	m, err := parseFstab(argv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitUsage
	}
	for _, kv := range m.env {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	return run(m.args)
}

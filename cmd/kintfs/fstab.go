package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// parseFstab turns mount.kintfs's arguments into kintfs's environment and argv.
func parseFstab(argv []string) (*fstabMount, error) {
	var pos []string
	var opts []string
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
			return nil, fmt.Errorf("mount.kintfs: unknown flag %s", a)
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) != 2 {
		return nil, fmt.Errorf("usage: mount.kintfs TENANT MOUNTPOINT [-o home=DIR,tenant=T,rpc=URL,poll=30s,quiet=300,allow_other,ro]")
	}
	m := &fstabMount{args: []string{"mount", "--daemon"}}
	tenant, home := pos[0], os.Getenv("KINT_HOME")
	for _, o := range opts {
		name, val, hasVal := strings.Cut(strings.TrimSpace(o), "=")
		switch {
		case name == "" || fstabIgnored[name] || strings.HasPrefix(name, "x-systemd.") || strings.HasPrefix(name, "comment="):
		case name == "tenant" && hasVal:
			tenant = val
		case name == "home" && hasVal:
			home = val
		case name == "rpc" && hasVal:
			m.env = append(m.env, "KINT_RPC_URL="+val)
		case name == "contract" && hasVal:
			m.env = append(m.env, "KINT_CONTRACT="+val)
		case name == "quiet" && hasVal:
			m.env = append(m.env, "KINT_QUIET_SECONDS="+val)
		case name == "size_trigger" && hasVal:
			m.env = append(m.env, "KINT_SIZE_TRIGGER_BYTES="+val)
		case name == "poll" && hasVal:
			m.args = append(m.args, "--poll", val)
		case name == "log_file" && hasVal:
			m.args = append(m.args, "--log-file", val)
		case name == "session_passphrase_file" && hasVal:
			b, err := os.ReadFile(val)
			if err != nil {
				return nil, fmt.Errorf("mount.kintfs: session_passphrase_file: %w", err)
			}
			m.env = append(m.env, "KINT_SESSION_PASSPHRASE="+strings.TrimSpace(string(b)))
		case name == "allow_other":
			m.args = append(m.args, "--allow-other")
		case name == "allow_non_empty" || name == "nonempty":
			m.args = append(m.args, "--allow-non-empty")
		case name == "ro":
			m.args = append(m.args, "--read-only")
		case name == "noxattrs":
			m.args = append(m.args, "--xattrs=false")
		case (name == "file_mode" || name == "dir_mode") && hasVal:
			m.args = append(m.args, "--"+strings.ReplaceAll(name, "_", "-"), val)
		case name == "passphrase" || name == "session_passphrase" || name == "key":
			return nil, fmt.Errorf("mount.kintfs: %s= would put a secret in the option string; use session_passphrase_file= or the environment", name)
		default:
			return nil, fmt.Errorf("mount.kintfs: unknown option %q", o)
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

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
// The options become kintfs's own settings and flags; secrets only ever come from a file
// (session_passphrase_file=) or the environment, never from the option string, and $HOME is
// never consulted: home= (or KINT_HOME) names the state directory.

// fstabMount is what one mount.kintfs call asks for.
type fstabMount struct {
	env  []string
	args []string // kintfs's own argv
}

// parseFstab turns mount.kintfs's arguments into kintfs's settings and argv; home is
// KINT_HOME of the environment.
func parseFstab(argv []string) (*fstabMount, error) { return parseFstabIn(envSettings(), argv) }

func parseFstabIn(set settings, argv []string) (*fstabMount, error) {
	pos, opts, err := splitFstabArgs(argv)
	if err != nil {
		return nil, err
	}
	m := &fstabMount{args: []string{"mount", "--daemon"}}
	tenant, home := pos[0], set.given("KINT_HOME")
	for _, o := range opts {
		name, val, hasVal := strings.Cut(strings.TrimSpace(o), "=")
		switch {
		case name == "tenant" && hasVal:
			tenant = val
		case name == "home" && hasVal:
			home = val
		default:
			if err := m.option(o); err != nil {
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

// option adds one -o option (o, read as name=val) to the environment or the argv, by the
// table mount -o uses too.
func (m *fstabMount) option(o string) error {
	env, args, err := translateMountOpt(o)
	if err != nil {
		return fmt.Errorf("mount.kintfs: %w", err)
	}
	m.env, m.args = append(m.env, env...), append(m.args, args...)
	return nil
}

// runFstab is main for the mount.kintfs name.
func runFstab(argv []string) int {
	set := envSettings()
	m, err := parseFstabIn(set, argv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitUsage
	}
	return runWith(set.with(envMap(m.env)), m.args)
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"kintfs/replica/homedir"
)

// mountOpt is one mount option as fstab and mount -o spell it (name or name=value), and what
// it becomes: a variable of kintfs's environment or a flag of kintfs mount. The one table
// serves the mount.kintfs helper and `kintfs mount -o` alike.
type mountOpt struct {
	name string
	env  string // the environment variable the value goes to
	flag string // the mount flag the value goes to
	set  string // for an option without a value: the value its flag is given
	file bool   // the value names a file whose content (trimmed) is the variable's value
}

// mountOptTable lists every kintfs option of fstab and -o. home= and tenant= go to the
// environment too; the helper also requires home= and defaults the tenant to its first
// argument.
var mountOptTable = append(settingMountOpts(), []mountOpt{
	{name: "poll", flag: "poll"},
	{name: "log_file", flag: "log-file"},
	{name: "file_mode", flag: "file-mode"},
	{name: "dir_mode", flag: "dir-mode"},
	{name: "umask", flag: "umask"},
	{name: "vault_model", flag: "vault-model"},
	{name: "uid", flag: "uid"},
	{name: "gid", flag: "gid"},
	{name: "allow_other", flag: "allow-other", set: "true"},
	{name: "allow_non_empty", flag: "allow-non-empty", set: "true"},
	{name: "nonempty", flag: "allow-non-empty", set: "true"},
	{name: "ro", flag: "read-only", set: "true"},
	{name: "noxattrs", flag: "xattrs", set: "false"},
}...)

// settingMountOpts are the options of the settings table that have an fstab key.
func settingMountOpts() []mountOpt {
	var opts []mountOpt
	for _, s := range settingsTable {
		if s.fstab != "" {
			opts = append(opts, mountOpt{name: s.fstab, env: s.env, file: s.file})
		}
	}
	return opts
}

// mountOptIgnored are options that belong to mount(8) or systemd, not to kintfs.
var mountOptIgnored = map[string]bool{"_netdev": true, "nofail": true, "noauto": true, "auto": true, "defaults": true,
	"rw": true, "user": true, "users": true, "nouser": true, "exec": true, "noexec": true, "suid": true, "nosuid": true,
	"dev": true, "nodev": true, "async": true, "sync": true, "atime": true, "noatime": true, "relatime": true}

// mountOptNames lists the option names, for the help and errors.
func mountOptNames() string {
	var names []string
	for _, o := range mountOptTable {
		if o.set != "" {
			names = append(names, o.name)
		} else {
			names = append(names, o.name+"=")
		}
	}
	return strings.Join(names, ",")
}

// translateMountOpt turns one option (name or name=value) into environment entries and mount
// flags; an option of mount(8) or systemd gives neither. A secret in the option string is
// refused: it would show in the process list and in /proc/mounts.
func translateMountOpt(o string) (env, args []string, err error) {
	o = strings.TrimSpace(o)
	name, val, hasVal := strings.Cut(o, "=")
	if name == "" || mountOptIgnored[name] || strings.HasPrefix(name, "x-systemd.") || strings.HasPrefix(o, "comment=") {
		return nil, nil, nil
	}
	if name == "passphrase" || name == "session_passphrase" || name == "key" {
		return nil, nil, fmt.Errorf("%s= would put a secret in the option string; use session_passphrase_file= or the environment", name)
	}
	for _, m := range mountOptTable {
		if m.name != name {
			continue
		}
		switch {
		case m.set != "" && hasVal:
			return nil, nil, fmt.Errorf("option %q takes no value", name)
		case m.set != "":
			if m.set == "true" {
				return nil, []string{"--" + m.flag}, nil
			}
			return nil, []string{"--" + m.flag + "=" + m.set}, nil
		case !hasVal:
			return nil, nil, fmt.Errorf("option %q needs a value (%s=...)", name, name)
		case m.file:
			b, err := os.ReadFile(val)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", name, err)
			}
			secret, err := homedir.CleanSecret(string(b), "session passphrase in "+val)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", name, err)
			}
			return []string{m.env + "=" + secret}, nil, nil
		case m.env == "KINT_HOME":
			abs, err := filepath.Abs(val)
			if err != nil {
				return nil, nil, err
			}
			return []string{m.env + "=" + abs}, nil, nil
		case m.env != "":
			return []string{m.env + "=" + val}, nil, nil
		default:
			return nil, []string{"--" + m.flag, val}, nil
		}
	}
	var names []string
	for _, m := range mountOptTable {
		names = append(names, m.name)
	}
	return nil, nil, fmt.Errorf("unknown option %q%s (the options: %s)", o, didYouMean(name, names, ""), mountOptNames())
}

// applyMountOpts applies mount -o's options: the flags they stand for are set in fl (after
// the flags given as such, so -o has the last word), and the settings they stand for are
// returned, to go on top of the environment's.
func applyMountOpts(fl *pflag.FlagSet, opts []string) (map[string]string, error) {
	var env, args []string
	for _, o := range opts {
		e, a, err := translateMountOpt(o)
		if err != nil {
			return nil, usagef("-o: %v", err)
		}
		env, args = append(env, e...), append(args, a...)
	}
	for i := 0; i < len(args); i++ {
		name, val, ok := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
		if !ok {
			if f := fl.Lookup(name); f != nil && f.NoOptDefVal == "" {
				i++
				val = args[i]
			} else {
				val = "true"
			}
		}
		if err := fl.Set(name, val); err != nil {
			return nil, usagef("-o: %s: %v", name, err)
		}
	}
	return envMap(env), nil
}

// envMap reads KEY=VALUE entries.
func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

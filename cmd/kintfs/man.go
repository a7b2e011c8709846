package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// manPage is kintfs(1) in roff, made from the command table and the flag sets that --help
// prints, so that the two never disagree. make man writes it to docs/kintfs.1.
func manPage() string {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH KINTFS 1 \"\" \"kintfs %s\" \"User Commands\"\n", version)
	b.WriteString(".SH NAME\nkintfs \\- an encrypted, chain\\-anchored memory vault, mounted as a directory\n")
	b.WriteString(".SH SYNOPSIS\n.B kintfs\n.I COMMAND\n[\\fIoptions\\fR]\n.br\n.B mount.kintfs\n.I TENANT MOUNTPOINT\n[\\fB\\-o\\fR \\fIoptions\\fR]\n")
	b.WriteString(".SH DESCRIPTION\n")
	b.WriteString(roff("kintfs mounts a kint memory vault as an ordinary directory. The vault lives on Base as a chain of epochs: "+
		"encrypted change sets anchored by the EpochAnchor contract. Secrets are read from stdin, a file or the environment, "+
		"never from the command line.") + "\n")
	b.WriteString(".SH COMMANDS\n")
	for _, n := range commandNames() {
		c := commands[n]
		fmt.Fprintf(&b, ".SS \"%s\"\n", roff("kintfs "+c.name+" "+c.usage))
		b.WriteString(roff(c.short) + "\n")
		commandFlags(c).VisitAll(func(f *pflag.Flag) {
			b.WriteString(".TP\n")
			name := "\\fB\\-\\-" + roff(f.Name) + "\\fR"
			if f.Shorthand != "" {
				name = "\\fB\\-" + roff(f.Shorthand) + "\\fR, " + name
			}
			if typ, _ := pflag.UnquoteUsage(f); typ != "" && f.NoOptDefVal == "" {
				name += " \\fI" + roff(typ) + "\\fR"
			}
			b.WriteString(name + "\n" + roff(f.Usage))
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" && f.DefValue != "0" && f.DefValue != "-1" {
				b.WriteString(" (default " + roff(f.DefValue) + ")")
			}
			b.WriteString("\n")
		})
	}
	b.WriteString(".SH MOUNT OPTIONS\n")
	b.WriteString(roff("mount -o and the fstab helper mount.kintfs take the same options, comma-separated: "+strings.ReplaceAll(mountOptNames(), ",", ", ")+
		". _netdev, nofail, noauto and x-systemd.* are left to mount and systemd.") + "\n")
	b.WriteString(".SH ENVIRONMENT\n")
	for _, st := range settingsTable {
		what := st.help
		if st.def != "" {
			what += " (default " + st.def + ")"
		}
		if st.fstab != "" {
			what += "; mount option " + st.fstab + "="
			if st.file {
				what += " (a file that holds it)"
			}
		}
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", roff(st.env), roff(what))
	}
	b.WriteString(".SH EXIT STATUS\n")
	for _, e := range []struct {
		code int
		what string
	}{
		{exitOK, "done"},
		{exitFailure, "an unexpected fault (I/O, a crashed dependency)"},
		{exitUsage, "usage or refusal"},
		{exitKey, "the data key or session key is missing, expired or not authorized"},
		{exitMoved, "the chain moved, or a fork"},
		{exitRefused, "another push or pull refusal (a gap, offline, a revert, a row too large)"},
		{exitStaleRPC, "a stale or lying RPC"},
		{exitMountBusy, "the mount is busy and was not unmounted"},
	} {
		fmt.Fprintf(&b, ".TP\n%d\n%s\n", e.code, roff(e.what))
	}
	b.WriteString(".SH FILES\n.TP\n~/.kint\n" + roff("KINT_HOME: the vault's configuration, cached keys and local state (mode 0700)") + "\n")
	b.WriteString(".SH SEE ALSO\n.BR fusermount3 (1),\n.BR fstab (5)\n")
	return b.String()
}

// roff escapes text for a roff line: backslashes, dashes, and a leading dot or quote.
func roff(s string) string {
	s = strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

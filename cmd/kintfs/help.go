package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// The help, the man page and the shell completions are all made from the command table
// (commands) and each command's flag set, so that they cannot disagree with what parses.

// commit is the source revision, set at build time (-ldflags "-X main.commit=..."); when it
// is empty, the revision Go recorded in the binary, if any, is used.
var commit string

func init() {
	register(&command{
		name:  "help",
		usage: "[COMMAND]",
		short: "show the commands, or one command's usage and options",
		run: func(ctx context.Context, cio *cmdIO, args []string) error {
			if len(args) == 0 {
				printUsage(cio.out)
				return nil
			}
			c, err := lookupCommand(args[0])
			if err != nil {
				return err
			}
			writeCommandHelp(cio.out, c)
			return nil
		},
	})
	register(&command{
		name:  "version",
		short: "print the version, the source commit and the Go version it was built with",
		run: func(ctx context.Context, cio *cmdIO, args []string) error {
			fmt.Fprint(cio.out, versionText())
			return nil
		},
	})
}

// versionText is what kintfs version prints.
func versionText() string {
	rev, modified := commit, false
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && rev == "":
				rev = s.Value
			case s.Key == "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if rev == "" {
		rev = "unknown (build with make, or go build with VCS stamping)"
	} else if modified {
		rev += " (with uncommitted changes)"
	}
	return fmt.Sprintf("kintfs %s\ncommit %s\n%s %s/%s\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// commandNames lists the commands in order.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// lookupCommand finds a command by name, or says which one was meant.
func lookupCommand(name string) (*command, error) {
	if c := commands[name]; c != nil {
		return c, nil
	}
	return nil, usagef("unknown command %q%s (kintfs --help lists them)", name, didYouMean(name, commandNames(), ""))
}

// printUsage writes the top-level help.
func printUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("kintfs: an encrypted, chain-anchored memory vault, mounted as a directory\n\nusage: kintfs COMMAND [options]\n\ncommands:\n")
	for _, n := range commandNames() {
		fmt.Fprintf(&b, "  %-18s %s\n", n, commands[n].short)
	}
	b.WriteString("\nkintfs help COMMAND (or kintfs COMMAND --help) shows a command's options. Secrets are read\nfrom stdin, a file or the environment, never from the command line.\n")
	fmt.Fprint(w, b.String())
}

// commandFlags is a fresh flag set of c, for help, the man page and completions.
func commandFlags(c *command) *pflag.FlagSet {
	fl, _ := c.flagSet(io.Discard)
	return fl
}

// writeCommandHelp writes c's usage, what it does and its options.
func writeCommandHelp(w io.Writer, c *command) {
	fl := commandFlags(c)
	fmt.Fprintf(w, "usage: kintfs %s %s\n\n%s\n", c.name, c.usage, c.short)
	if fl.HasFlags() {
		fmt.Fprintf(w, "\noptions:\n%s", fl.FlagUsages())
	}
}

// flagParseError says what was wrong with a command's flags and, for an unknown flag, which
// one was meant.
func flagParseError(c *command, fl *pflag.FlagSet, err error) string {
	msg := fmt.Sprintf("kintfs %s: %v", c.name, err)
	var ne *pflag.NotExistError
	if errors.As(err, &ne) {
		names := []string{"help"}
		fl.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if n := ne.GetSpecifiedName(); n != "" {
			msg += didYouMean(n, names, "--")
		} else if s := ne.GetSpecifiedShortnames(); s != "" {
			var shorts []string
			fl.VisitAll(func(f *pflag.Flag) {
				if f.Shorthand != "" {
					shorts = append(shorts, f.Shorthand)
				}
			})
			msg += didYouMean(s, shorts, "-")
		}
	}
	return msg + fmt.Sprintf(" (kintfs %s --help lists its options)", c.name)
}

// didYouMean is ", did you mean X?" naming the nearest of names to s (by edit distance, or
// as a prefix), or "" when none is near.
func didYouMean(s string, names []string, prefix string) string {
	best, bestD := "", 3
	for _, n := range names {
		d := editDistance(s, n)
		if strings.HasPrefix(n, s) && len(s) >= 2 && d > 1 {
			d = 1
		}
		if d < bestD || (d == bestD && n < best) {
			best, bestD = n, d
		}
	}
	if best == "" || bestD > len(s)/2+1 {
		return ""
	}
	return fmt.Sprintf(", did you mean %s%s?", prefix, best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

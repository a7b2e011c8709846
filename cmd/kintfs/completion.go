package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		name:  "completion",
		usage: "bash | zsh | fish",
		short: "print a shell completion script (bash: source <(kintfs completion bash))",
		run: func(ctx context.Context, cio *cmdIO, args []string) error {
			if len(args) != 1 {
				return usagef("completion takes one shell: bash, zsh or fish")
			}
			return writeCompletion(cio.out, args[0])
		},
	})
	register(&command{
		name:  "man",
		short: "print the manual page (roff), made from the same table as --help",
		run: func(ctx context.Context, cio *cmdIO, args []string) error {
			if len(args) != 0 {
				return usagef("man takes no arguments")
			}
			fmt.Fprint(cio.out, manPage())
			return nil
		},
	})
}

// completionFlags lists c's flags as a shell types them: --name, and -x for a shorthand.
func completionFlags(c *command) []string {
	var out []string
	commandFlags(c).VisitAll(func(f *pflag.Flag) {
		out = append(out, "--"+f.Name)
		if f.Shorthand != "" {
			out = append(out, "-"+f.Shorthand)
		}
	})
	return append(out, "--help")
}

// writeCompletion writes the completion script of one shell.
func writeCompletion(w io.Writer, shell string) error {
	switch shell {
	case "bash":
		fmt.Fprint(w, bashCompletion())
	case "zsh":
		fmt.Fprint(w, zshCompletion())
	case "fish":
		fmt.Fprint(w, fishCompletion())
	default:
		return usagef("completion: unknown shell %q%s (bash, zsh or fish)", shell, didYouMean(shell, []string{"bash", "zsh", "fish"}, ""))
	}
	return nil
}

func bashCompletion() string {
	var b strings.Builder
	b.WriteString("# bash completion for kintfs: source <(kintfs completion bash)\n")
	b.WriteString("_kintfs() {\n\tlocal cur=\"${COMP_WORDS[COMP_CWORD]}\" words=\"\"\n")
	fmt.Fprintf(&b, "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\tCOMPREPLY=( $(compgen -W %q -- \"$cur\") )\n\t\treturn\n\tfi\n", strings.Join(commandNames(), " "))
	b.WriteString("\tcase \"${COMP_WORDS[1]}\" in\n")
	for _, n := range commandNames() {
		fmt.Fprintf(&b, "\t%s) words=%q ;;\n", n, strings.Join(completionFlags(commands[n]), " "))
	}
	b.WriteString("\tesac\n")
	b.WriteString("\tcase \"${COMP_WORDS[1]}\" in\n")
	b.WriteString("\thelp) words=\"$words " + strings.Join(commandNames(), " ") + "\" ;;\n")
	b.WriteString("\tcompletion) words=\"$words bash zsh fish\" ;;\n")
	b.WriteString("\tesac\n")
	b.WriteString("\tif [[ \"$cur\" == -* || \"${COMP_WORDS[1]}\" == help || \"${COMP_WORDS[1]}\" == completion ]]; then\n")
	b.WriteString("\t\tCOMPREPLY=( $(compgen -W \"$words\" -- \"$cur\") )\n\telse\n\t\tCOMPREPLY=( $(compgen -f -- \"$cur\") )\n\tfi\n}\n")
	b.WriteString("complete -o filenames -F _kintfs kintfs\n")
	return b.String()
}

func zshCompletion() string {
	var b strings.Builder
	b.WriteString("#compdef kintfs\n# zsh completion for kintfs: kintfs completion zsh > \"${fpath[1]}/_kintfs\"\n")
	b.WriteString("_kintfs() {\n\tlocal -a cmds\n\tcmds=(\n")
	for _, n := range commandNames() {
		fmt.Fprintf(&b, "\t\t%s\n", zshQuote(n+":"+commands[n].short))
	}
	b.WriteString("\t)\n\tif (( CURRENT == 2 )); then\n\t\t_describe 'command' cmds\n\t\treturn\n\tfi\n")
	b.WriteString("\tlocal -a flags\n\tcase $words[2] in\n")
	for _, n := range commandNames() {
		fmt.Fprintf(&b, "\t%s) flags=(%s) ;;\n", n, strings.Join(completionFlags(commands[n]), " "))
	}
	b.WriteString("\tesac\n\tif [[ $PREFIX == -* ]]; then\n\t\tcompadd -- $flags\n\telse\n\t\t_files\n\tfi\n}\n")
	b.WriteString("if [ \"$funcstack[1]\" = \"_kintfs\" ]; then\n\t_kintfs \"$@\"\nelse\n\tcompdef _kintfs kintfs\nfi\n")
	return b.String()
}

// zshQuote single-quotes s for zsh, colons in the name escaped for _describe.
func zshQuote(s string) string {
	name, desc, _ := strings.Cut(s, ":")
	return "'" + strings.ReplaceAll(name, ":", "\\:") + ":" + strings.ReplaceAll(desc, "'", "'\\''") + "'"
}

func fishCompletion() string {
	var b strings.Builder
	b.WriteString("# fish completion for kintfs: kintfs completion fish > ~/.config/fish/completions/kintfs.fish\n")
	b.WriteString("complete -c kintfs -f\n")
	for _, n := range commandNames() {
		fmt.Fprintf(&b, "complete -c kintfs -n __fish_use_subcommand -a %s -d %s\n", n, fishQuote(commands[n].short))
	}
	for _, n := range commandNames() {
		commandFlags(commands[n]).VisitAll(func(f *pflag.Flag) {
			fmt.Fprintf(&b, "complete -c kintfs -n '__fish_seen_subcommand_from %s' -l %s", n, f.Name)
			if f.Shorthand != "" {
				fmt.Fprintf(&b, " -s %s", f.Shorthand)
			}
			if f.NoOptDefVal == "" {
				b.WriteString(" -r -F")
			}
			fmt.Fprintf(&b, " -d %s\n", fishQuote(f.Usage))
		})
	}
	fmt.Fprintf(&b, "complete -c kintfs -n '__fish_seen_subcommand_from help' -a %s\n", fishQuote(strings.Join(commandNames(), " ")))
	b.WriteString("complete -c kintfs -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'\n")
	b.WriteString("complete -c kintfs -n 'not __fish_use_subcommand' -F\n")
	return b.String()
}

// fishQuote single-quotes s for fish.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"kintfs/replica"
	"kintfs/replica/vault"
)

func init() {
	register(&command{
		name:  "conflicts",
		usage: "[--json]",
		short: "list the rows both this machine and another changed, with both versions' epochs and how to resolve them",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &infoOptions{}
			fs.BoolVar(&o.json, "json", false, "print JSON")
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runConflicts(ctx, cio, o, args) }
		},
	})
}

// runConflicts lists the conflicts that stand: those whose copy of this machine's version
// still exists under its name. Moving the copy over the row (keep yours) or removing it (keep
// the chain's) resolves one.
func runConflicts(ctx context.Context, cio *cmdIO, o *infoOptions, args []string) error {
	if len(args) > 0 {
		return usagef("conflicts takes no arguments")
	}
	e, err := openVault(ctx, cio, openOptions{})
	if err != nil {
		return err
	}
	defer e.Close()
	st, err := e.rep.Status()
	if err != nil {
		return err
	}
	if o.json {
		printJSON(ctx, cio, st.Conflicts)
		return nil
	}
	if len(st.Conflicts) == 0 {
		fmt.Fprintln(cio.out, "no conflicts")
		return nil
	}
	for i := range st.Conflicts {
		fmt.Fprintln(cio.out, conflictLine(&st.Conflicts[i]))
	}
	fmt.Fprintln(cio.out, "keep yours: mv COPY ROW; keep the chain's: rm COPY (paths under the mountpoint)")
	return nil
}

// conflictLine is one conflict for a person: the row and the chain's epoch, the copy and the
// epoch this machine's change was made on.
func conflictLine(c *vault.Conflict) string {
	row, cp := replica.ConflictPaths(c)
	base := "a row new here"
	if c.BaseSeq > 0 {
		base = fmt.Sprintf("made on epoch %d", c.BaseSeq)
	}
	return fmt.Sprintf("%s: the chain's version (epoch %d) is in place; yours (%s) is in %s, since %s", row, c.Seq, base, cp, c.At)
}

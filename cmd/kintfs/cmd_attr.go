package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"kintfs/fs"
)

// attr shows and sets what a mount serves as user.kint.* extended attributes, for mounts
// started with --xattrs=false and for tools that cannot reach extended attributes.
type attrOptions struct {
	set   *string
	unset bool
}

func init() {
	register(&command{
		name:  "attr",
		usage: "PATH [NAME] [--set VALUE | --unset]",
		short: "print a file's kint attributes (status, meta, leaf, anchored, key), or set status or meta",
		setup: func(f *pflag.FlagSet) runFunc {
			o := &attrOptions{}
			f.Func("set", "set NAME (status or meta; meta must be JSON)", func(v string) error {
				o.set = &v
				return nil
			})
			f.BoolVar(&o.unset, "unset", false, "set NAME to null")
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runAttr(ctx, cio, o, args) }
		},
	})
}

// attrName accepts status as well as user.kint.status.
func attrName(s string) string {
	if strings.HasPrefix(s, "user.kint.") {
		return s
	}
	return "user.kint." + s
}

func runAttr(ctx context.Context, cio *cmdIO, o *attrOptions, args []string) error {
	changing := o.set != nil || o.unset
	switch {
	case len(args) < 1 || len(args) > 2:
		return usagef("attr PATH [NAME] [--set VALUE | --unset]")
	case o.set != nil && o.unset:
		return usagef("attr: --set and --unset together")
	case changing && len(args) != 2:
		return usagef("attr: --set and --unset need a NAME (status or meta)")
	}
	k, err := keyOfPath(ctx, cio, args[0])
	if err != nil {
		return err
	}
	e, err := openVault(ctx, cio, openOptions{})
	if err != nil {
		return err
	}
	defer e.Close()
	if changing {
		name := strings.TrimPrefix(attrName(args[1]), "user.kint.")
		if name != "status" && name != "meta" {
			return usagef("attr: only status and meta can be set, not %s", args[1])
		}
		return e.rep.SetAttr(k, name, o.set)
	}
	v, err := e.rep.Get(k)
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	names, vals := fs.Attrs(v)
	if len(args) == 2 {
		val, ok := vals[attrName(args[1])]
		if !ok {
			return usagef("%s: no attribute %s", args[0], attrName(args[1]))
		}
		fmt.Fprintln(cio.out, val)
		return nil
	}
	for _, n := range names {
		fmt.Fprintf(cio.out, "%s: %s\n", n, vals[n])
	}
	return nil
}

package main

import (
	"bufio"
	"context"
	"fmt"

	"kintfs/seal"
)

func init() {
	register(&command{
		name:  "export",
		short: "print every row of the mirror as JSON lines (plaintext: a debug tool), read-only",
		run:   runExport,
	})
}

func runExport(ctx context.Context, cio *cmdIO, args []string) error {
	if len(args) > 0 {
		return usagef("export takes no arguments")
	}
	e, err := openVault(ctx, cio, openOptions{})
	if err != nil {
		return err
	}
	defer e.Close()
	fmt.Fprintln(cio.err, "kintfs export: the output is plaintext memory: every anchored row of the vault, bodies included")
	w := bufio.NewWriter(cio.out)
	var line []byte
	err = e.rep.MirrorRows(func(row *seal.Row) error {
		line = append(seal.AppendRowJSON(line[:0], row), '\n')
		_, err := w.Write(line)
		return err
	})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"

	"kintfs/chain/devchain/devinfo"
)

func init() {
	register(&command{
		name:  "devchain",
		usage: "[--datadir DIR] [--http 127.0.0.1:8545] [--period N] [--chain-id N] [--max-lead 2s]",
		short: "run a local development chain (not Base) with EpochAnchor deployed",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := devinfo.DefaultOptions()
			o.Flags(fs)
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runDevchain(cio, &o, args) }
		},
	})
}

func defaultDevDir(set settings) (string, error) {
	home, err := defaultHome(set)
	if err != nil {
		return "", err
	}
	return home.Ensure("devchain")
}

// runDevchain becomes the dev chain's own program, which runs until Ctrl-C.
func runDevchain(cio *cmdIO, o *devinfo.Options, args []string) error {
	if len(args) > 0 {
		return usagef("devchain takes no arguments")
	}
	if o.DataDir == "" {
		var err error
		if o.DataDir, err = defaultDevDir(cio.set); err != nil {
			return err
		}
	}
	prog, err := devchainProgram()
	if err != nil {
		return err
	}
	return syscall.Exec(prog, append([]string{devinfo.Program}, o.Args()...), os.Environ())
}

// devchainProgram finds the dev chain's program: beside this executable, as make build and
// make install put it, else on PATH.
func devchainProgram() (string, error) {
	if exe, err := os.Executable(); err == nil {
		// a path with a slash is only checked: a file that this user may run
		if p, err := exec.LookPath(filepath.Join(filepath.Dir(exe), devinfo.Program)); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath(devinfo.Program)
	if errors.Is(err, exec.ErrNotFound) {
		return "", fmt.Errorf("the development chain runs in its own program, %s, found neither beside kintfs nor on PATH: make build puts both in bin/, make install both in PREFIX/bin", devinfo.Program)
	}
	return p, err
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"kintfs/chain/devchain"
)

type devchainOptions struct {
	datadir string
	http    string
	period  uint64
	chainID uint64
	maxLead time.Duration
}

func init() {
	register(&command{
		name:  "devchain",
		usage: "[--datadir DIR] [--http 127.0.0.1:8545] [--period N] [--chain-id N] [--max-lead 2s]",
		short: "run a local development chain (not Base) with EpochAnchor deployed",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &devchainOptions{}
			fs.StringVar(&o.datadir, "datadir", "", "where the chain is kept (default KINT_HOME/devchain)")
			fs.StringVar(&o.http, "http", "127.0.0.1:8545", "JSON-RPC listen address (loopback only)")
			fs.Uint64Var(&o.period, "period", 0, "seconds between blocks (0: a block per transaction)")
			fs.Uint64Var(&o.chainID, "chain-id", devchain.ChainID, "the chain id, fixed when the chain is created (8453 lets tools bound to Base's id read a dev vault; it is still not Base)")
			fs.DurationVar(&o.maxLead, "max-lead", devchain.DefaultMaxLead, "how far block times may run ahead of the wall clock before sealing waits for it (0: no bound)")
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runDevchain(ctx, cio, o, args) }
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

func runDevchain(ctx context.Context, cio *cmdIO, o *devchainOptions, args []string) error {
	if len(args) > 0 {
		return usagef("devchain takes no arguments")
	}
	dir := o.datadir
	if dir == "" {
		var err error
		if dir, err = defaultDevDir(cio.set); err != nil {
			return err
		}
	}
	dc, err := devchain.Start(devchain.Config{DataDir: dir, HTTPAddr: o.http, Period: o.period, ChainID: o.chainID, MaxLead: o.maxLead})
	if err != nil {
		return err
	}
	line, _ := json.Marshal(dc.Info())
	fmt.Println(string(line))
	fmt.Fprintf(os.Stderr, "kintfs devchain: a local development chain, not Base, at %s (websocket %s); stop it with Ctrl-C\n", dc.Info().RPC, dc.Info().WS)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	return dc.Close()
}

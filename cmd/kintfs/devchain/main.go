// Command kintfs-devchain runs the local development chain (not Base): a go-ethereum node with
// EpochAnchor deployed. `kintfs devchain` and `kintfs mount --dev` start it; it is a program
// of its own so that kintfs, and so every mount, carries none of the node's code (about half
// of the executable, all of it resident while a mount runs).
//
// Once the chain answers it prints its devinfo.Info as one JSON line on stdout. It stops on
// SIGINT or SIGTERM, and with --with-parent also when its standard input reaches its end:
// the mount that started it holds the other end, so the chain ends with the mount, however
// the mount ends.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"kintfs/chain/devchain"
	"kintfs/chain/devchain/devinfo"
)

func main() {
	syscall.Umask(0o077) // the chain's files are its user's alone, as every file of KINT_HOME
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", devinfo.Program, err)
		os.Exit(1)
	}
}

func run(argv []string) error {
	o := devinfo.DefaultOptions()
	fs := pflag.NewFlagSet(devinfo.Program, pflag.ContinueOnError)
	o.Flags(fs)
	withParent := fs.Bool("with-parent", false, "also stop when standard input ends (the process that started it went away)")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("takes no arguments (run it as kintfs devchain)")
	}
	if o.DataDir == "" {
		return fmt.Errorf("--datadir is required (kintfs devchain gives KINT_HOME/devchain)")
	}
	dc, err := devchain.Start(devchain.Config{DataDir: o.DataDir, HTTPAddr: o.HTTP, Period: o.Period, ChainID: o.ChainID, MaxLead: o.MaxLead})
	if err != nil {
		return err
	}
	info := dc.Info()
	line, _ := json.Marshal(info)
	fmt.Println(string(line))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	if *withParent {
		go func() {
			io.Copy(io.Discard, os.Stdin)
			stop <- syscall.SIGTERM
		}()
	} else {
		fmt.Fprintf(os.Stderr, "kintfs devchain: a local development chain, not Base, at %s (websocket %s); stop it with Ctrl-C\n", info.RPC, info.WS)
	}
	<-stop
	return dc.Close()
}

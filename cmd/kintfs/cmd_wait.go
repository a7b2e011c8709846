package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
)

type waitOptions struct {
	block   uint64
	seq     uint64
	timeout time.Duration
}

func init() {
	register(&command{
		name:  "wait",
		usage: "(--block N | --seq N) [--timeout 5m] MOUNTPOINT",
		short: "wait until a mount has applied the epochs up to a block or seq (inotify does not see other machines' changes)",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &waitOptions{}
			fs.Uint64Var(&o.block, "block", 0, "wait until the mirror stands at or past this block")
			fs.Uint64Var(&o.seq, "seq", 0, "wait until the mirror stands at or past this seq")
			fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runWait(ctx, cio, o, args) }
		},
	})
}

func runWait(ctx context.Context, cio *cmdIO, o *waitOptions, args []string) error {
	if len(args) != 1 || (o.block == 0 && o.seq == 0) {
		return usagef("wait (--block N | --seq N) MOUNTPOINT")
	}
	status := filepath.Join(args[0], ".kint", "status")
	deadline := time.Now().Add(o.timeout)
	for {
		var st struct {
			Mirror struct {
				Seq   uint64 `json:"seq"`
				Block uint64 `json:"block"`
			} `json:"mirror"`
		}
		b, err := os.ReadFile(status)
		if err != nil {
			return fmt.Errorf("%s is not a kintfs mount: %w", args[0], err)
		}
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("read %s: %w", status, err)
		}
		if (o.block == 0 || st.Mirror.Block >= o.block) && (o.seq == 0 || st.Mirror.Seq >= o.seq) {
			fmt.Fprintf(cio.out, "mirror at seq %d, block %d\n", st.Mirror.Seq, st.Mirror.Block)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out: mirror still at seq %d, block %d", st.Mirror.Seq, st.Mirror.Block)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

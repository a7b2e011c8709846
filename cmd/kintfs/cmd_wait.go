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

var waitOpts struct {
	block   uint64
	seq     uint64
	timeout time.Duration
}

func init() {
	register(&command{
		name:  "wait",
		usage: "(--block N | --seq N) [--timeout 5m] MOUNTPOINT",
		short: "wait until a mount has applied the epochs up to a block or seq (inotify does not see other machines' changes)",
		flags: func(fs *pflag.FlagSet) {
			fs.Uint64Var(&waitOpts.block, "block", 0, "wait until the mirror stands at or past this block")
			fs.Uint64Var(&waitOpts.seq, "seq", 0, "wait until the mirror stands at or past this seq")
			fs.DurationVar(&waitOpts.timeout, "timeout", 5*time.Minute, "give up after this long")
		},
		run: runWait,
	})
}

func runWait(ctx context.Context, args []string) error {
	if len(args) != 1 || (waitOpts.block == 0 && waitOpts.seq == 0) {
		return usagef("wait (--block N | --seq N) MOUNTPOINT")
	}
	status := filepath.Join(args[0], ".kint", "status")
	deadline := time.Now().Add(waitOpts.timeout)
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
		if (waitOpts.block == 0 || st.Mirror.Block >= waitOpts.block) && (waitOpts.seq == 0 || st.Mirror.Seq >= waitOpts.seq) {
			fmt.Fprintf(outw(ctx), "mirror at seq %d, block %d\n", st.Mirror.Seq, st.Mirror.Block)
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

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"kintfs/chain"
	"kintfs/replica"
	"kintfs/replica/homedir"
)

func init() {
	register(&command{
		name:  "bucket-policy",
		usage: "[low | kint]",
		short: "show or set how pushes choose the epoch bucket: low (split into the current bucket) or kint (ratchet up to 90 KB)",
		setup: func(fs *pflag.FlagSet) runFunc {
			return runBucketPolicy
		},
	})
}

func runBucketPolicy(ctx context.Context, cio *cmdIO, args []string) error {
	if len(args) > 1 {
		return usagef("bucket-policy takes at most one argument: low or kint")
	}
	e, err := openVault(ctx, cio, openOptions{noDial: true})
	if err != nil {
		return err
	}
	defer e.Close()
	if len(args) == 1 {
		if args[0] != replica.PolicyLow && args[0] != replica.PolicyKint {
			return usagef("bucket-policy %q: one of low, kint", args[0])
		}
		if err := e.rep.SetBucketPolicy(args[0]); err != nil {
			return err
		}
	}
	b, err := e.rep.Bucket()
	if err != nil {
		return err
	}
	fmt.Fprintf(cio.out, "bucket policy %s; the vault's bucket is %d\n", e.rep.BucketPolicy(), b)
	return nil
}

// nextFlushLine says what the next flush would anchor and cost, from a dry run.
func nextFlushLine(ctx context.Context, rep *replica.Replica) string {
	dr, err := rep.NextFlushCost(ctx)
	switch {
	case errors.Is(err, replica.ErrPushRunning):
		return "not estimated: a push or pull is running"
	case errors.Is(err, replica.ErrNothingToPush):
		return "nothing to anchor"
	case err != nil:
		return "not estimated: " + err.Error()
	}
	bucket := 0
	for _, pe := range dr.Plan {
		bucket = max(bucket, pe.Bucket)
	}
	s := fmt.Sprintf("%d epoch(s), bucket %d, gas %d", len(dr.Plan), bucket, dr.Gas)
	if dr.GasPrice != "" {
		s += ", about " + dr.CostETH + " ETH at the current gas price"
		if dr.L1FeeETH != "" {
			s += " (L1 data fee " + dr.L1FeeETH + " ETH included)"
		}
	} else if dr.PriceNote != "" {
		s += " (" + dr.PriceNote + ")"
	}
	if len(dr.Raised) > 0 {
		r := dr.Raised[0]
		s += fmt.Sprintf("; raises the bucket from %d to %d for good: %s", r.From, r.To, r.Why)
	}
	return s
}

// doctorNextFlush is nextFlushLine for doctor: from the mount when one runs, else from the
// vault opened here.
func doctorNextFlush(ctx context.Context, cio *cmdIO, home homedir.Home, v *homedir.VaultConfig, c *chain.Client) string {
	if _, mounted := mountedAt(home); mounted {
		reply, ok := forward(cio.set, []string{"status", "--next-flush"})
		if !ok || reply.Code != 0 {
			return "not estimated: the mount did not answer: " + strings.TrimSpace(reply.Err)
		}
		return strings.TrimSpace(reply.Out)
	}
	opt := replica.Options{Home: home, Vault: v}
	if c != nil {
		opt.Client = c
	}
	rep, err := replica.Open(opt)
	if err != nil {
		return "not estimated: " + err.Error()
	}
	defer rep.Close()
	return nextFlushLine(ctx, rep)
}

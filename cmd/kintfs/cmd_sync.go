package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/spf13/pflag"

	"kintfs/chain"
	"kintfs/replica"
	"kintfs/replica/vault"
)

type syncOptions struct {
	dryRun, full, json bool
	discardLocal       bool
	overSkipped        bool
	confirmations      uint64
}

const confirmationsUsage = "blocks to wait for after each transaction (default KINT_CONFIRMATIONS, else 2)"

const overSkippedUsage = "anchor the snapshot on the chain head even though the last pull stopped at an epoch this machine could not apply"

func init() {
	register(&command{
		name:  "push",
		usage: "[--dry-run]",
		short: "seal and anchor the staged rows now",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &syncOptions{}
			fs.BoolVar(&o.dryRun, "dry-run", false, "report what would be anchored and send nothing")
			fs.BoolVar(&o.json, "json", false, "print the report as JSON")
			fs.Uint64Var(&o.confirmations, "confirmations", 0, confirmationsUsage)
			return func(ctx context.Context, cio *cmdIO, args []string) error {
				return runPush(ctx, cio, o, replica.PushOptions{DryRun: o.dryRun, Confirmations: o.confirmations})
			}
		},
	})
	register(&command{
		name:  "compact",
		usage: "[--dry-run] [--over-skipped]",
		short: "anchor one snapshot epoch of the whole state",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &syncOptions{}
			fs.BoolVar(&o.dryRun, "dry-run", false, "report what would be anchored and send nothing")
			fs.BoolVar(&o.json, "json", false, "print the report as JSON")
			fs.BoolVar(&o.overSkipped, "over-skipped", false, overSkippedUsage)
			fs.Uint64Var(&o.confirmations, "confirmations", 0, confirmationsUsage)
			return func(ctx context.Context, cio *cmdIO, args []string) error {
				return runPush(ctx, cio, o, replica.PushOptions{DryRun: o.dryRun, Snapshot: true, OverSkipped: o.overSkipped, Confirmations: o.confirmations})
			}
		},
	})
	register(&command{
		name:  "pull",
		usage: "[--full] [--discard-local]",
		short: "apply the epochs other machines anchored",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &syncOptions{}
			fs.BoolVar(&o.full, "full", false, "walk past snapshots to the first epoch and cache all history")
			fs.BoolVar(&o.discardLocal, "discard-local", false, "move this machine's local state (staged rows included) aside to a dated backup in KINT_HOME and restore from the chain: the way out of a fork")
			fs.BoolVar(&o.json, "json", false, "print the report as JSON")
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runPull(ctx, cio, o, args) }
		},
	})
}

func printJSON(ctx context.Context, cio *cmdIO, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintln(cio.out, string(b))
}

func runPush(ctx context.Context, cio *cmdIO, o *syncOptions, opt replica.PushOptions) error {
	e, err := openVault(ctx, cio, openOptions{chain: !opt.DryRun, dek: true})
	if err != nil {
		return err
	}
	defer e.Close()
	pctx, endProgress := withProgress(ctx, cio)
	if !opt.DryRun {
		// another machine may have pushed: rebase on it first, as the mount does. A pull that
		// stopped at an epoch this machine cannot apply is for the push itself to answer: it
		// refuses and names compact, and compact anchors its snapshot over the gap.
		if err := e.rep.Control(pctx, "refresh"); err != nil && !errors.Is(err, replica.ErrGapOpen) {
			endProgress()
			return err
		}
	}
	rep, err := e.rep.Push(pctx, opt)
	endProgress()
	if rep != nil && o.json {
		printJSON(ctx, cio, rep)
	} else if rep != nil {
		printPushReport(ctx, cio, rep)
	}
	return err
}

func printPushReport(ctx context.Context, cio *cmdIO, rep *replica.PushReport) {
	for _, h := range rep.Held {
		fmt.Fprintf(cio.err, "held: %s: %s\n", heldName(h), h.Reason)
	}
	for _, r := range rep.Raised {
		fmt.Fprintf(cio.err, "bucket: epoch %d raises the vault's bucket from %d to %d for good: %s\n", r.Seq, r.From, r.To, r.Why)
	}
	w := cio.out
	if rep.DryRun {
		fmt.Fprintf(w, "would anchor %d rows and %d deletions in %d epoch(s); nothing sent\n", rep.Rows, rep.Deleted, rep.Chunks)
		for _, pe := range rep.Plan {
			fmt.Fprintf(w, "epoch %d: %d rows, %d deleted, bucket %d, %d calldata bytes, gas %d%s\n",
				pe.Seq, pe.Rows, pe.Deleted, pe.Bucket, pe.CalldataBytes, pe.Gas, ethPart(pe.CostETH, pe.L1FeeETH))
		}
		if len(rep.Plan) > 0 {
			fmt.Fprintf(w, "total: %d epoch(s), gas %d%s\n", len(rep.Plan), rep.Gas, ethPart(priced(rep), rep.L1FeeETH))
			if rep.GasPrice != "" {
				fmt.Fprintf(w, "gas price: %s ETH per gas (bucket policy %s)\n", weiETH(rep.GasPrice), rep.Policy)
			} else {
				fmt.Fprintf(w, "%s (bucket policy %s)\n", rep.PriceNote, rep.Policy)
			}
			if rep.L1Note != "" {
				fmt.Fprintln(w, rep.L1Note)
			}
		}
		return
	}
	// each epoch was shown as it landed: the report sums them up
	if n := len(rep.Epochs); n > 0 {
		rows, dels := 0, 0
		for _, ep := range rep.Epochs {
			rows, dels = rows+ep.Rows, dels+ep.Deleted
		}
		fmt.Fprintf(w, "anchored %d rows and %d deletions in %d epoch(s), seq %d to %d, in %.1f s (%.1f s waiting on the chain)\n",
			rows, dels, n, rep.Epochs[0].Seq, rep.Epochs[n-1].Seq, rep.Seconds, rep.ChainSeconds)
	}
	if len(rep.Epochs) > 0 {
		fmt.Fprintf(w, "total: %d epoch(s), gas %d, cost %s ETH%s\n", len(rep.Epochs), rep.Gas, rep.CostETH, l1Part(rep.L1FeeETH))
	}
}

// priced is a dry run's total in ETH, "" when there was no gas price.
func priced(rep *replica.PushReport) string {
	if rep.GasPrice == "" {
		return ""
	}
	return rep.CostETH
}

// ethPart is ", about X ETH (L1 fee Y ETH)" for a priced estimate, "" without a price.
func ethPart(cost, l1 string) string {
	if cost == "" {
		return ""
	}
	return ", about " + cost + " ETH" + l1Part(l1)
}

func l1Part(l1 string) string {
	if l1 == "" {
		return ""
	}
	return " (L1 data fee " + l1 + " ETH included)"
}

// weiETH writes a decimal amount of wei in ETH.
func weiETH(wei string) string {
	b, ok := new(big.Int).SetString(wei, 10)
	if !ok {
		return wei + " wei"
	}
	return chain.FormatETH(b)
}

func heldName(h vault.HeldRow) string {
	if h.Category != nil {
		return h.Tier + " " + *h.Category + "/" + h.Key
	}
	return h.Tier + " " + h.Key
}

func runPull(ctx context.Context, cio *cmdIO, o *syncOptions, args []string) error {
	if len(args) > 0 {
		return usagef("pull takes no arguments")
	}
	if o.discardLocal {
		if err := discardLocal(ctx, cio); err != nil {
			return err
		}
	}
	e, err := openVault(ctx, cio, openOptions{chain: true, dek: true})
	if err != nil {
		return err
	}
	defer e.Close()
	if stop := startCPUProfile(cio.set, func(f string, a ...any) { fmt.Fprintf(cio.err, "kintfs: "+f+"\n", a...) }); stop != nil {
		defer stop() // KINTFS_CPUPROFILE, for benchmarks of a restore
	}
	pctx, endProgress := withProgress(ctx, cio)
	rep, err := e.rep.Pull(pctx, o.full)
	endProgress()
	if rep != nil && o.json {
		printJSON(ctx, cio, rep)
	} else if rep != nil {
		for _, g := range rep.Skipped {
			fmt.Fprintf(cio.err, "skipped epoch %d: %s (superseded by snapshot %d)\n", g.Seq, g.Reason, g.SupersededBy)
		}
		for _, c := range rep.Conflicts {
			fmt.Fprintf(cio.err, "conflict: %s %s: the chain's version stays, yours is in %s\n", c.Tier, c.Key, c.Copy)
		}
		if err == nil {
			fmt.Fprintf(cio.out, "mirror at seq %d (head %d): %d epochs applied, %d fetched, %d from cache, %d rows changed\n",
				rep.Mirror.Seq, rep.Head.Seq, rep.Applied, rep.Fetched, rep.FromCache, rep.Changed)
		}
	}
	return err
}

// discardLocal moves the local state aside before a pull --discard-local. The mount holds
// the state, so it refuses there.
func discardLocal(ctx context.Context, cio *cmdIO) error {
	home, err := defaultHome(cio.set)
	if err != nil {
		return err
	}
	if cio.env != nil {
		dir, _ := mountedAt(home)
		return mountedError{dir}
	}
	if err := refuseIfMounted(home); err != nil {
		return err
	}
	v, err := loadVaultConfig(cio.set, home)
	if err != nil {
		return err
	}
	// the key must open what the chain holds, else the restore cannot follow the discard
	if _, err := home.LoadDEK(v.Space); err != nil {
		return err
	}
	backup, err := replica.DiscardLocal(home, v, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(cio.err, "kintfs pull: moved this machine's local state aside to %s (kept: its unanchored changes are there); restoring from the chain\n", backup)
	return nil
}

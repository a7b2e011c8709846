package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"kintfs/chain"
	"kintfs/fs"
	"kintfs/replica"
	"kintfs/replica/vault"
	"kintfs/seal"
)

type infoOptions struct {
	json     bool
	next     bool // --next-flush: only the line saying what the next flush would cost
	category string
	block    uint64
}

func init() {
	register(&command{
		name:  "status",
		usage: "[--json | --next-flush]",
		short: "show the vault, the chain head, the mirror and what is staged, held or in conflict",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &infoOptions{}
			fs.BoolVar(&o.json, "json", false, "print JSON")
			fs.BoolVar(&o.next, "next-flush", false, "print only what the next flush would anchor and cost (a dry run)")
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runStatus(ctx, cio, o, args) }
		},
	})
	register(&command{
		name:  "log",
		usage: "[--json]",
		short: "list the anchored epochs this machine holds",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &infoOptions{}
			fs.BoolVar(&o.json, "json", false, "print a JSON list, one object per epoch (block_time in RFC 3339, \"\" while unknown)")
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runLog(ctx, cio, o, args) }
		},
	})
	register(&command{
		name:  "history",
		usage: "(TIER KEY | PATH) [--category C] [--block N] [--json]",
		short: "list every anchored version of a row (named by tier and key, a path in a mount, or tier/key), or print the one at a block",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &infoOptions{}
			fs.StringVar(&o.category, "category", "", "the entity's category")
			fs.Uint64Var(&o.block, "block", 0, "print the body as anchored at or before this block")
			fs.BoolVar(&o.json, "json", false, "print the versions as a JSON list")
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runHistory(ctx, cio, o, args) }
		},
	})
	register(&command{
		name:  "verify",
		usage: "[--json] PATH...",
		short: "prove each file of a mount against the anchored rows_root with its merkle path",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &infoOptions{}
			fs.BoolVar(&o.json, "json", false, "print one JSON object per file in a list")
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runVerify(ctx, cio, o, args) }
		},
	})
}

func runStatus(ctx context.Context, cio *cmdIO, o *infoOptions, args []string) error {
	e, err := openVault(ctx, cio, openOptions{})
	if err != nil {
		return err
	}
	defer e.Close()
	if !e.shared && e.client() != nil {
		// best effort: status still answers offline. A mount polls on its own, and its status
		// answers at once, even while a push or pull holds the chain.
		_ = e.rep.Control(ctx, "refresh")
	}
	if o.next {
		fmt.Fprintln(cio.out, nextFlushLine(ctx, e.rep))
		return nil
	}
	st, err := e.rep.Status()
	if err != nil {
		return err
	}
	if o.json {
		printJSON(ctx, cio, st)
		return nil
	}
	fmt.Fprintf(cio.out, "owner %s, tenant %q, space %s\n", st.Owner, st.Tenant, st.Space[:18])
	fmt.Fprintf(cio.out, "chain %d at %s, contract %s\n", st.Chain.ChainID, st.Chain.RPC, st.Chain.Contract)
	fmt.Fprintf(cio.out, "head seq %d (block %d), mirror seq %d\n", st.Head.Seq, st.Head.Block, st.Mirror.Seq)
	if st.Offline != "" {
		fmt.Fprintln(cio.out, st.Offline)
	}
	fmt.Fprintf(cio.out, "staged: %d rows (%d bytes), %d deletions; oldest %ds\n", st.StagedRows, st.StagedBytes, st.StagedDels, st.OldestStaged)
	if st.LocalFiles > 0 {
		fmt.Fprintf(cio.out, "local only: %d files, never anchored (dotfiles and local-only rules)\n", st.LocalFiles)
	}
	if st.StagedRows+st.StagedDels > 0 {
		fmt.Fprintf(cio.out, "next flush would cost: %s\n", nextFlushLine(ctx, e.rep))
	}
	if st.NextFlush != "" {
		fmt.Fprintf(cio.out, "next automatic flush: %s\n", st.NextFlush)
	} else if st.StagedRows+st.StagedDels > len(st.Held) {
		fmt.Fprintln(cio.out, "next automatic flush: none scheduled here (not mounted): kintfs push, or the next mount")
	}
	fmt.Fprintf(cio.out, "last push: %s\n", opLine(st.LastPush))
	fmt.Fprintf(cio.out, "last pull: %s\n", opLine(st.LastPull))
	fmt.Fprintf(cio.out, "history: from seq %d; backfill %s\n", st.HistoryFrom.Seq, st.Backfill)
	fmt.Fprintf(cio.out, "held: %d rows\n", len(st.Held))
	for _, h := range st.Held {
		fmt.Fprintf(cio.out, "held: %s: %s\n", heldName(h), h.Reason)
	}
	for i := range st.Conflicts {
		fmt.Fprintf(cio.out, "conflict: %s\n", conflictLine(&st.Conflicts[i]))
	}
	for _, g := range st.Gaps {
		fmt.Fprintf(cio.out, "gap: epoch %d: %s\n", g.Seq, g.Reason)
	}
	fmt.Fprintf(cio.out, "vault model: %s\n", st.VaultModel)
	for _, x := range st.KintIncompatible {
		fmt.Fprintf(cio.out, "kint cannot hold: %s: %s\n", x.Path, x.Reason)
	}
	return nil
}

// logEntry is one epoch as log --json prints it.
type logEntry struct {
	vault.EpochInfo
	BlockTime string `json:"block_time"` // RFC 3339 UTC; "" while not recorded
}

func runLog(ctx context.Context, cio *cmdIO, o *infoOptions, args []string) error {
	if len(args) > 0 {
		return usagef("log takes no arguments")
	}
	e, err := openVault(ctx, cio, openOptions{})
	if err != nil {
		return err
	}
	defer e.Close()
	eps, err := e.rep.Epochs()
	if err != nil {
		return err
	}
	if o.json {
		out := make([]logEntry, 0, len(eps))
		for _, ep := range eps {
			out = append(out, logEntry{EpochInfo: ep, BlockTime: strings.Trim(blockTime(ep.Time), "-")})
		}
		printJSON(ctx, cio, out)
		return nil
	}
	for _, ep := range eps {
		kind := "diff"
		if ep.Snapshot {
			kind = "snapshot"
		}
		fmt.Fprintf(cio.out, "seq %-5d block %-9d %-8s rows %-5d deleted %-4d total %-6d bucket %-6d %s time %s tx %s\n",
			ep.Seq, ep.Block, kind, ep.Rows, ep.Deleted, ep.NRows, ep.Bucket, ep.CreatedAt, blockTime(ep.Time), ep.Tx)
	}
	return nil
}

func rowKeyArgs(o *infoOptions, tier, key string) (vault.Key, error) {
	k := vault.Key{Tier: tier, Key: key}
	if o.category != "" {
		if tier != seal.TierEntity {
			return k, usagef("only entities have a category")
		}
		k.Category, k.HasCategory = o.category, true
	}
	for _, t := range vault.Tiers {
		if t == tier {
			return k, nil
		}
	}
	return k, usagef("unknown tier %q (entity, state, reference, journal)", tier)
}

// historyKey is the row history names: TIER KEY, or one PATH (a file in a mount, or
// tier/key as the live tree spells it), and the tier and key to name it by.
func historyKey(ctx context.Context, cio *cmdIO, o *infoOptions, args []string) (vault.Key, []string, error) {
	switch len(args) {
	case 2:
		k, err := rowKeyArgs(o, args[0], args[1])
		return k, args, err
	case 1:
	default:
		return vault.Key{}, nil, usagef("history TIER KEY, or history PATH [--category C] [--block N] [--json]")
	}
	k, err := keyOfPath(ctx, cio, args[0])
	var ue usageError
	if errors.As(err, &ue) && strings.Contains(ue.msg, "is not inside a kintfs mount") {
		// not a file of a mount: tier/key (entity/category/key) as the tree spells it
		var short bool
		k, short, err = fs.KeyOfPath(filepath.Clean(args[0]))
		switch {
		case errors.Is(err, fs.ErrNotRowPath) || (err == nil && k.Local):
			return k, nil, usagef("%s is neither a file in a kintfs mount nor TIER/KEY (or entity/CATEGORY/KEY); or give TIER KEY", args[0])
		case err != nil:
			return k, nil, usagef("%s: %v", args[0], err)
		case short:
			return k, nil, usagef("%s is a shortened name: give the path in the mount, or TIER KEY", args[0])
		}
		if !slices.Contains(vault.Tiers, k.Tier) {
			return k, nil, usagef("%s is neither a file in a kintfs mount nor TIER/KEY (or entity/CATEGORY/KEY): unknown tier %q", args[0], k.Tier)
		}
	}
	if err != nil {
		return k, nil, err
	}
	if o.category != "" {
		return k, nil, usagef("--category goes with TIER KEY; a path names the category itself")
	}
	return k, []string{k.Tier, k.Key}, nil
}

// historyEntry is one version as history --json prints it.
type historyEntry struct {
	Seq       uint64 `json:"seq"`
	Block     uint64 `json:"block"`
	BlockTime string `json:"block_time"` // RFC 3339 UTC; "" while not recorded
	Tx        string `json:"tx"`
	Deleted   bool   `json:"deleted"`
	Bytes     int    `json:"bytes"`
	Leaf      string `json:"leaf"` // "" for a deletion
}

func runHistory(ctx context.Context, cio *cmdIO, o *infoOptions, args []string) error {
	k, args, err := historyKey(ctx, cio, o, args)
	if err != nil {
		return err
	}
	e, err := openVault(ctx, cio, openOptions{})
	if err != nil {
		return err
	}
	defer e.Close()
	if o.block > 0 {
		view, err := e.rep.HistoryView(o.block)
		if err != nil {
			return err
		}
		body, err := view.Content(k)
		if err != nil {
			return fmt.Errorf("%s at block %d: %w", args[1], o.block, err)
		}
		cio.out.Write(body)
		return nil
	}
	vs, err := e.rep.Versions(k)
	if err != nil {
		return err
	}
	from, err := e.rep.HistoryFrom()
	if err != nil {
		return err
	}
	if from.Seq > 1 {
		if len(vs) == 0 {
			return fmt.Errorf("%w: no anchored version of %s %s on this machine since seq %d (block %d); the epochs before it were never fetched here (kintfs pull --full fetches them)",
				vault.ErrNotFound, args[0], args[1], from.Seq, from.Block)
		}
		fmt.Fprintf(os.Stderr, "kintfs: history before seq %d (block %d) is not on this machine; kintfs pull --full fetches it\n", from.Seq, from.Block)
	}
	if len(vs) == 0 {
		return fmt.Errorf("%w: no anchored version of %s %s on this machine (kintfs pull --full fetches all history)", vault.ErrNotFound, args[0], args[1])
	}
	eps, err := e.rep.Epochs()
	if err != nil {
		return err
	}
	times := map[uint64]uint64{}
	for _, ep := range eps {
		times[ep.Seq] = ep.Time
	}
	if o.json {
		out := make([]historyEntry, 0, len(vs))
		for _, v := range vs {
			h := historyEntry{Seq: v.Anchor.Seq, Block: v.Anchor.Block, BlockTime: strings.Trim(blockTime(times[v.Anchor.Seq]), "-"),
				Tx: v.Anchor.Tx, Deleted: v.Row == nil}
			if v.Row != nil {
				h.Bytes, h.Leaf = len(replica.RenderContent(v.Row)), fmt.Sprintf("%x", seal.Leaf(v.Row))
			}
			out = append(out, h)
		}
		printJSON(ctx, cio, out)
		return nil
	}
	for _, v := range vs {
		at := fmt.Sprintf("seq %d block %d time %s tx %s", v.Anchor.Seq, v.Anchor.Block, blockTime(times[v.Anchor.Seq]), v.Anchor.Tx)
		if v.Row == nil {
			fmt.Fprintf(cio.out, "%s: deleted\n", at)
			continue
		}
		fmt.Fprintf(cio.out, "%s: %d bytes, leaf %x\n", at, len(replica.RenderContent(v.Row)), seal.Leaf(v.Row))
	}
	return nil
}

// blockTime prints a block timestamp as @<time> takes it ("-" while it is not recorded).
func blockTime(unix uint64) string {
	if unix == 0 {
		return "-"
	}
	return time.Unix(int64(unix), 0).UTC().Format(time.RFC3339)
}

// keyOfPath finds the mount a path lives in and the row key it names.
func keyOfPath(ctx context.Context, cio *cmdIO, path string) (vault.Key, error) {
	abs, err := cio.absPath(path)
	if err != nil {
		return vault.Key{}, err
	}
	dir := filepath.Dir(abs)
	for {
		if _, err := os.Stat(filepath.Join(dir, ".kint", "status")); err == nil {
			break
		}
		if dir == filepath.Dir(dir) {
			return vault.Key{}, usagef("%s is not inside a kintfs mount", path)
		}
		dir = filepath.Dir(dir)
	}
	rel, _ := filepath.Rel(dir, abs)
	k, short, err := fs.KeyOfPath(rel)
	switch {
	case errors.Is(err, fs.ErrNotRowPath):
		return k, usagef("%s is not a row of the live tree (tier/key or entity/category/key)", path)
	case err != nil:
		return k, usagef("%s: %v", path, err)
	case k.Local:
		// a local file has no anchored row; its name escapes no key
		return k, usagef("%s: %v", path, fs.ErrBadFileName)
	case short:
		buf := make([]byte, 4096)
		n, err := unix.Getxattr(abs, "user.kint.key", buf)
		if err != nil {
			return k, fmt.Errorf("%s: read user.kint.key: %w", path, err)
		}
		k.Key = string(buf[:n])
	}
	return k, nil
}

// verifyEntry is one file as verify --json prints it.
type verifyEntry struct {
	Path     string `json:"path"`
	OK       bool   `json:"ok"`
	Error    string `json:"error,omitempty"`
	Leaf     string `json:"leaf,omitempty"`
	RowsRoot string `json:"rows_root,omitempty"`
	Seq      uint64 `json:"seq,omitempty"`
	Block    uint64 `json:"block,omitempty"`
	Tx       string `json:"tx,omitempty"`
	Steps    int    `json:"steps"`
	Staged   bool   `json:"staged"` // the file has changes not yet anchored; the anchored version was proven
}

func runVerify(ctx context.Context, cio *cmdIO, o *infoOptions, args []string) error {
	if len(args) == 0 {
		return usagef("verify PATH...")
	}
	e, err := openVault(ctx, cio, openOptions{noDial: offlineIn(ctx, cio)})
	if err != nil {
		return err
	}
	defer e.Close()
	if err := verifyHead(ctx, cio, e); err != nil {
		return err
	}
	failed := 0
	var entries []verifyEntry
	if o.json {
		defer func() { printJSON(ctx, cio, entries) }()
		entries = []verifyEntry{}
	}
	for _, p := range args {
		k, err := keyOfPath(ctx, cio, p)
		if err != nil {
			return err
		}
		proof, err := e.rep.Prove(k)
		if err != nil {
			if o.json {
				entries = append(entries, verifyEntry{Path: p, Error: err.Error()})
			} else {
				fmt.Fprintf(cio.out, "%s: FAILED: %v\n", p, err)
			}
			failed++
			continue
		}
		if o.json {
			entries = append(entries, verifyEntry{Path: p, OK: true, Leaf: fmt.Sprintf("%x", proof.Leaf), RowsRoot: fmt.Sprintf("%x", proof.RowsRoot),
				Seq: proof.Epoch.Seq, Block: proof.Epoch.Block, Tx: proof.Epoch.Tx, Steps: len(proof.Steps), Staged: proof.Staged})
			continue
		}
		note := ""
		if a := proof.Anchored; a != nil {
			note = fmt.Sprintf("; the row last changed in epoch %d (block %d, tx %s)", a.Seq, a.Block, a.Tx)
		}
		if proof.Staged {
			note += " (the file has changes not yet anchored; the anchored version was proven)"
		}
		fmt.Fprintf(cio.out, "%s: ok: leaf %x in rows_root %x of epoch %d (block %d, tx %s), %d proof steps%s\n", p,
			proof.Leaf[:8], proof.RowsRoot[:8], proof.Epoch.Seq, proof.Epoch.Block, proof.Epoch.Tx, len(proof.Steps), note)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d files did not verify", failed, len(args))
	}
	return nil
}

// verifyHead refuses, as kint's verify does, when the chain moved past this machine's mirror:
// a proof against an old root would vouch for a value another machine replaced. A head that
// cannot be read is a warning; KINT_OFFLINE=1 does not read it.
func verifyHead(ctx context.Context, cio *cmdIO, e *vaultEnv) error {
	if offlineIn(ctx, cio) {
		return nil
	}
	mirror, err := e.rep.MirrorHead()
	if err != nil {
		return err
	}
	var h chain.Head
	c := e.client()
	if c == nil {
		err = replica.ErrOffline
	} else {
		h, err = c.Head(ctx, e.vault.Owner, e.vault.Space)
	}
	if err != nil {
		fmt.Fprintf(cio.err, "kintfs verify: chain head unavailable (%v); verifying against the local mirror only\n", err)
		return nil
	}
	if h.Seq > mirror.Seq {
		return exitCodeError{code: exitFailure, msg: fmt.Sprintf("chain moved to seq %d at block %d, pull first (this machine's mirror is at seq %d)", h.Seq, h.Block, mirror.Seq)}
	}
	return nil
}

// opLine is the last push or pull for a person.
func opLine(op *replica.OpStatus) string {
	if op == nil {
		return "none since the start"
	}
	if op.Error != "" {
		return op.At + ", failed: " + op.Error
	}
	switch rep := op.Report.(type) {
	case *replica.PushReport:
		if n := len(rep.Epochs); n > 0 {
			return fmt.Sprintf("%s, %d epoch(s) anchored up to seq %d in %.1f s", op.At, n, rep.Epochs[n-1].Seq, rep.Seconds)
		}
	case *replica.PullReport:
		return fmt.Sprintf("%s, %d epoch(s) applied, mirror at seq %d", op.At, rep.Applied, rep.Mirror.Seq)
	}
	return op.At + ", done"
}

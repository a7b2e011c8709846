package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// results reads the files of one run's results directory.
type results struct{ dir string }

// json is name's object, nil when the step did not run.
func (r results) json(name string) map[string]any {
	m, err := readJSON(filepath.Join(r.dir, name))
	if err != nil {
		return nil
	}
	return m
}

// hf is the hyperfine results of one comparison, nil when it did not run.
func (r results) hf(name string) []hfResult {
	res, err := hfResults(filepath.Join(r.dir, "hf-"+name+".json"))
	if err != nil || len(res) == 0 {
		return nil
	}
	return res
}

// lines are the fields of each line of name.
func (r results) lines(name string) [][]string {
	f, err := os.Open(filepath.Join(r.dir, name))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, strings.Fields(sc.Text()))
	}
	return out
}

// coldPasses are the seconds of each cold grep pass (cold.txt), on the mount and native.
func (r results) coldPasses() (mount, native []float64) {
	for _, l := range r.lines("cold.txt") {
		if len(l) < 2 {
			continue
		}
		x, err := strconv.ParseFloat(l[1], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(l[0], "mount"):
			mount = append(mount, x)
		case strings.HasPrefix(l[0], "native"):
			native = append(native, x)
		}
	}
	return mount, native
}

// num is a number of a result (0 when missing); numOr falls back to def.
func num(m map[string]any, key string) float64 { return numOr(m, key, 0) }

func numOr(m map[string]any, key string, def float64) float64 {
	switch v := m[key].(type) {
	case float64:
		return v
	case bool:
		if v {
			return 1
		}
		return 0
	}
	return def
}

func integer(m map[string]any, key string) int { return int(num(m, key)) }

// fmtS is a duration in seconds as the report writes it.
func fmtS(x float64) string {
	switch {
	case x < 1e-3:
		return fmt.Sprintf("%.0f µs", x*1e6)
	case x < 1:
		return fmt.Sprintf("%.1f ms", x*1e3)
	}
	return fmt.Sprintf("%.2f s", x)
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

type verdictRow struct{ what, verdict, value, target string }

// report is the markdown being written.
type report struct {
	rows     [][6]string
	verdicts []verdictRow
	lines    []string
}

func (rp *report) w(format string, a ...any) { rp.lines = append(rp.lines, fmt.Sprintf(format, a...)) }

// add is a row of the mount-vs-native table; target 0 is none, ratio < 0 none.
func (rp *report) add(what, mount, native string, ratio, target float64) {
	verdict, ratioS, targetS := "", "", ""
	if ratio >= 0 {
		ratioS = fmt.Sprintf("%.2fx", ratio)
	}
	if target > 0 {
		targetS = fmt.Sprintf("<= %gx", target)
		verdict = "met"
		if ratio > target {
			verdict = "**missed**"
		}
		rp.verdicts = append(rp.verdicts, verdictRow{what, verdict, ratioS, targetS})
	}
	rp.rows = append(rp.rows, [6]string{what, mount, native, ratioS, targetS, verdict})
}

func (rp *report) hfRow(r results, what, name string, target float64) {
	if h := r.hf(name); len(h) >= 2 {
		rp.add(what, fmtS(h[0].Median), fmtS(h[1].Median), h[0].Median/h[1].Median, target)
	}
}

// met is "met" or "**missed**".
func met(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// renderReport writes the markdown of the run whose results are in dir to out, and prints it.
func renderReport(dir, out string) error {
	r := results{dir}
	p := r.json("params.json")
	if p == nil {
		return fmt.Errorf("no params.json in %s", dir)
	}
	rp := &report{}
	rp.mountVsNative(r, p)
	rp.head(r, p)
	rp.w("## Mount vs native")
	rp.w("")
	rp.w("| measurement | mount | native | ratio | target | |")
	rp.w("|---|---|---|---|---|---|")
	for _, row := range rp.rows {
		cs := make([]string, len(row))
		for i, c := range row {
			cs[i] = cell(c)
		}
		rp.w("| %s |", strings.Join(cs, " | "))
	}
	rp.w("")
	rp.vaultOps(r, p)
	rp.w("")
	cost := append(rp.costSections(r), rp.engineSections(r)...)
	rp.w("## Targets")
	rp.w("")
	rp.w("| target | measured | | |")
	rp.w("|---|---|---|---|")
	for _, v := range rp.verdicts {
		rp.w("| %s | %s | %s | %s |", cell(v.what), v.value, v.target, v.verdict)
	}
	rp.w("")
	rp.floorsSection(r, p)
	rp.lines = append(rp.lines, cost...)
	rp.w("Sizes: ROWS=%d CATS=%d ROW_BYTES=%d CP_FILES=%d VERSIONS=%d PULL_EPOCHS=%d RSS_ROWS=%d RUNS=%d COLD_RUNS=%d. Reproduce with"+
		" `make bench` (QUICK=1 for a small run of a few minutes; the variables above override the sizes).",
		integer(p, "rows"), integer(p, "cats"), integer(p, "row_bytes"), integer(p, "cp_files"), integer(p, "versions"),
		integer(p, "pull_epochs"), integer(p, "rss_rows"), integer(p, "runs"), integer(p, "cold_runs"))
	text := strings.Join(rp.lines, "\n") + "\n"
	if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
		return err
	}
	fmt.Print(text)
	return nil
}

// mountVsNative collects the rows of the side-by-side table.
func (rp *report) mountVsNative(r results, p map[string]any) {
	size := fmt.Sprintf("%d rows of ~%d B", integer(p, "rows"), integer(p, "row_bytes"))
	rp.hfRow(r, "`grep -r` ("+size+"), warm", "grep-warm", 2)
	rp.hfRow(r, "`grep -r`, warm, `--read-only` mount", "grep-warm-ro", 1.5)
	if m, n := r.coldPasses(); len(m) > 0 && len(n) > 0 {
		passes := len(m)
		mm, nm := median(m), median(n)
		rp.add(fmt.Sprintf("`grep -r`, cold: first pass after a fresh mount vs native after drop_caches (%d passes)", passes),
			fmtS(mm), fmtS(nm), mm/nm, 1.5)
	}
	rp.hfRow(r, "`find MNT -type f | wc -l`, warm", "find-warm", 3)
	rp.hfRow(r, "`ls -lR`, warm, xattrs on (the default)", "lslR-xattrs", 3)
	rp.hfRow(r, "`ls -lR`, warm, `--xattrs=false`", "lslR-noxattrs", 1.5)
	if cp := r.hf("cp"); len(cp) >= 3 {
		rp.add(fmt.Sprintf("`cp -r` of %d files of ~%d B into the mount (durable on close) vs native with fsync per file", integer(p, "cp_files"), integer(p, "row_bytes")),
			fmtS(cp[0].Median), fmtS(cp[1].Median), cp[0].Median/cp[1].Median, 1.5)
		rp.add("same, vs native `cp -r` without fsync (reference only)", fmtS(cp[0].Median), fmtS(cp[2].Median), cp[0].Median/cp[2].Median, 0)
	}
	rp.writePathRows(r)
	rh := r.json("readhist.json")
	if hc := r.hf("hist-cat"); len(hc) >= 2 {
		versions := 0
		if rh != nil {
			versions = integer(rh, "versions")
		}
		rp.add(fmt.Sprintf("`cat` one row at %d random `@<block>`s (%d versions) vs `cat` its current version as often", int(numOr(p, "hist_cat_reads", 20)), versions),
			fmtS(hc[0].Median), fmtS(hc[1].Median)+" (current)", hc[0].Median/hc[1].Median, 2)
	}
	if rh != nil {
		hist, cur, same := num(rh, "history_median_us"), num(rh, "current_median_us"), num(rh, "history_same_block_median_us")
		rp.add(fmt.Sprintf("one read (open, read, close) at an arbitrary `@<block>`, in-process, median of %d (each a new block) vs the current version", integer(rh, "reads")),
			fmt.Sprintf("%.0f µs", hist), fmt.Sprintf("%.0f µs (current)", cur), hist/cur, 2)
		rp.add("the same read again at an `@<block>` already looked up vs current", fmt.Sprintf("%.0f µs", same),
			fmt.Sprintf("%.0f µs (current)", cur), same/cur, 0)
	}
}

// head is the title, the method and the machine.
func (rp *report) head(r results, p map[string]any) {
	quick := ""
	if p["quick"] == true {
		quick = ", **QUICK=1: small sizes, not the reference numbers**"
	}
	rp.w("# kintfs benchmarks")
	rp.w("")
	rp.w("Produced by `make bench` (`scripts/bench.sh`%s). Each comparison runs in one invocation: the same work on a"+
		" kintfs dev mount and on the same tree in a native directory on the same disk, side by side. Times are medians"+
		" (hyperfine, `--warmup %d --runs %d`, for the warm cases; `--runs %d` for cp; 5 runs for the `cat` at random blocks).",
		quick, integer(p, "warmup"), integer(p, "runs"), integer(p, "cp_runs"))
	rp.w("")
	rp.w("## Machine")
	rp.w("")
	var loads []float64
	for _, l := range r.lines("load.txt") {
		if len(l) >= 2 {
			if x, err := strconv.ParseFloat(l[1], 64); err == nil {
				loads = append(loads, x)
			}
		}
	}
	took := "?"
	if s := num(p, "seconds"); s > 0 {
		took = fmt.Sprintf("%.0f min", s/60)
	}
	str := func(k string) string { s, _ := p[k].(string); return s }
	rp.w("- date: %s (UTC), run took %s", str("started"), took)
	rp.w("- nproc: %s; CPU: %s; memory: %s", str("nproc"), str("cpu"), str("memory"))
	rp.w("- kernel: %s; native tree and KINT_HOME on %s", str("kernel"), str("fstype"))
	rp.w("- kintfs %s; %s; %s", str("commit"), str("go"), str("hyperfine"))
	if len(loads) > 0 {
		lo, hi := loads[0], loads[0]
		for _, x := range loads {
			lo, hi = min(lo, x), max(hi, x)
		}
		rp.w("- load average (1 min) during the run: min %.1f, median %.1f, max %.1f (sampled every 10 s). Other jobs shared"+
			" the %s cores: numbers above 1 per core mean noise, which hits the mount (several processes per operation) more"+
			" than native", lo, median(loads), hi, str("nproc"))
	}
	rp.w("- dev chain: `kintfs devchain` in its own process (the mount's RSS and profile are its own); KINT_CONFIRMATIONS=1;" +
		" flushes only through `.kint/ctl` (quiet and size triggers set out of reach); `--max-lead 0`: a block per flush at once, not paced to the wall clock")
	if p["can_drop"] == true {
		rp.w("- cold runs: page cache dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) before each pass")
	} else {
		rp.w("- cold runs: page cache could NOT be dropped (not permitted): cold = fresh mount only")
	}
	rp.w("")
}

// vaultOps is the table of flushes, pulls, memory and gas.
func (rp *report) vaultOps(r results, p map[string]any) {
	rp.w("## Vault operations")
	rp.w("")
	rp.w("| measurement | result |")
	rp.w("|---|---|")
	if st := r.lines("mount-starts.txt"); len(st) > 0 {
		var parts []string
		for _, l := range st {
			if len(l) >= 2 {
				x, _ := strconv.ParseFloat(l[1], 64)
				part := fmt.Sprintf("%s %.1f s", l[0], x)
				if len(l) >= 3 {
					part += " (" + l[2] + " MB)"
				}
				parts = append(parts, part)
			}
		}
		rp.w("| mount start-up (`kintfs mount --dev` until `.kint/status` answers), %d starts, and the peak RSS (VmHWM) of each once ready (a mount that unlocks the vault with its passphrase, not a cached key, runs scrypt over 128 MB first) | %s |", len(st), strings.Join(parts, ", "))
	}
	pop, fn := r.json("populate.json"), r.json("flush-new.json")
	if pop != nil {
		files := integer(pop, "files")
		per := 1000 * num(pop, "seconds") / float64(max(files, 1))
		verdict := met(per <= 0.3)
		rp.verdicts = append(rp.verdicts, verdictRow{fmt.Sprintf("writing %d new rows through the mount (a copy; each close durable), per file", files),
			verdict, fmt.Sprintf("%.2f ms", per), "<= 0.3 ms"})
		rp.w("| **write %d new rows through the mount** (a copy; each close durable; target <= 0.3 ms per file: %s) | %.1f s, %.2f ms per file |",
			files, strings.ReplaceAll(verdict, "*", ""), num(pop, "seconds"), per)
	}
	if pop != nil && fn != nil {
		rp.w("| flush %d new rows | %.1f s (%.1f s of it waiting on the chain): %d epochs, %d calldata bytes, %d gas |", integer(fn, "rows"), num(fn, "seconds"),
			num(fn, "chain_seconds"), integer(fn, "epochs"), integer(fn, "calldata_bytes"), integer(fn, "gas_used"))
	}
	rw, fc := r.json("rewrite.json"), r.json("flush-changed.json")
	if rw != nil && fc != nil {
		verdict := met(num(fc, "own_seconds") <= 2)
		rp.verdicts = append(rp.verdicts, verdictRow{fmt.Sprintf("flush of %d changed rows (%d epochs, dev chain; the time spent waiting on the chain, measured by the push, subtracted)",
			integer(fc, "rows"), integer(fc, "epochs")), verdict, fmt.Sprintf("%.1f s", num(fc, "own_seconds")), "<= 2 s"})
		rp.w("| rewrite the %d rows through the mount | %.1f s |", integer(rw, "files"), num(rw, "seconds"))
		rp.w("| **flush %d changed rows** | **%.1f s (%.1f s of it waiting on the chain, %.1f s its own): %d epochs, %d calldata bytes** (%.0f per row), %d gas |",
			integer(fc, "rows"), num(fc, "seconds"), num(fc, "chain_seconds"), num(fc, "own_seconds"), integer(fc, "epochs"), integer(fc, "calldata_bytes"),
			num(fc, "calldata_bytes")/float64(max(integer(fc, "rows"), 1)), integer(fc, "gas_used"))
	}
	if hw := r.json("hist-write.json"); hw != nil {
		rp.w("| write + flush one row, %d times (its history) | %.0f s, %.0f ms per write + flush |", integer(hw, "versions"),
			num(hw, "seconds"), 1000*num(hw, "seconds")/float64(max(integer(hw, "versions"), 1)))
	}
	rp.pulls(r)
	rp.rss(r, p)
	if bf := r.json("backfill.json"); bf != nil {
		verdict := met(num(bf, "rpc_per_epoch") <= 2)
		rp.verdicts = append(rp.verdicts, verdictRow{fmt.Sprintf("RPC calls per epoch of a history backfill (%d epochs under a snapshot)", integer(bf, "epochs")),
			verdict, fmt.Sprintf("%.2f", num(bf, "rpc_per_epoch")), "<= 2"})
		rp.w("| **backfill** of the history of %d epochs under a snapshot, on a fresh machine (in-process dev chain) | %.0f epochs per second, %.2f RPC calls per epoch |",
			integer(bf, "epochs"), num(bf, "epochs_per_second"), num(bf, "rpc_per_epoch"))
	}
	if g := r.json("gas.json"); g != nil {
		pushes := integer(g, "pushes")
		verdict := met(integer(g, "at_floor") == pushes)
		rp.verdicts = append(rp.verdicts, verdictRow{fmt.Sprintf("gas_used / EIP-7623 floor over %d pushes after the first", pushes),
			verdict, fmt.Sprintf("max %.4f", num(g, "ratio_max")), "1.000"})
		rp.w("| **gas_used / EIP-7623 floor** 21000 + 10 x (zeros + 4 x nonzeros) of the calldata, %d pushes after the first (expected 1.000) | min %.4f, median %.4f, max %.4f; %d of %d exactly at the floor |",
			pushes, num(g, "ratio_min"), num(g, "ratio_median"), num(g, "ratio_max"), integer(g, "at_floor"), pushes)
		offs, _ := g["worst_off_floor"].([]any)
		for i, o := range offs {
			if i == 3 {
				break
			}
			om, _ := o.(map[string]any)
			rp.w("| &nbsp;&nbsp;off the floor: seq %d | %d calldata bytes, gas %d vs floor %d (%.4f) |", integer(om, "seq"),
				integer(om, "calldata_bytes"), integer(om, "gas_used"), integer(om, "floor"), num(om, "ratio"))
		}
	}
}

func (rp *report) pulls(r results) {
	for _, pl := range []struct{ name, what string }{
		{"pull-cold", "**cold pull** into a fresh KINT_HOME"},
		{"pull-again", "**warm pull**: second pull, same home, nothing new"},
		{"pull-full-cached", "`pull --full` on that home (walks every epoch again)"},
		{"pull-primed", "fresh replica whose epoch cache is already there (a copy of the first's)"},
	} {
		p := r.json(pl.name + ".json")
		if p == nil {
			continue
		}
		epochs := integer(p, "epochs")
		per := 0.0
		if epochs > 0 {
			per = num(p, "rpc_calls") / float64(epochs)
		}
		methods, _ := p["methods"].(map[string]any)
		names := make([]string, 0, len(methods))
		for k := range methods {
			names = append(names, k)
		}
		sort.Strings(names)
		sort.SliceStable(names, func(i, j int) bool { return num(methods, names[i]) > num(methods, names[j]) })
		parts := make([]string, len(names))
		for i, k := range names {
			parts[i] = fmt.Sprintf("%s %d", k, integer(methods, k))
		}
		said := ""
		if s, _ := p["note"].(string); s != "" {
			said = "; it said: " + cell(s)
		}
		rp.w("| %s, %d-epoch vault | %.2f s; applied %d, fetched %d, from_cache %d; %d RPC calls = %.2f per epoch, in %d HTTP requests (%s)%s |",
			pl.what, epochs, num(p, "seconds"), integer(p, "applied"), integer(p, "fetched"), integer(p, "from_cache"),
			integer(p, "rpc_calls"), per, integer(p, "http_requests"), strings.Join(parts, ", "), said)
	}
}

func (rp *report) rss(r results, p map[string]any) {
	rss := r.json("rss.json")
	if rss == nil {
		return
	}
	peak := numOr(rss, "hwm_final_kb", num(rss, "hwm_after_walk_kb")) / 1024
	// issue 34's target; issue 20's was 150 MB
	const target = 120
	verdict := met(peak <= target)
	rows := integer(rss, "rows")
	rp.verdicts = append(rp.verdicts, verdictRow{fmt.Sprintf("peak RSS (VmHWM) of a mount holding %d rows (mounted, every file read, a batch written and flushed)", rows),
		verdict, fmt.Sprintf("%.0f MB", peak), fmt.Sprintf("<= %d MB", target)})
	bound := ""
	if rss["stopped_by_time_bound"] == true {
		bound = " (**stopped by the time bound**)"
	}
	rp.w("| populate %d rows through the mount, flush every %d%s | %.0f s (writing %.0f s; %d flushes %.0f s) |",
		rows, integer(p, "rss_flush_every"), bound, num(rss, "populate_seconds"), num(rss, "write_seconds"),
		integer(rss, "flushes"), num(rss, "flush_seconds"))
	rp.w("| **peak RSS (VmHWM) of a mount holding %d rows** (target <= %d MB: %s): a fresh mount of them, then `find` + `grep -r` + `ls -lR` over all %d files (%.1f s), then %d rows rewritten and flushed (%.1f s) | %.0f MB right after mounting; %.0f MB after reading every file (VmRSS %.0f MB); **%.0f MB** after the flush (VmRSS %.0f MB) |",
		rows, target, strings.ReplaceAll(verdict, "*", ""), integer(rss, "files_seen"), num(rss, "walk_seconds"), integer(rss, "batch_rows"),
		num(rss, "batch_flush_seconds"), num(rss, "hwm_fresh_mount_kb")/1024, num(rss, "hwm_after_walk_kb")/1024,
		num(rss, "rss_after_walk_kb")/1024, num(rss, "hwm_final_kb")/1024, num(rss, "rss_final_kb")/1024)
	if anon := num(rss, "anon_peak_kb"); anon > 0 {
		rp.w("| the same mount's memory by kind, sampled every %v | anonymous memory (heap, stacks, badger's buffers) at most **%.0f MB**, file-backed pages %.0f MB at that moment; %.0f MB of the file-backed pages are the kintfs executable's own (they do not grow with the vault) |",
			sampleEvery, anon/1024, num(rss, "file_at_anon_peak_kb")/1024, num(rss, "exe_resident_kb")/1024)
	}
	rp.w("| the mount process that created that vault and populated it | VmHWM %.0f MB with the vault still empty; %.0f MB after populating and flushing (VmRSS %.0f MB) |",
		num(rss, "hwm_empty_kb")/1024, num(rss, "hwm_populate_kb")/1024, num(rss, "rss_after_populate_kb")/1024)
}

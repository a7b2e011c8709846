package main

// The steps of a run, in the order run takes them; each writes its results into the run's
// results directory, where the report reads them.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"kintfs/chain/rpcproxy"
)

// populate starts the dev chain and the measured mount, generates the native tree, copies it
// into the mount and flushes it.
func (b *bench) populate() error {
	c := b.cfg
	say("dev chain and mount (KINT_HOME=%s)", b.h1)
	if err := b.devchainStart(b.h1); err != nil {
		return err
	}
	note("dev chain at %s (pid %d)", b.rpc, b.devchain.cmd.Process.Pid)
	if err := b.mountStart("main", b.h1, b.mnt); err != nil {
		return err
	}
	note("mounted %s (pid %d)", b.mnt, b.mount.cmd.Process.Pid)

	say("generating %d rows of ~%d bytes (%d categories x %d keys)", c.rows, c.rowBytes, c.cats, c.keys)
	if err := b.tool(filepath.Join(b.res, "gen-native.json"), "gen", "-dir", b.nat+"/entity", "-cats", strconv.Itoa(c.cats),
		"-keys", strconv.Itoa(c.keys), "-size", strconv.Itoa(c.rowBytes), "-variant", "1"); err != nil {
		return err
	}
	if err := os.MkdirAll(b.nat+"/entity/hist", 0o755); err != nil { // the history row's twin
		return err
	}
	if err := os.WriteFile(b.nat+"/entity/hist/row", []byte(`{"v":0}`), 0o644); err != nil {
		return err
	}
	t0 := time.Now()
	if err := b.tool(filepath.Join(b.res, "populate.json"), "copy", "-src", b.nat+"/entity", "-dst", b.mnt+"/entity"); err != nil {
		return err
	}
	note("copied into the mount in %.3fs", since(t0))
	return b.flushMeasured(b.mnt, "flush-new")
}

// grepCmd and the like are the shell commands hyperfine times.
func grepCmd(dir string) string { return fmt.Sprintf("grep -r %s %s | wc -l", Needle, dir) }

func (b *bench) warm() error {
	if b.cfg.skip["warm"] {
		return nil
	}
	c := b.cfg
	say("warm: grep -r, find, ls -lR (xattrs on)")
	if err := b.hf("grep-warm", c.warmup, c.runs, grepCmd(b.mnt), grepCmd(b.nat)); err != nil {
		return err
	}
	if err := b.hf("find-warm", c.warmup, c.runs, "find "+b.mnt+" -type f | wc -l", "find "+b.nat+" -type f | wc -l"); err != nil {
		return err
	}
	return b.hf("lslR-xattrs", c.warmup, c.runs, "ls -lR "+b.mnt+" | wc -l", "ls -lR "+b.nat+" | wc -l")
}

func (b *bench) cp() error {
	c := b.cfg
	if c.skip["cp"] {
		return nil
	}
	say("cp -r of %d files of ~%d bytes (mount: durable on close; native: fsync per file)", c.cpFiles, c.rowBytes)
	src := filepath.Join(b.work, "cpsrc")
	if err := b.tool(os.DevNull, "gen", "-dir", src, "-prefix", "cpbench", "-cats", "1", "-keys", strconv.Itoa(c.cpFiles),
		"-size", strconv.Itoa(c.rowBytes), "-variant", "9"); err != nil {
		return err
	}
	dst, dstNoSync := b.nat+"/cpdst", b.nat+"/cpdst-nofsync"
	for _, d := range []string{dst, dstNoSync} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	from := src + "/cpbench000"
	err := b.hyperfine("cp", []string{"--style", "basic", "--warmup", "1", "--runs", strconv.Itoa(c.cpRuns),
		"--export-json", filepath.Join(b.res, "hf-cp.json"),
		"--prepare", fmt.Sprintf("rm -rf %s/entity/cpbench000 %s/cpbench000 %s/cpbench000", b.mnt, dst, dstNoSync),
		fmt.Sprintf("cp -r %s %s/entity/", from, b.mnt),
		fmt.Sprintf("%s copy -fsync -src %s -dst %s/cpbench000", b.bt, from, dst),
		fmt.Sprintf("cp -r %s %s/", from, dstNoSync)})
	if err != nil {
		return err
	}
	for _, d := range []string{b.mnt + "/entity/cpbench000", dst, dstNoSync} {
		os.RemoveAll(d)
	}
	return ctlFlush(b.mnt) // the copies are gone; anchor nothing but what is left (their deletions, if any)
}

func (b *bench) genArgs(dir string, cats, keys, variant int) []string {
	return []string{"gen", "-dir", dir, "-cats", strconv.Itoa(cats), "-keys", strconv.Itoa(keys),
		"-size", strconv.Itoa(b.cfg.rowBytes), "-variant", strconv.Itoa(variant)}
}

func (b *bench) flushChanged() error {
	c := b.cfg
	if c.skip["flush"] {
		return nil
	}
	say("flush of %d changed rows", c.rows)
	t0 := time.Now()
	if err := b.tool(filepath.Join(b.res, "rewrite.json"), b.genArgs(b.mnt+"/entity", c.cats, c.keys, 2)...); err != nil {
		return err
	}
	note("rewrote %d rows through the mount in %.3fs", c.rows, since(t0))
	if err := b.tool(os.DevNull, b.genArgs(b.nat+"/entity", c.cats, c.keys, 2)...); err != nil {
		return err
	}
	return b.flushMeasured(b.mnt, "flush-changed")
}

// pullBench has a second machine pull the vault of epochs epochs through a counting proxy:
// cold, again, --full, and a fresh replica whose epoch cache is already there.
func (b *bench) pullBench(epochs int) error {
	h2, h3 := filepath.Join(b.work, "home-pull"), filepath.Join(b.work, "home-pull-primed")
	say("pull: a second machine (KINT_HOME=%s) pulls the %d-epoch vault, through a counting RPC proxy", h2, epochs)
	proxy, err := rpcproxy.Start(b.rpc, "")
	if err != nil {
		return err
	}
	defer proxy.Close()
	var info struct {
		Contract string `json:"contract"`
		Accounts []struct {
			Address string `json:"address"`
		} `json:"accounts"`
	}
	data, err := os.ReadFile(filepath.Join(b.h1, "devchain", "devchain.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &info); err != nil || len(info.Accounts) == 0 {
		return fmt.Errorf("read devchain.json: %v", err)
	}
	pass := filepath.Join(b.h1, "dev-passphrase")
	for _, h := range []string{h2, h3} {
		out := filepath.Join(b.res, "init-"+filepath.Base(h)+".txt")
		cmd := exec.Command(b.bin, "init", "--owner", info.Accounts[0].Address, "--tenant", "dev", "--rpc", proxy.URL,
			"--contract", info.Contract, "--passphrase-stdin")
		cmd.Env = append(os.Environ(), "KINT_HOME="+h)
		in, err := os.Open(pass)
		if err != nil {
			return err
		}
		cmd.Stdin = in
		o, err := cmd.CombinedOutput()
		in.Close()
		os.WriteFile(out, o, 0o644)
		if err != nil {
			return fmt.Errorf("init %s: %s", h, o)
		}
	}
	for _, spec := range []struct{ name, home, extra string }{
		{"pull-cold", h2, ""}, {"pull-again", h2, ""}, {"pull-full-cached", h2, "--full"}, {"pull-primed", h3, ""},
	} {
		if spec.name == "pull-primed" { // a fresh replica whose epoch cache is already there
			if err := os.MkdirAll(h3+"/epochs", 0o700); err != nil {
				return err
			}
			if err := runQuiet("cp", "-r", h2+"/epochs/.", h3+"/epochs/"); err != nil {
				return err
			}
		}
		if err := b.pullOnce(proxy, spec.name, spec.home, spec.extra, epochs); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) pullOnce(proxy *rpcproxy.Proxy, name, home, extra string, epochs int) error {
	proxy.ResetStats()
	args := []string{"pull", "--json"}
	if extra != "" {
		args = append(args, extra)
	}
	cmd := exec.Command(b.bin, args...)
	cmd.Env = append(os.Environ(), "KINT_HOME="+home, "KINT_CONFIRMATIONS=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	secs := since(t0)
	os.WriteFile(filepath.Join(b.res, name+".report.json"), stdout.Bytes(), 0o644)
	os.WriteFile(filepath.Join(b.res, name+".err"), stderr.Bytes(), 0o644)
	if err != nil {
		return fmt.Errorf("%s failed: %s", name, stderr.String())
	}
	st := proxy.Stats()
	var rep struct {
		Walked, Applied, Fetched, Changed int
		FromCache                         int `json:"from_cache"`
		Mirror, Head                      struct{ Seq uint64 }
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return fmt.Errorf("%s: the report: %w", name, err)
	}
	var said []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			said = append(said, l)
		}
	}
	noteText := strings.Join(said, " ")
	if r := []rune(noteText); len(r) > 200 {
		noteText = string(r[:200])
	}
	return b.keep(name, map[string]any{"seconds": secs, "epochs": epochs, "walked": rep.Walked, "applied": rep.Applied,
		"fetched": rep.Fetched, "from_cache": rep.FromCache, "changed": rep.Changed, "rpc_calls": st.Calls,
		"http_requests": st.Requests, "methods": st.Methods, "response_bytes": st.ResponseBytes,
		"mirror_seq": rep.Mirror.Seq, "head_seq": rep.Head.Seq, "note": noteText})
}

// blocksLines are the lines of the mount's .kint/blocks: seq block tx, one an epoch.
func (b *bench) blocksLines() ([][]string, error) {
	data, err := os.ReadFile(filepath.Join(b.mnt, ".kint", "blocks"))
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, f)
		}
	}
	return out, nil
}

// histAndPull writes VERSIONS versions of one row, one flush each, runs the pull bench once
// the vault has PULL_EPOCHS epochs, and times reads of the row at its blocks.
func (b *bench) histAndPull() error {
	c := b.cfg
	needPull := !c.skip["pull"]
	if c.skip["hist"] {
		if !needPull {
			return nil
		}
		lines, err := b.blocksLines()
		if err != nil {
			return err
		}
		return b.pullBench(len(lines))
	}
	say("history: %d versions of entity/hist/row, one flush each (bounded by %ds)", c.versions, c.histMaxSeconds)
	pad := strings.Repeat("h", max(c.rowBytes-40, 0))
	versionsPath := filepath.Join(b.res, "hist-versions.txt")
	vf, err := os.Create(versionsPath)
	if err != nil {
		return err
	}
	defer vf.Close()
	t0 := time.Now()
	deadline := t0.Add(time.Duration(c.histMaxSeconds) * time.Second)
	lines, err := b.blocksLines()
	if err != nil {
		return err
	}
	v, n := 0, len(lines)
	for {
		if needPull && n >= c.pullEpochs {
			if err := b.pullBench(n); err != nil {
				return err
			}
			needPull = false
			say("history, continued")
		}
		if v >= c.versions && !needPull {
			break
		}
		if time.Now().After(deadline) {
			note("history: time bound reached after %d versions", v)
			break
		}
		v++
		if err := os.WriteFile(b.mnt+"/entity/hist/row", fmt.Appendf(nil, `{"v":%d,"pad":"%s"}`, v, pad), 0o644); err != nil {
			return err
		}
		if err := ctlFlush(b.mnt); err != nil {
			return err
		}
		lines, err := b.blocksLines()
		if err != nil || len(lines) == 0 || len(lines[len(lines)-1]) < 2 {
			return fmt.Errorf("read .kint/blocks after version %d: %v", v, err)
		}
		last := lines[len(lines)-1]
		n, _ = strconv.Atoi(last[0])
		fmt.Fprintf(vf, "%s %d\n", last[1], v)
		if v%50 == 0 {
			fmt.Fprintf(os.Stderr, "\r   %d versions, %d epochs, %.3fs   ", v, n, since(t0))
		}
	}
	fmt.Fprintln(os.Stderr)
	if err := vf.Close(); err != nil {
		return err
	}
	if err := b.keep("hist-write", map[string]any{"versions": v, "seconds": since(t0), "epochs_total": n}); err != nil {
		return err
	}
	if err := b.tool(filepath.Join(b.res, "readhist.json"), "readhist", "-cur", b.mnt+"/entity/hist/row",
		"-hist", b.mnt+"/@%d/entity/hist/row", "-versions", versionsPath, "-n", strconv.Itoa(c.histReads)); err != nil {
		return err
	}
	rh, _ := os.ReadFile(filepath.Join(b.res, "readhist.json"))
	note("reads: %s", bytes.TrimSpace(rh))
	// The same as a user does it: cat at HIST_CAT_READS random blocks (a new block nearly
	// every time: epoch blocks and the blocks between them) vs cat of the current version as
	// often.
	if err := b.catScripts(versionsPath); err != nil {
		return err
	}
	return b.hf("hist-cat", 1, min(c.runs, 5), "bash "+b.work+"/cat-hist.sh", "bash "+b.work+"/cat-cur.sh")
}

// catScripts writes the two scripts hyperfine runs for hist-cat: each picks HIST_CAT_READS
// random anchored blocks (or the block after) at every run, and cats the row there or the
// current row.
func (b *bench) catScripts(versions string) error {
	pick := fmt.Sprintf("shuf -n %d %q | awk 'BEGIN{srand()} {print $1 + int(rand() * 2)}' |\n", b.cfg.histCatReads, versions)
	hist := pick + fmt.Sprintf("\twhile read -r b; do cat \"%s/@$b/entity/hist/row\"; done\n", b.mnt)
	cur := pick + fmt.Sprintf("\twhile read -r b; do cat \"%s/entity/hist/row\"; done\n", b.mnt)
	if err := os.WriteFile(b.work+"/cat-hist.sh", []byte(hist), 0o644); err != nil {
		return err
	}
	return os.WriteFile(b.work+"/cat-cur.sh", []byte(cur), 0o644)
}

// backfill runs the replica's in-process backfill benchmark.
func (b *bench) backfill() error {
	c := b.cfg
	if c.skip["backfill"] {
		return nil
	}
	say("backfill: a fresh machine restores %d one-row epochs under a snapshot and records their history", c.pullEpochs)
	cmd := exec.Command("go", "test", "-count=1", "-run", "^$", "-bench", "^BenchmarkBackfill$", "-benchtime=1x", "./replica/")
	cmd.Env = append(os.Environ(), fmt.Sprintf("KINT_BENCH_EPOCHS=%d", c.pullEpochs))
	out, err := cmd.CombinedOutput()
	os.WriteFile(filepath.Join(b.res, "backfill.out"), out, 0o644)
	if err != nil {
		return fmt.Errorf("backfill benchmark: %s", tail(filepath.Join(b.res, "backfill.out"), 5))
	}
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(l, "BenchmarkBackfill") {
			continue
		}
		eps, rpc := metric(l, "epochs/s"), metric(l, "rpc/epoch")
		if eps < 0 || rpc < 0 {
			break
		}
		return b.keep("backfill", map[string]any{"epochs": c.pullEpochs, "epochs_per_second": eps, "rpc_per_epoch": rpc})
	}
	return fmt.Errorf("backfill benchmark: no epochs/s and rpc/epoch in its output")
}

// metric is the number before unit in a benchmark line (-1 when there is none).
func metric(line, unit string) float64 {
	f := strings.Fields(line)
	for i := 1; i < len(f); i++ {
		if f[i] == unit {
			if x, err := strconv.ParseFloat(f[i-1], 64); err == nil {
				return x
			}
		}
	}
	return -1
}

func (b *bench) gas() error {
	if b.cfg.skip["gas"] {
		return nil
	}
	say("gas of every push after the first vs the EIP-7623 calldata floor")
	blocks := filepath.Join(b.res, "blocks.txt")
	if err := copyFile(filepath.Join(b.mnt, ".kint", "blocks"), blocks, 0o644); err != nil {
		return err
	}
	if err := b.tool(filepath.Join(b.res, "gas.json"), "gas", "-rpc", b.rpc, "-blocks", blocks); err != nil {
		return err
	}
	g, _ := os.ReadFile(filepath.Join(b.res, "gas.json"))
	note("%s", bytes.TrimSpace(g))
	return nil
}

// timeGrep times one grep -r of needle over dir, as the shell pipes it into wc -l.
func timeGrep(dir string) (float64, error) {
	t0 := time.Now()
	err := exec.Command("sh", "-c", grepCmd(dir)+" >/dev/null").Run()
	return since(t0), err
}

// cold: the first grep after a fresh mount, page cache dropped, vs native cold.
func (b *bench) cold() error {
	c := b.cfg
	if c.skip["cold"] {
		return nil
	}
	say("cold grep -r: %d fresh mounts vs native after drop_caches (drop_caches possible: %d)", c.coldRuns, btoi(b.canDrop))
	coldPath := filepath.Join(b.res, "cold.txt")
	if err := os.WriteFile(coldPath, nil, 0o644); err != nil {
		return err
	}
	for i := 1; i <= c.coldRuns; i++ {
		b.mountStop()
		b.dropCaches()
		if err := b.mountStart(fmt.Sprintf("cold%d", i), b.h1, b.mnt); err != nil {
			return err
		}
		m, err := timeGrep(b.mnt)
		if err != nil {
			return err
		}
		appendLine(coldPath, "mount %.3f", m)
		b.dropCaches()
		n, err := timeGrep(b.nat)
		if err != nil {
			return err
		}
		appendLine(coldPath, "native %.3f", n)
		note("pass %d: mount %.3f native %.3f ", i, m, n)
	}
	return nil
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

func (b *bench) readOnly() error {
	return b.remounted("ro", "warm grep -r on a --read-only mount", "--read-only", "grep-warm-ro", grepCmd(b.mnt), grepCmd(b.nat))
}

func (b *bench) noXattr() error {
	return b.remounted("noxattr", "warm ls -lR with --xattrs=false", "--xattrs=false", "lslR-noxattrs",
		"ls -lR "+b.mnt+" | wc -l", "ls -lR "+b.nat+" | wc -l")
}

// remounted mounts the measured vault again with one option and compares a warm command
// on it with native, unless step is skipped.
func (b *bench) remounted(step, title, opt, name, onMount, onNative string) error {
	if b.cfg.skip[step] {
		return nil
	}
	say("%s", title)
	b.mountStop()
	if err := b.mountStart(step, b.h1, b.mnt, opt); err != nil {
		return err
	}
	return b.hf(name, b.cfg.warmup, b.cfg.runs, onMount, onNative)
}

// rss: the peak RSS of a mount holding RSS_ROWS rows (another vault on the same chain),
// populated in batches, then mounted afresh, read whole, and a batch rewritten and flushed.
func (b *bench) rss() error {
	c := b.cfg
	if c.skip["rss"] {
		return nil
	}
	h4, mnt4 := filepath.Join(b.work, "home-rss"), filepath.Join(b.work, "mnt-rss")
	say("peak RSS: a mount of %d rows (another vault on the same chain), flushed every %d rows", c.rssRows, c.rssFlushEvery)
	if err := os.MkdirAll(h4, 0o700); err != nil {
		return err
	}
	os.Chmod(h4, 0o700)
	if err := os.Symlink(filepath.Join(b.h1, "devchain"), filepath.Join(h4, "devchain")); err != nil {
		return err
	}
	if err := b.mountStart("rss", h4, mnt4); err != nil {
		return err
	}
	r := map[string]any{"hwm_empty_kb": b.procKB("VmHWM")}
	const rssKeys = 100
	rssCats := (c.rssRows + rssKeys - 1) / rssKeys
	popPath := filepath.Join(b.res, "rss-populate.json")
	args := append(b.genArgs(mnt4+"/entity", rssCats, rssKeys, 1), "-flush-every", strconv.Itoa(c.rssFlushEvery),
		"-ctl", mnt4+"/.kint/ctl", "-max-seconds", strconv.Itoa(c.rssMaxSeconds))
	if err := b.tool(popPath, args...); err != nil {
		return err
	}
	r["hwm_populate_kb"], r["rss_after_populate_kb"] = b.procKB("VmHWM"), b.procKB("VmRSS")
	st, err := readStatus(mnt4)
	if err != nil {
		return err
	}
	pop, err := readJSON(popPath)
	if err != nil {
		return err
	}
	popText, _ := os.ReadFile(popPath)
	note("populated: %s; VmHWM %v kB, staged %d", bytes.TrimSpace(popText), r["hwm_populate_kb"], st.StagedRows)
	b.mountStop()
	b.dropCaches()
	if err := b.mountStart("rss-reopen", h4, mnt4); err != nil {
		return err
	}
	r["hwm_fresh_mount_kb"] = b.procKB("VmHWM")
	pid := b.mount.cmd.Process.Pid
	mem := startMemSampler(pid)
	t0 := time.Now()
	files, err := exec.Command("sh", "-c", "find "+mnt4+" -type f | wc -l").Output()
	if err != nil {
		return err
	}
	if err := exec.Command("sh", "-c", grepCmd(mnt4)+" >/dev/null").Run(); err != nil {
		return err
	}
	if err := exec.Command("sh", "-c", "ls -lR "+mnt4+" | wc -l >/dev/null").Run(); err != nil {
		return err
	}
	r["walk_seconds"] = since(t0)
	r["files_seen"], _ = strconv.Atoi(strings.TrimSpace(string(files)))
	r["hwm_after_walk_kb"], r["rss_after_walk_kb"] = b.procKB("VmHWM"), b.procKB("VmRSS")
	// and a write + flush of one batch, in that same mount
	batchCats := (c.rssFlushEvery + rssKeys - 1) / rssKeys
	if err := b.tool(os.DevNull, b.genArgs(mnt4+"/entity", batchCats, rssKeys, 2)...); err != nil {
		return err
	}
	t0 = time.Now()
	if err := ctlFlush(mnt4); err != nil {
		return err
	}
	r["batch_rows"], r["batch_flush_seconds"] = batchCats*rssKeys, since(t0)
	r["hwm_final_kb"], r["rss_final_kb"] = b.procKB("VmHWM"), b.procKB("VmRSS")
	r["anon_peak_kb"], r["file_at_anon_peak_kb"] = mem.end()
	r["exe_resident_kb"] = exeResidentKB(pid)
	b.mountStop()
	r["rows"], r["populate_seconds"], r["write_seconds"] = pop["files"], pop["seconds"], pop["write_seconds"]
	r["flush_seconds"], r["flushes"], r["stopped_by_time_bound"] = pop["flush_seconds"], pop["flushes"], pop["stopped_by_time_bound"]
	r["staged_after_populate"] = st.StagedRows
	return b.keep("rss", r)
}

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"kintfs/chain/rpcproxy"
)

// benchConfig holds the sizes and knobs of a run, read from the environment (see
// docs/benchmarks.md and scripts/bench.sh).
type benchConfig struct {
	quick                                         bool
	rows, cats, keys, rowBytes, cpFiles, versions int
	histReads, histCatReads, pullEpochs           int
	rssRows, rssFlushEvery                        int
	runs, warmup, cpRuns, coldRuns                int
	histMaxSeconds, rssMaxSeconds                 int
	out, work, reportFrom                         string
	skip                                          map[string]bool
	profile, keep                                 bool
}

// envInt is the integer in environment variable name, or def.
func envInt(name string, def int) (int, error) {
	s := os.Getenv(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a whole number", name, s)
	}
	return n, nil
}

func envStr(name, def string) string {
	if s := os.Getenv(name); s != "" {
		return s
	}
	return def
}

// loadConfig reads the knobs: QUICK=1 makes every size small unless it is set.
func loadConfig(root string) (*benchConfig, error) {
	c := &benchConfig{quick: os.Getenv("QUICK") == "1", skip: map[string]bool{}}
	type knob struct {
		dst          *int
		name         string
		def, quickTo int
	}
	knobs := []knob{
		{&c.rows, "ROWS", 10000, 1000}, {&c.cats, "CATS", 100, 10}, {&c.rowBytes, "ROW_BYTES", 1024, 1024},
		{&c.cpFiles, "CP_FILES", 1000, 200}, {&c.versions, "VERSIONS", 1000, 20}, {&c.histReads, "HIST_READS", 50, 20},
		{&c.histCatReads, "HIST_CAT_READS", 10, 10}, {&c.pullEpochs, "PULL_EPOCHS", 500, 20},
		{&c.rssRows, "RSS_ROWS", 100000, 2000}, {&c.rssFlushEvery, "RSS_FLUSH_EVERY", 10000, 1000},
		{&c.runs, "RUNS", 10, 3}, {&c.warmup, "WARMUP", 2, 1}, {&c.cpRuns, "CP_RUNS", 5, 3}, {&c.coldRuns, "COLD_RUNS", 3, 1},
		{&c.histMaxSeconds, "HIST_MAX_SECONDS", 1500, 1500}, {&c.rssMaxSeconds, "RSS_MAX_SECONDS", 1500, 1500},
	}
	for _, k := range knobs {
		def := k.def
		if c.quick {
			def = k.quickTo
		}
		v, err := envInt(k.name, def)
		if err != nil {
			return nil, err
		}
		*k.dst = v
	}
	if c.cats <= 0 || c.rows < c.cats {
		return nil, fmt.Errorf("ROWS=%d and CATS=%d: need at least one row per category", c.rows, c.cats)
	}
	c.keys = c.rows / c.cats
	c.rows = c.keys * c.cats
	outDef := "docs/benchmarks.md"
	if c.quick {
		outDef = "bench-work/benchmarks-quick.md"
	}
	c.out = envStr("OUT", outDef)
	c.work = envStr("BENCH_WORK", filepath.Join(root, "bench-work"))
	c.reportFrom = os.Getenv("REPORT_FROM")
	for _, s := range strings.Fields(os.Getenv("SKIP")) {
		c.skip[s] = true
	}
	c.profile, c.keep = os.Getenv("PROFILE") == "1", os.Getenv("KEEP") == "1"
	return c, nil
}

// needle is what grep looks for: one row in 100 holds it (gen's default).
const needle = Needle

// bench is one run: its directories, binaries and the processes it started.
type bench struct {
	cfg          *benchConfig
	work, res    string
	bin, bt      string
	h1, mnt, nat string
	canDrop      bool
	rpc          string
	devchain     *proc
	mount        *proc
	mountDir     string
	stopSampler  chan struct{}
	samplerDone  chan struct{}
}

func say(format string, a ...any)  { fmt.Fprintf(os.Stderr, "\n== "+format+"\n", a...) }
func note(format string, a ...any) { fmt.Fprintf(os.Stderr, "   "+format+"\n", a...) }

func since(t time.Time) float64 { return time.Since(t).Seconds() }

// cmdRun is the whole benchmark (make bench): the same work on a kintfs dev mount and on the
// same tree in a native directory, side by side, with ratios (mount / native) and absolute
// medians, written as markdown to OUT. It runs from the repository's root.
func cmdRun(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("run takes no arguments: its knobs are environment variables (see scripts/bench.sh)")
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	cfg, err := loadConfig(root)
	if err != nil {
		return err
	}
	if cfg.reportFrom != "" {
		return renderReport(cfg.reportFrom, cfg.out)
	}
	b := &bench{cfg: cfg}
	defer b.cleanup()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	errc := make(chan error, 1)
	go func() { errc <- b.run() }()
	select {
	case err := <-errc:
		return err
	case <-stop:
		// as the shell's trap did: stop what was started, keep the results, exit 130
		b.cleanup()
		os.Exit(130)
		return nil
	}
}

func (b *bench) run() error {
	cfg := b.cfg
	if _, err := exec.LookPath("fusermount3"); err != nil {
		return errors.New("FUSE is not available (need /dev/fuse and fusermount3: apt-get install -y fuse3)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return errors.New("FUSE is not available (need /dev/fuse and fusermount3: apt-get install -y fuse3)")
	}
	if _, err := exec.LookPath("hyperfine"); err != nil {
		say("installing hyperfine")
		if exec.Command("apt-get", "install", "-y", "hyperfine").Run() != nil {
			exec.Command("apt-get", "update").Run()
			if err := exec.Command("apt-get", "install", "-y", "hyperfine").Run(); err != nil {
				return fmt.Errorf("install hyperfine: %w", err)
			}
		}
	}
	b.canDrop = canDropCaches()

	started := time.Now().UTC()
	b.work = filepath.Join(cfg.work, fmt.Sprintf("run-%s-%d", time.Now().Format("20060102-150405"), os.Getpid()))
	b.res = filepath.Join(b.work, "results")
	if err := os.MkdirAll(b.res, 0o755); err != nil {
		return err
	}
	b.bin = filepath.Join(b.work, "kintfs")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	b.bt = filepath.Join(b.work, "benchtool")
	say("building kintfs and benchtool into %s", b.work)
	if err := runQuiet("go", "build", "-o", b.bin, "./cmd/kintfs"); err != nil {
		return err
	}
	if err := copyFile(self, b.bt, 0o755); err != nil {
		return err
	}
	t0 := time.Now()
	p := b.params(started)
	if err := writeJSON(filepath.Join(b.res, "params.json"), p); err != nil {
		return err
	}
	b.startSampler()

	b.h1, b.mnt, b.nat = filepath.Join(b.work, "home"), filepath.Join(b.work, "mnt"), filepath.Join(b.work, "native")
	for _, d := range []string{b.mnt, b.nat + "/entity", b.nat + "/state", b.nat + "/reference", b.nat + "/journal"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	steps := []func() error{b.populate, b.warm, b.cp, b.flushChanged, b.histAndPull, b.backfill, b.gas, b.cold, b.readOnly, b.noXattr}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	b.mountStop()
	if err := b.rss(); err != nil {
		return err
	}
	p.Seconds = int(time.Since(t0).Seconds())
	if err := writeJSON(filepath.Join(b.res, "params.json"), p); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(cfg.out), 0o755); err != nil {
		return err
	}
	if err := renderReport(b.res, cfg.out); err != nil {
		return err
	}
	say("written %s; raw results in %s", cfg.out, b.res)
	return nil
}

// benchParams is params.json: the sizes and the machine of one run.
type benchParams struct {
	Quick         bool   `json:"quick"`
	Rows          int    `json:"rows"`
	Cats          int    `json:"cats"`
	RowBytes      int    `json:"row_bytes"`
	CPFiles       int    `json:"cp_files"`
	Versions      int    `json:"versions"`
	HistReads     int    `json:"hist_reads"`
	PullEpochs    int    `json:"pull_epochs"`
	RSSRows       int    `json:"rss_rows"`
	RSSFlushEvery int    `json:"rss_flush_every"`
	HistCatReads  int    `json:"hist_cat_reads"`
	Runs          int    `json:"runs"`
	Warmup        int    `json:"warmup"`
	CPRuns        int    `json:"cp_runs"`
	ColdRuns      int    `json:"cold_runs"`
	Started       string `json:"started"`
	Nproc         string `json:"nproc"`
	CPU           string `json:"cpu"`
	Memory        string `json:"memory"`
	Kernel        string `json:"kernel"`
	Fstype        string `json:"fstype"`
	Commit        string `json:"commit"`
	Go            string `json:"go"`
	Hyperfine     string `json:"hyperfine"`
	CanDrop       bool   `json:"can_drop"`
	Seconds       int    `json:"seconds,omitempty"`
}

func (b *bench) params(started time.Time) *benchParams {
	c := b.cfg
	p := &benchParams{Quick: c.quick, Rows: c.rows, Cats: c.cats, RowBytes: c.rowBytes, CPFiles: c.cpFiles,
		Versions: c.versions, HistReads: c.histReads, PullEpochs: c.pullEpochs, RSSRows: c.rssRows,
		RSSFlushEvery: c.rssFlushEvery, HistCatReads: c.histCatReads, Runs: c.runs, Warmup: c.warmup,
		CPRuns: c.cpRuns, ColdRuns: c.coldRuns, Started: started.Format("2006-01-02T15:04:05Z"),
		Nproc: strconv.Itoa(runtime.NumCPU()), CPU: "?", CanDrop: b.canDrop}
	p.CPU = procField("/proc/cpuinfo", "model name", ":", "?")
	if kb, err := strconv.Atoi(strings.Fields(procField("/proc/meminfo", "MemTotal", ":", "0 kB"))[0]); err == nil {
		p.Memory = fmt.Sprintf("%.1f GiB", float64(kb)/1048576)
	}
	p.Kernel = output("uname", "-r")
	p.Fstype = output("stat", "-f", "-c", "%T", b.work)
	p.Commit = output("git", "rev-parse", "--short", "HEAD")
	if p.Commit == "" {
		p.Commit = "?"
	}
	if exec.Command("git", "diff", "--quiet").Run() != nil {
		p.Commit += " + uncommitted changes"
	}
	if f := strings.Fields(output("go", "version")); len(f) >= 3 {
		p.Go = f[2]
	}
	p.Hyperfine = output("hyperfine", "--version")
	return p
}

// procField is the value after sep of the first line of path that starts with key.
func procField(path, key, sep, def string) string {
	f, err := os.Open(path)
	if err != nil {
		return def
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, key) {
			if _, v, ok := strings.Cut(l, sep); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return def
}

// output is the trimmed stdout of a command ("" when it fails).
func output(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// runQuiet runs a command, its output shown only when it fails.
func runQuiet(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// runTo runs a command with its stdout written to the file out; its stderr goes to the
// run's, or to out too when both is set.
func runTo(out string, both bool, name string, args ...string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, os.Stderr
	if both {
		cmd.Stderr = f
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", filepath.Base(name), strings.Join(args, " "), err)
	}
	return nil
}

// bt runs a benchtool subcommand with its JSON written to out.
func (b *bench) tool(out string, args ...string) error { return runTo(out, false, b.bt, args...) }

func copyFile(src, dst string, mode os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, mode)
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func readJSON(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m)
}

func appendLine(path, format string, a ...any) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, format+"\n", a...)
	return f.Close()
}

// canDropCaches syncs and drops the page cache, and reports whether that is permitted.
func canDropCaches() bool {
	syscall.Sync()
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0) == nil
}

// dropCaches syncs, and drops the page cache when that is permitted.
func (b *bench) dropCaches() {
	syscall.Sync()
	if b.canDrop {
		os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0)
	}
}

// startSampler appends the 1-minute load average to load.txt every 10 s.
func (b *bench) startSampler() {
	b.stopSampler, b.samplerDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(b.samplerDone)
		for {
			if data, err := os.ReadFile("/proc/loadavg"); err == nil {
				appendLine(filepath.Join(b.res, "load.txt"), "%d %s", time.Now().Unix(), strings.Fields(string(data))[0])
			}
			select {
			case <-b.stopSampler:
				return
			case <-time.After(10 * time.Second):
			}
		}
	}()
}

// cleanup stops what the run started and, unless KEEP=1, removes its trees (not its results).
// It may run more than once.
func (b *bench) cleanup() {
	if b.stopSampler != nil {
		close(b.stopSampler)
		<-b.samplerDone
		b.stopSampler = nil
	}
	if b.mount != nil {
		b.mountStop()
	}
	if b.devchain != nil {
		b.devchain.cmd.Process.Signal(syscall.SIGTERM)
		<-b.devchain.done
		b.devchain = nil
	}
	if b.work == "" {
		return
	}
	dirs, _ := filepath.Glob(filepath.Join(b.work, "mnt*"))
	for _, d := range dirs {
		if exec.Command("mountpoint", "-q", d).Run() == nil {
			exec.Command("fusermount3", "-uz", d).Run()
		}
	}
	if !b.cfg.keep {
		homes, _ := filepath.Glob(filepath.Join(b.work, "home-*"))
		for _, d := range append(append(homes, dirs...), filepath.Join(b.work, "home"), b.nat, filepath.Join(b.work, "cpsrc")) {
			if d != "" {
				os.RemoveAll(d)
			}
		}
	}
}

// devchainStart starts `kintfs devchain` for the vaults under home/devchain, in its own process.
func (b *bench) devchainStart(home string) error {
	dir := filepath.Join(home, "devchain")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	os.Chmod(home, 0o700)
	outPath := filepath.Join(b.work, "devchain.out")
	out, err := os.Create(outPath)
	if err != nil {
		return err
	}
	defer out.Close()
	logf, err := os.Create(filepath.Join(b.work, "devchain.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(b.bin, "devchain", "--datadir", dir, "--http", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = out, logf
	p, err := start(cmd)
	if err != nil {
		return err
	}
	b.devchain = p
	for range 600 {
		if data, err := os.ReadFile(outPath); err == nil && len(data) > 0 && bytes.Contains(data, []byte("\n")) {
			var info struct {
				RPC string `json:"rpc"`
			}
			line, _, _ := bytes.Cut(data, []byte("\n"))
			if err := json.Unmarshal(line, &info); err != nil {
				return fmt.Errorf("devchain printed %q: %w", line, err)
			}
			b.rpc = info.RPC
			return nil
		}
		select {
		case <-p.done:
			b.devchain = nil
			log, _ := os.ReadFile(filepath.Join(b.work, "devchain.log"))
			return fmt.Errorf("devchain exited: %s", log)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return errors.New("devchain did not come up")
}

// mountEnv keeps background flushes off: every flush is an explicit one through .kint/ctl.
var mountEnv = []string{"KINT_CONFIRMATIONS=1", "KINT_QUIET_SECONDS=864000", "KINT_SIZE_TRIGGER_BYTES=1000000000000"}

// mountStart starts a dev mount of home at dir in the background, ready on return, and notes
// how long it took to come up in mount-starts.txt.
func (b *bench) mountStart(label, home, dir string, opts ...string) error {
	env := append(os.Environ(), mountEnv...)
	env = append(env, "KINT_HOME="+home)
	if b.cfg.profile {
		env = append(env, "KINTFS_CPUPROFILE="+filepath.Join(b.res, "cpu-"+label+".prof"))
	}
	if home != b.h1 {
		env = append(env, "KINT_TENANT="+filepath.Base(home)) // another vault on the same chain
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(b.work, "mount-"+label+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(b.bin, append(append([]string{"mount", "--dev"}, opts...), dir)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logf, logf
	p, err := start(cmd)
	if err != nil {
		return err
	}
	b.mount, b.mountDir = p, dir
	t0 := time.Now()
	for range 1200 {
		if _, err := os.Stat(filepath.Join(dir, ".kint", "status")); err == nil {
			return appendLine(filepath.Join(b.res, "mount-starts.txt"), "%s %.3f", label, since(t0))
		}
		select {
		case <-p.done:
			b.mount = nil
			return fmt.Errorf("mount %s exited: %s", label, tail(logPath, 20))
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("mount %s did not come up: %s", label, tail(logPath, 20))
}

// mountStop sends SIGTERM (flush and unmount) and waits; a mount that does not stop within 2
// minutes is killed and lazily unmounted.
func (b *bench) mountStop() {
	if b.mount == nil {
		return
	}
	m := b.mount
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(120 * time.Second):
		note("mount %d did not stop on SIGTERM; killing it", m.cmd.Process.Pid)
		m.cmd.Process.Kill()
		exec.Command("fusermount3", "-uz", b.mountDir).Run()
		<-m.done
	}
	b.mount = nil
}

// proc is a process the run started, with done closed once it has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func start(cmd *exec.Cmd) (*proc, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	return p, nil
}

func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// procKB is a field (VmHWM, VmRSS) of the mount's /proc status, in kB.
func (b *bench) procKB(field string) int {
	v := procField(fmt.Sprintf("/proc/%d/status", b.mount.cmd.Process.Pid), field+":", ":", "0 kB")
	n, _ := strconv.Atoi(strings.Fields(v)[0])
	return n
}

func ctlFlush(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, ".kint", "ctl"), []byte("flush\n"), 0); err != nil {
		return fmt.Errorf("flush %s: %w", dir, err)
	}
	return nil
}

// mountStatus is the part of .kint/status the bench reads.
type mountStatus struct {
	StagedRows int `json:"staged_rows"`
	StagedDels int `json:"staged_deletions"`
	LastPush   *struct {
		Error  string `json:"error"`
		Report *struct {
			Rows     int `json:"rows"`
			Deleted  int `json:"deleted"`
			Anchored []struct {
				CalldataBytes int `json:"calldata_bytes"`
				GasUsed       int `json:"gas_used"`
			} `json:"anchored"`
		} `json:"report"`
	} `json:"last_push"`
}

func readStatus(dir string) (*mountStatus, error) {
	data, err := os.ReadFile(filepath.Join(dir, ".kint", "status"))
	if err != nil {
		return nil, err
	}
	var st mountStatus
	return &st, json.Unmarshal(data, &st)
}

// flushMeasured times a flush and keeps what .kint/status says the push did, in name.json.
func (b *bench) flushMeasured(dir, name string) error {
	before, err := readStatus(dir)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := ctlFlush(dir); err != nil {
		return err
	}
	secs := since(t0)
	st, err := readStatus(dir)
	if err != nil {
		return err
	}
	r := map[string]any{"seconds": secs, "staged_before": before.StagedRows + before.StagedDels, "rows": 0, "deleted": 0,
		"epochs": 0, "calldata_bytes": 0, "gas_used": 0, "error": "", "staged_after": st.StagedRows + st.StagedDels}
	if lp := st.LastPush; lp != nil {
		r["error"] = lp.Error
		if rep := lp.Report; rep != nil {
			cd, gas := 0, 0
			for _, e := range rep.Anchored {
				cd += e.CalldataBytes
				gas += e.GasUsed
			}
			r["rows"], r["deleted"], r["epochs"], r["calldata_bytes"], r["gas_used"] = rep.Rows, rep.Deleted, len(rep.Anchored), cd, gas
		}
	}
	return b.keep(name, r)
}

// keep writes a result as name.json and notes it.
func (b *bench) keep(name string, r any) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	note("%s: %s", name, data)
	return os.WriteFile(filepath.Join(b.res, name+".json"), data, 0o644)
}

// hf runs hyperfine over cmds, the mount's first and native second (and any more after).
func (b *bench) hf(name string, warmup, runs int, cmds ...string) error {
	args := []string{"--style", "basic", "--warmup", strconv.Itoa(warmup), "--runs", strconv.Itoa(runs),
		"--export-json", filepath.Join(b.res, "hf-"+name+".json")}
	return b.hyperfine(name, append(args, cmds...))
}

func (b *bench) hyperfine(name string, args []string) error {
	txt := filepath.Join(b.res, "hf-"+name+".txt")
	if err := runTo(txt, true, "hyperfine", args...); err != nil {
		out, _ := os.ReadFile(txt)
		os.Stderr.Write(out)
		return fmt.Errorf("hyperfine %s failed", name)
	}
	r, err := hfResults(filepath.Join(b.res, "hf-"+name+".json"))
	if err != nil {
		return err
	}
	var parts []string
	for _, x := range r {
		cmd := x.Command
		if len(cmd) > 60 {
			cmd = cmd[:60]
		}
		parts = append(parts, fmt.Sprintf("%s: median %.4fs", cmd, x.Median))
	}
	note("%s", strings.Join(parts, "   "))
	if len(r) >= 2 {
		note("ratio mount/native %.2f", r[0].Median/r[1].Median)
	}
	return nil
}

type hfResult struct {
	Command string  `json:"command"`
	Median  float64 `json:"median"`
}

func hfResults(path string) ([]hfResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r struct {
		Results []hfResult `json:"results"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	return r.Results, nil
}

// --- the steps ---------------------------------------------------------------------------------

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
func grepCmd(dir string) string { return fmt.Sprintf("grep -r %s %s | wc -l", needle, dir) }

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
	if b.cfg.skip["ro"] {
		return nil
	}
	say("warm grep -r on a --read-only mount")
	b.mountStop()
	if err := b.mountStart("ro", b.h1, b.mnt, "--read-only"); err != nil {
		return err
	}
	return b.hf("grep-warm-ro", b.cfg.warmup, b.cfg.runs, grepCmd(b.mnt), grepCmd(b.nat))
}

func (b *bench) noXattr() error {
	if b.cfg.skip["noxattr"] {
		return nil
	}
	say("warm ls -lR with --xattrs=false")
	b.mountStop()
	if err := b.mountStart("noxattr", b.h1, b.mnt, "--xattrs=false"); err != nil {
		return err
	}
	return b.hf("lslR-noxattrs", b.cfg.warmup, b.cfg.runs, "ls -lR "+b.mnt+" | wc -l", "ls -lR "+b.nat+" | wc -l")
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
	b.mountStop()
	r["rows"], r["populate_seconds"], r["write_seconds"] = pop["files"], pop["seconds"], pop["write_seconds"]
	r["flush_seconds"], r["flushes"], r["stopped_by_time_bound"] = pop["flush_seconds"], pop["flushes"], pop["stopped_by_time_bound"]
	r["staged_after_populate"] = st.StagedRows
	return b.keep("rss", r)
}

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

	"kintfs/chain/devchain/devinfo"
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

// bench is one run: its directories, binaries and the processes it started.
type bench struct {
	cfg          *benchConfig
	work, res    string
	bin, bt      string
	h1, mnt, nat string
	canDrop      bool
	rpc          string
	devchain     *proc
	chain2s      *proc // the dev chain sealing every 2 s, while step b2b runs
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
	// the dev chain's program, beside kintfs as make build puts it
	if err := runQuiet("go", "build", "-o", filepath.Join(b.work, devinfo.Program), "./cmd/kintfs/devchain"); err != nil {
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
	steps := []func() error{b.populate, b.warm, b.floors, b.cp, b.grepw, b.durable, b.flushChanged, b.histAndPull, b.backfill, b.bucket, b.engine, b.gas, b.cold, b.readOnly, b.noXattr}
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
		stopChain(b.devchain)
		b.devchain = nil
	}
	if b.chain2s != nil {
		stopChain(b.chain2s)
		b.chain2s = nil
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
	p, rpc, err := b.startChain(home, "devchain")
	if err != nil {
		return err
	}
	b.devchain, b.rpc = p, rpc
	return nil
}

// startChain starts `kintfs devchain` in home/devchain with extra flags, its output in
// label.out and label.log in the run's directory, and returns once it serves JSON-RPC.
func (b *bench) startChain(home, label string, extra ...string) (*proc, string, error) {
	dir := filepath.Join(home, "devchain")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	os.Chmod(home, 0o700)
	outPath, logPath := filepath.Join(b.work, label+".out"), filepath.Join(b.work, label+".log")
	out, err := os.Create(outPath)
	if err != nil {
		return nil, "", err
	}
	defer out.Close()
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	defer logf.Close()
	// a block per flush, as fast as it comes, unless extra says otherwise: the bench measures
	// kintfs, not the pacing to the wall clock a user's dev chain has by default (which would
	// hold a thousand one-block flushes to a block a second)
	args := append([]string{"devchain", "--datadir", dir, "--http", "127.0.0.1:0", "--max-lead", "0"}, extra...)
	cmd := exec.Command(b.bin, args...)
	cmd.Stdout, cmd.Stderr = out, logf
	p, err := start(cmd)
	if err != nil {
		return nil, "", err
	}
	for range 600 {
		if data, err := os.ReadFile(outPath); err == nil && len(data) > 0 && bytes.Contains(data, []byte("\n")) {
			var info struct {
				RPC string `json:"rpc"`
			}
			line, _, _ := bytes.Cut(data, []byte("\n"))
			if err := json.Unmarshal(line, &info); err != nil {
				stopChain(p)
				return nil, "", fmt.Errorf("devchain printed %q: %w", line, err)
			}
			return p, info.RPC, nil
		}
		select {
		case <-p.done:
			log, _ := os.ReadFile(logPath)
			return nil, "", fmt.Errorf("devchain exited: %s", log)
		case <-time.After(200 * time.Millisecond):
		}
	}
	stopChain(p)
	return nil, "", errors.New("devchain did not come up")
}

// stopChain stops a dev chain the run started and waits for it.
func stopChain(p *proc) {
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
}

// mountEnv keeps background flushes off: every flush is an explicit one through .kint/ctl. Each
// mount counts its own time on the requests it answers (.kint/requests), which costs two
// readings of the clock a request.
var mountEnv = []string{"KINT_CONFIRMATIONS=1", "KINT_QUIET_SECONDS=864000", "KINT_SIZE_TRIGGER_BYTES=1000000000000",
	"KINTFS_TIME_REQUESTS=1"}

// mountStart starts a dev mount of home at dir in the background, ready on return, and notes
// how long it took to come up and its peak RSS then in mount-starts.txt, and its memory every
// 100 ms on the way in mount-start-memory.txt.
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
	var mem []string // what the start costs in memory, every 100 ms: seconds, RssAnon and RssFile in MB
	for range 1200 {
		mem = append(mem, fmt.Sprintf("%.1fs %d+%d", since(t0), b.procKB("RssAnon")>>10, b.procKB("RssFile")>>10))
		if _, err := os.Stat(filepath.Join(dir, ".kint", "status")); err == nil {
			took, hwm := since(t0), b.procKB("VmHWM")>>10
			if err := appendLine(filepath.Join(b.res, "mount-start-memory.txt"), "%s VmHWM %d MB: %s", label, hwm, strings.Join(mem, " ")); err != nil {
				return err
			}
			return appendLine(filepath.Join(b.res, "mount-starts.txt"), "%s %.3f %d", label, took, hwm)
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
	return kbField(fmt.Sprintf("/proc/%d/status", b.mount.cmd.Process.Pid), field+":")
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
			Seconds      float64 `json:"seconds"`
			ChainSeconds float64 `json:"chain_seconds"`
			Rows         int     `json:"rows"`
			Deleted      int     `json:"deleted"`
			Anchored     []struct {
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
		"epochs": 0, "calldata_bytes": 0, "gas_used": 0, "error": "", "staged_after": st.StagedRows + st.StagedDels,
		"chain_seconds": 0.0, "own_seconds": secs}
	if lp := st.LastPush; lp != nil {
		r["error"] = lp.Error
		if rep := lp.Report; rep != nil {
			cd, gas := 0, 0
			for _, e := range rep.Anchored {
				cd += e.CalldataBytes
				gas += e.GasUsed
			}
			r["rows"], r["deleted"], r["epochs"], r["calldata_bytes"], r["gas_used"] = rep.Rows, rep.Deleted, len(rep.Anchored), cd, gas
			// the flush's own time: the wall time less what the push spent waiting on the chain
			r["chain_seconds"], r["own_seconds"] = rep.ChainSeconds, max(0, secs-rep.ChainSeconds)
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

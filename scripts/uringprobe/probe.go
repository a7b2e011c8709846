//go:build linux && (amd64 || arm64)

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The transports, in the order of the report.
const (
	tGoFuse  = "classic, go-fuse"
	tClassic = "classic, minimal loop"
	tURing   = "io_uring"
)

const uringParam = "/sys/module/fuse/parameters/enable_uring"

type config struct {
	rounds, batch int
	runs          int // client processes, one after the other
	clientCPU     int // pin the client to this CPU; -1 leaves it to the scheduler
	uring         uringOpts
	timeout       time.Duration // the client's whole run; killed after it
}

// served says how many requests each server answered during the probe.
type served struct {
	GoFuse, Classic, URing int64
	URingQueues            []int64 // answered through the ring, per queue
}

type result struct {
	Stats  []stats   // per transport and operation: the median over the runs of each figure
	Runs   [][]stats // each run's own
	Served served
}

// acrossRuns is the median over the runs of each figure, and the lowest and highest median.
func acrossRuns(runs [][]stats) []stats {
	if len(runs) == 0 {
		return nil
	}
	out := make([]stats, len(runs[0]))
	for i := range out {
		col := func(f func(s stats) float64) float64 {
			var v []float64
			for _, r := range runs {
				v = append(v, f(r[i]))
			}
			slices.Sort(v)
			return quantile(v, 0.5)
		}
		s := runs[0][i]
		s.N, s.MedianLo, s.MedianHi = 0, s.MedianUS, s.MedianUS
		for _, r := range runs {
			s.N += r[i].N
			s.MedianLo = min(s.MedianLo, r[i].MedianUS)
			s.MedianHi = max(s.MedianHi, r[i].MedianUS)
		}
		s.MedianUS = col(func(s stats) float64 { return s.MedianUS })
		s.P90US = col(func(s stats) float64 { return s.P90US })
		s.ClientCPU = col(func(s stats) float64 { return s.ClientCPU })
		s.ServerCPU = col(func(s stats) float64 { return s.ServerCPU })
		out[i] = s
	}
	return out
}

// uringSetting reads enable_uring: "Y" or "N", or an error when the kernel has no such
// parameter (built without CONFIG_FUSE_IO_URING, or older than 6.14).
func uringSetting() (string, error) {
	b, err := os.ReadFile(uringParam)
	if err != nil {
		return "", fmt.Errorf("FUSE over io_uring is not in this kernel (%s): %w", uringParam, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func setURing(v string) error {
	if err := os.WriteFile(uringParam, []byte(v), 0); err != nil {
		return fmt.Errorf("set %s to %s: %w", uringParam, v, err)
	}
	return nil
}

// withURingEnabled runs mount with enable_uring on (the kernel offers the transport in
// FUSE_INIT only then) and puts the setting back as it found it right after: a connection
// that took io_uring keeps it.
func withURingEnabled(mount func() error) error {
	was, err := uringSetting()
	if err != nil {
		return err
	}
	if was != "Y" {
		if err := setURing("Y"); err != nil {
			return err
		}
		defer func() { _ = setURing(was) }()
	}
	return mount()
}

// probe mounts the trivial tree three ways under dir, runs the client against the three, and
// unmounts. self is the program to run as the client (this one, or the test binary).
func probe(dir string, self string, cfg config) (*result, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the probe mounts with mount(2) and sets enable_uring: run it as root")
	}
	dirs := map[string]string{}
	for _, t := range []string{tGoFuse, tClassic, tURing} {
		d := filepath.Join(dir, strings.NewReplacer(", ", "-", " ", "-").Replace(t))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		dirs[t] = d
	}
	fsGo, fsClassic, fsURing := &trivialFS{}, &trivialFS{}, &trivialFS{}
	gm, err := mountGoFuse(dirs[tGoFuse], fsGo)
	if err != nil {
		return nil, fmt.Errorf("go-fuse mount: %w", err)
	}
	defer gm.unmount()
	cm, err := mountRaw(dirs[tClassic], fsClassic, nil)
	if err != nil {
		return nil, fmt.Errorf("classic mount: %w", err)
	}
	defer cm.unmount()
	var um *rawMount
	if err := withURingEnabled(func() error {
		um, err = mountRaw(dirs[tURing], fsURing, &cfg.uring)
		return err
	}); err != nil {
		return nil, fmt.Errorf("io_uring mount: %w", err)
	}
	defer um.unmount()

	args := []string{clientArg, strconv.Itoa(cfg.rounds), strconv.Itoa(cfg.batch), strconv.Itoa(os.Getpid()), strconv.Itoa(cfg.clientCPU)}
	for _, t := range []string{tGoFuse, tClassic, tURing} {
		args = append(args, t+"="+dirs[t])
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	res := &result{}
	// each run a new client process: the scheduler places it (and so the servers' threads it
	// wakes) afresh, which moves the classic figures more than anything else here
	for run := 0; run < max(cfg.runs, 1); run++ {
		cmd := exec.CommandContext(ctx, self, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("client: %w: %s", err, strings.TrimSpace(stderr.String()))
		}
		var st []stats
		if err := json.Unmarshal(stdout.Bytes(), &st); err != nil {
			return nil, fmt.Errorf("client output: %w", err)
		}
		res.Runs = append(res.Runs, st)
	}
	res.Stats = acrossRuns(res.Runs)
	res.Served = served{GoFuse: fsGo.served.Load(), Classic: fsClassic.served.Load(), URing: fsURing.served.Load()}
	for i := range um.uring.served {
		res.Served.URingQueues = append(res.Served.URingQueues, um.uring.served[i].Load())
	}
	// unmount now, to report a serving loop's error
	for _, u := range []func() error{um.unmount, cm.unmount, gm.unmount} {
		if err := u(); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// machine describes where the probe ran, for the report.
func machine() []string {
	var lines []string
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		lines = append(lines, "kernel: "+unix.ByteSliceToString(u.Release[:])+" "+unix.ByteSliceToString(u.Machine[:]))
	}
	cpu := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	lines = append(lines, fmt.Sprintf("CPUs: %d (%s)", runtime.NumCPU(), cpu))
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		lines = append(lines, "load average (1, 5, 15 min) at the end: "+strings.Join(strings.Fields(string(b))[:3], " "))
	}
	gofuse := "?"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/hanwen/go-fuse/v2" {
				gofuse = d.Version
			}
		}
	}
	lines = append(lines, "go: "+runtime.Version()+", go-fuse "+gofuse)
	return lines
}

// printReport writes the probe's table in markdown, and io_uring against each classic server.
func printReport(w *os.File, cfg config, res *result) {
	fmt.Fprintf(w, "FUSE round trips, classic /dev/fuse vs io_uring: %d client runs of %d rounds of %d calls per operation and transport (round 0 a warm-up, not counted), transports interleaved; figures are the median over the runs\n\n", len(res.Runs), cfg.rounds, cfg.batch)
	for _, l := range machine() {
		fmt.Fprintln(w, "- "+l)
	}
	fmt.Fprintf(w, "- requests answered: go-fuse %d (calls into its nodes), minimal loop %d, io_uring %d (through the ring, per queue: %v)\n",
		res.Served.GoFuse, res.Served.Classic, res.Served.URing, res.Served.URingQueues)
	fmt.Fprintf(w, "- io_uring: %d entries per queue, queue threads pinned: %v, io_uring_setup flags beyond SQE128|CQE32: %#x; client pinned to CPU: %d (-1: not pinned)\n\n", queueDepth, cfg.uring.pin, cfg.uring.flags, cfg.clientCPU)
	fmt.Fprintln(w, "| operation | transport | median | (runs' lowest-highest) | p90 | client CPU/op | server CPU/op |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	by := map[string]stats{}
	for _, s := range res.Stats {
		by[s.Transport+"/"+s.Op] = s
		fmt.Fprintf(w, "| %s | %s | %.1f µs | %.1f-%.1f µs | %.1f µs | %.1f µs | %.1f µs |\n", s.Op, s.Transport, s.MedianUS, s.MedianLo, s.MedianHi, s.P90US, s.ClientCPU, s.ServerCPU)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| operation | io_uring median vs minimal loop | vs go-fuse |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, op := range ops {
		u := by[tURing+"/"+op].MedianUS
		fmt.Fprintf(w, "| %s | %s | %s |\n", op, cheaper(u, by[tClassic+"/"+op].MedianUS), cheaper(u, by[tGoFuse+"/"+op].MedianUS))
	}
}

func cheaper(u, c float64) string {
	if c <= 0 {
		return "?"
	}
	d := (c - u) / c * 100
	if d >= 0 {
		return fmt.Sprintf("%.0f%% cheaper", d)
	}
	return fmt.Sprintf("%.0f%% dearer", -d)
}

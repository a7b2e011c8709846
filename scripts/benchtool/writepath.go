package main

// The write path's steps: reads while the mount writes (grepw) and a new file durable at
// close (durable). Each writes one JSON result that writePathRows puts in the report.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	mountfs "kintfs/fs"
)

// grepwRows and grepwFiles are the sizes the grep-under-writes comparison is defined by.
const grepwRows, grepwFiles = 2000, 1000

// loadavg is the first three fields of /proc/loadavg ("" where there is none).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// timeShell runs a shell command and returns its wall time.
func timeShell(cmd string) (float64, error) {
	t0 := time.Now()
	out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %s", cmd, err, out)
	}
	return since(t0), nil
}

func medianOf(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// grepUnderWrites times grep over one tree idle, then again while write runs over and over
// (clean undoing it between runs); the greps of the busy half all start and end while a
// write is running or between two of them.
func (b *bench) grepUnderWrites(grep string, write, clean func() error) (map[string]any, error) {
	runs := b.cfg.runs
	for i := 0; i < b.cfg.warmup; i++ {
		if _, err := timeShell(grep); err != nil {
			return nil, err
		}
	}
	var idle, busy, writes []float64
	for i := 0; i < runs; i++ {
		s, err := timeShell(grep)
		if err != nil {
			return nil, err
		}
		idle = append(idle, s)
	}
	var mu sync.Mutex
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			t0 := time.Now()
			if err := write(); err != nil {
				done <- err
				return
			}
			mu.Lock()
			writes = append(writes, since(t0))
			mu.Unlock()
			if err := clean(); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond) // the writer is under way
	var werr error
	for len(busy) < 3*runs {
		s, err := timeShell(grep)
		if err != nil {
			werr = err
			break
		}
		busy = append(busy, s)
	}
	for {
		mu.Lock()
		n := len(writes)
		mu.Unlock()
		if n > 0 || werr != nil {
			break
		}
		s, err := timeShell(grep) // at least one whole write ran under the greps
		if err != nil {
			werr = err
			break
		}
		busy = append(busy, s)
	}
	close(stop)
	if err := <-done; err != nil {
		return nil, err
	}
	if werr != nil {
		return nil, werr
	}
	mi, mb := medianOf(idle), medianOf(busy)
	return map[string]any{"idle_median": mi, "busy_median": mb, "slowdown": mb / mi, "greps_idle": len(idle),
		"greps_busy": len(busy), "writes": len(writes), "write_median": medianOf(writes)}, nil
}

// grepw: a warm grep -r over grepwRows rows (a category of their own), idle and while cp -r
// writes grepwFiles new files into state/ of the same mount; the same on the native twin with
// an fsync per file. The mount's slowdown should be at most 1.5 times the native one.
func (b *bench) grepw() error {
	if b.cfg.skip["grepw"] {
		return nil
	}
	c := b.cfg
	say("grep -r over %d rows while %d new files are written into another tier (load %s)", grepwRows, grepwFiles, loadavg())
	for _, dir := range []string{b.mnt + "/entity", b.nat + "/entity"} {
		if err := b.tool(os.DevNull, "gen", "-dir", dir, "-prefix", "grepw", "-cats", "1", "-keys", strconv.Itoa(grepwRows),
			"-size", strconv.Itoa(c.rowBytes), "-variant", "1"); err != nil {
			return err
		}
	}
	src := filepath.Join(b.work, "grepwsrc")
	if err := b.tool(os.DevNull, "gen", "-dir", src, "-prefix", "w", "-cats", "1", "-keys", strconv.Itoa(grepwFiles),
		"-size", strconv.Itoa(c.rowBytes), "-variant", "7", "-needle-every", "0"); err != nil {
		return err
	}
	from := src + "/w000"
	names, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	mntW := func() error { return runQuiet("cp", "-r", from+"/.", b.mnt+"/state/") }
	mntClean := func() error {
		for _, n := range names {
			if err := os.Remove(filepath.Join(b.mnt, "state", n.Name())); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
		return nil
	}
	natDst := b.nat + "/state-grepw"
	natW := func() error { return runQuiet(b.bt, "copy", "-fsync", "-src", from, "-dst", natDst) }
	natClean := func() error { return os.RemoveAll(natDst) }
	before := loadavg()
	m, err := b.grepUnderWrites(grepCmd(b.mnt+"/entity/grepw000"), mntW, mntClean)
	if err != nil {
		return err
	}
	n, err := b.grepUnderWrites(grepCmd(b.nat+"/entity/grepw000"), natW, natClean)
	if err != nil {
		return err
	}
	if err := runQuiet("rm", "-rf", b.mnt+"/entity/grepw000", b.nat+"/entity/grepw000"); err != nil {
		return err
	}
	if err := ctlFlush(b.mnt); err != nil {
		return err
	}
	return b.keep("grepw", map[string]any{"rows": grepwRows, "files": grepwFiles, "mount": m, "native": n,
		"ratio": num(m, "slowdown") / num(n, "slowdown"), "load_before": before, "load_after": loadavg()})
}

// durable: new files of ROW_BYTES written one by one into a new category of the mount, each
// durable at its close, vs native files written, fsynced and closed; per file, CP_RUNS runs.
func (b *bench) durable() error {
	if b.cfg.skip["durable"] {
		return nil
	}
	c := b.cfg
	say("a new file of ~%d bytes durable at close: %d files, %d runs (load %s)", c.rowBytes, c.cpFiles, c.cpRuns, loadavg())
	src := filepath.Join(b.work, "durablesrc")
	if err := b.tool(os.DevNull, "gen", "-dir", src, "-prefix", "d", "-cats", "1", "-keys", strconv.Itoa(c.cpFiles),
		"-size", strconv.Itoa(c.rowBytes), "-variant", "8", "-needle-every", "0"); err != nil {
		return err
	}
	from := src + "/d000"
	before := loadavg()
	var mnt, nat []float64
	var own []requestsUsed // the mount's own part of each mount run
	for i := 0; i < c.cpRuns; i++ {
		for _, side := range []struct {
			dst   string
			fsync bool
			out   *[]float64
		}{{b.mnt + "/entity/durable", false, &mnt}, {b.nat + "/durable", true, &nat}} {
			args := []string{"copy", "-src", from, "-dst", side.dst}
			if side.fsync {
				args = append(args, "-fsync")
			}
			onMount := !side.fsync
			var req0 map[string]mountfs.RequestTime
			if onMount {
				var err error
				if req0, err = readRequests(b.mnt); err != nil {
					return err
				}
			}
			t0 := time.Now()
			if err := runQuiet(b.bt, args...); err != nil {
				return err
			}
			*side.out = append(*side.out, since(t0)/float64(c.cpFiles))
			if onMount {
				req1, err := readRequests(b.mnt)
				if err != nil {
					return err
				}
				own = append(own, requestsBetween(req0, req1, c.cpFiles))
			}
			if err := os.RemoveAll(side.dst); err != nil {
				return err
			}
		}
	}
	if err := ctlFlush(b.mnt); err != nil {
		return err
	}
	d := map[string]any{"files": c.cpFiles, "row_bytes": c.rowBytes, "mount_per_file": medianOf(mnt),
		"native_per_file": medianOf(nat), "mount_runs": mnt, "native_runs": nat, "load_before": before, "load_after": loadavg()}
	for k, v := range ownPart(mnt, own) {
		d[k] = v
	}
	return b.keep("durable", d)
}

// readRequests reads the mount's .kint/requests (its mounts run with KINTFS_TIME_REQUESTS=1).
func readRequests(mnt string) (map[string]mountfs.RequestTime, error) {
	data, err := os.ReadFile(filepath.Join(mnt, ".kint", "requests"))
	if err != nil {
		return nil, err
	}
	var rt map[string]mountfs.RequestTime
	if err := json.Unmarshal(data, &rt); err != nil {
		return nil, fmt.Errorf(".kint/requests: %w", err)
	}
	return rt, nil
}

// requestsUsed is what the mount answered over some files, per file: the requests a caller
// waits for (every kind but RELEASE, which the kernel sends once close has returned), the
// mount's own time on them, and that time by kind, in seconds.
type requestsUsed struct {
	trips, seconds float64
	byKind         map[string]float64
}

// requestsBetween is what the mount answered between the readings before and after, over
// files files. The read of .kint/requests itself (its LOOKUP, OPEN, READ and FLUSH) is a few
// requests among thousands.
func requestsBetween(before, after map[string]mountfs.RequestTime, files int) requestsUsed {
	u := requestsUsed{byKind: map[string]float64{}}
	for kind, a := range after {
		if kind == "RELEASE" {
			continue
		}
		b := before[kind]
		secs := float64(a.Nanos-b.Nanos) / 1e9 / float64(files)
		u.trips += float64(a.Count-b.Count) / float64(files)
		u.seconds += secs
		u.byKind[kind] = secs
	}
	return u
}

// ownPart splits the median mount run's time per file (of runs) into the mount's own time on
// its requests and the rest, the kernel's transport of them: the two add up to that run's time.
func ownPart(runs []float64, own []requestsUsed) map[string]any {
	if len(own) == 0 || len(own) != len(runs) {
		return nil
	}
	order := make([]int, len(runs))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return runs[order[a]] < runs[order[b]] })
	mid := order[len(order)/2]
	u := own[mid]
	kinds := map[string]any{}
	for kind, s := range u.byKind {
		kinds[kind] = s
	}
	return map[string]any{"own_run_per_file": runs[mid], "own_per_file": u.seconds, "trips_per_file": u.trips,
		"transport_per_file": runs[mid] - u.seconds, "own_by_kind": kinds}
}

// writePathRows adds the two steps' rows to the side-by-side table.
func (rp *report) writePathRows(r results) {
	if g := r.json("grepw.json"); g != nil {
		m, _ := g["mount"].(map[string]any)
		n, _ := g["native"].(map[string]any)
		rp.add(fmt.Sprintf("warm `grep -r` of %d rows while `cp -r` writes %d new files into another tier: slowdown vs idle (mount %s -> %s; native %s -> %s, fsync per file)",
			integer(g, "rows"), integer(g, "files"), fmtS(num(m, "idle_median")), fmtS(num(m, "busy_median")), fmtS(num(n, "idle_median")), fmtS(num(n, "busy_median"))),
			fmt.Sprintf("%.2fx", num(m, "slowdown")), fmt.Sprintf("%.2fx", num(n, "slowdown")), num(g, "ratio"), 1.5)
	}
	if d := r.json("durable.json"); d != nil {
		mf, nf := num(d, "mount_per_file"), num(d, "native_per_file")
		rp.add(fmt.Sprintf("a new file of ~%d B durable at close, per file, %d files in a row (target <= 0.5 ms: %s)", integer(d, "row_bytes"), integer(d, "files"), met(mf <= 0.0005)),
			fmtS(mf), fmtS(nf)+" (write, fsync, close)", mf/nf, 0)
	}
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// engineBenches are the replica benchmarks behind issue 34's flush own time and cold restore:
// SKIP name, benchmark, the line it logs, and whether its vaults go on a file system in memory
// instead of the disk.
var engineBenches = []struct {
	skip, bench, line string
	inMemory          bool
}{
	// 10,000 changed rows of 1 KB pushed on the in-memory chain: the engine's own work
	{"flushown", "BenchmarkFlush", "bench-flush", false},
	// the same with no disk under the vaults: what the engine costs apart from this disk
	{"flushmem", "BenchmarkFlush", "bench-flush", true},
	// a fresh machine's init and pull of 2,000 epochs through a proxy adding 50 ms per request
	{"restore", "BenchmarkColdRestore", "bench-restore", false},
}

// memoryDir is where the benchmarks that want no disk put their vaults: /dev/shm when it is a
// file system in memory.
const memoryDir = "/dev/shm"

// engine runs the replica benchmarks of the flush's own time and the cold restore, one at a
// time, and keeps what they logged (flushown.json, restore.json), with the load average
// before and after each (the machine is shared).
func (b *bench) engine() error {
	for _, eb := range engineBenches {
		if b.cfg.skip[eb.skip] {
			continue
		}
		say("%s: go test ./replica -bench %s", eb.skip, eb.bench)
		before := loadAvg()
		cmd := exec.Command("go", "test", "-count=1", "-v", "-timeout", "60m", "-run", "^$", "-bench", "^"+eb.bench+"$",
			"-benchtime", "1x", "./replica/")
		// The benchmark's vaults go in the run's directory, on the disk the mount's homes use:
		// /tmp may be memory, or a directory whose disk makes each new file cost far more (the
		// engine writes three cache files an epoch).
		tmp := filepath.Join(b.work, "tmp-"+eb.skip)
		if eb.inMemory {
			if !inMemory(memoryDir) {
				say("%s: not run: %s is not a file system in memory here", eb.skip, memoryDir)
				continue
			}
			tmp = filepath.Join(memoryDir, "kintfs-bench-"+eb.skip)
			defer os.RemoveAll(tmp)
		}
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			return err
		}
		// what a new file costs on that disk as the step begins: the flush writes three an epoch
		createUS, err := createCost(filepath.Join(tmp, "create-probe"), 200)
		if err != nil {
			return err
		}
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		out, err := cmd.CombinedOutput()
		outPath := filepath.Join(b.res, eb.skip+".out")
		os.WriteFile(outPath, out, 0o644)
		if err != nil {
			return fmt.Errorf("%s: %v: %s", eb.bench, err, tail(outPath, 15))
		}
		m, err := benchLine(string(out), eb.line)
		if err != nil {
			return fmt.Errorf("%s: %w", eb.bench, err)
		}
		m["load_before"], m["load_after"], m["create_us_before"] = before, loadAvg(), createUS
		if err := b.keep(eb.skip, m); err != nil {
			return err
		}
	}
	return nil
}

// loadAvg is the first field of /proc/loadavg ("" where there is none).
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// createAtStart is ", against X µs at the run's start (floors)" when the floors measured it.
func (rp *report) createAtStart(r results) string {
	if f := r.json("floors.json"); f != nil {
		if _, ok := f["create_us"]; ok {
			return fmt.Sprintf(", against %.1f µs when the run began (floors)", num(f, "create_us"))
		}
	}
	return ""
}

// engineSections are the report's lines on the two benchmarks, with their targets added to
// the verdicts.
func (rp *report) engineSections(r results) []string {
	var out []string
	w := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if g := r.json("flushown.json"); g != nil {
		secs := num(g, "seconds")
		rp.verdicts = append(rp.verdicts, verdictRow{fmt.Sprintf("flush of %d changed rows, the engine alone (`BenchmarkFlush`, in-memory chain, %d epochs)",
			integer(g, "rows"), integer(g, "epochs")), met(secs <= 1.5), fmt.Sprintf("%.1f s", secs), "<= 1.5 s"})
		w("Step `flushown` (`go test ./replica -bench BenchmarkFlush`): %d rows of 1 KB anchored, all changed, pushed until nothing"+
			" is staged on the in-memory chain (bucket policy `%v`): **%.2f s** for %d epochs (load average %v before, %v after).",
			integer(g, "rows"), g["policy"], secs, integer(g, "epochs"), g["load_before"], g["load_after"])
		if _, ok := g["dry_run_seconds"]; ok {
			w("Before it, the dry run that prices that flush (`kintfs push --dry-run`: every epoch sealed as the flush will seal it) took %.2f s.",
				num(g, "dry_run_seconds"))
		}
		if m := r.json("flushmem.json"); m != nil {
			w("Step `flushmem`: the same benchmark with its vaults on tmpfs (`%s`), no disk under them: **%.2f s** on %.2f CPU-seconds"+
				" (`flushown`: %.2f CPU-seconds; load average %v before, %v after). What `flushown` takes beyond it is this machine's disk:"+
				" the syncs, and the epoch cache's three new files an epoch.",
				memoryDir, num(m, "seconds"), num(m, "cpu_seconds"), num(g, "cpu_seconds"), m["load_before"], m["load_after"])
		}
		if c, ok := g["create_us_before"]; ok {
			w("A new empty file cost %.1f µs to create on that disk as `flushown` began%s: ext4 without a journal, as here, passes over every"+
				" inode freed in the last minute (six while the block that holds it is not written back) when it allocates one, so a step"+
				" after others that deleted thousands of files pays for their deletions.",
				c, rp.createAtStart(r))
		}
		w("")
	}
	if g := r.json("restore.json"); g != nil {
		secs := num(g, "seconds")
		rp.verdicts = append(rp.verdicts, verdictRow{fmt.Sprintf("cold restore of %d epochs through a %d ms proxy (init + pull)",
			integer(g, "epochs"), integer(g, "delay_ms")), met(secs <= 5), fmt.Sprintf("%.1f s", secs), "<= 5 s"})
		w("Step `restore` (`go test ./replica -bench BenchmarkColdRestore`): a fresh machine's init and pull of %d one-row epochs"+
			" on a dev chain, through `chain/rpcproxy` adding %d ms to every request: **%.2f s** (init %.2f s without its scrypt run,"+
			" pull %.2f s, %d requests; load average %v before, %v after).",
			integer(g, "epochs"), integer(g, "delay_ms"), secs, num(g, "init_seconds"), num(g, "pull_seconds"), integer(g, "requests"),
			g["load_before"], g["load_after"])
		w("")
	}
	return out
}

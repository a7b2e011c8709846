//go:build linux && (amd64 || arm64)

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// clientArg is argv[1] of the probe when it runs as the measuring client: a process of its
// own, so the servers' threads and the client's never share a Go scheduler.
const clientArg = "uringprobe-client"

// The operations measured, in order.
var ops = []string{"getxattr", "open+close", "read 1 KB"}

// stats is one transport's figures for one operation.
type stats struct {
	Transport string  `json:"transport"`
	Op        string  `json:"op"`
	N         int     `json:"n"`
	MedianUS  float64 `json:"median_us"`
	P90US     float64 `json:"p90_us"`
	ClientCPU float64 `json:"client_cpu_us"`          // the client thread's user+system time per op
	ServerCPU float64 `json:"server_cpu_us"`          // the serving process's CPU time per op
	MedianLo  float64 `json:"median_lo_us,omitempty"` // over several runs: the lowest median
	MedianHi  float64 `json:"median_hi_us,omitempty"` // and the highest
}

// runClient measures the mounts named on the command line (name=dir, in order) and writes a
// JSON list of stats to w. Round 0 warms up and is not counted; each round measures every
// operation on every transport back to back, starting with a different transport each round.
func runClient(args []string, w io.Writer) error {
	if len(args) < 5 {
		return fmt.Errorf("usage: %s ROUNDS BATCH SERVER_PID CPU NAME=DIR [NAME=DIR]", clientArg)
	}
	rounds, err1 := strconv.Atoi(args[0])
	batch, err2 := strconv.Atoi(args[1])
	server, err3 := strconv.Atoi(args[2])
	cpu, err4 := strconv.Atoi(args[3])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || rounds < 2 || batch < 1 {
		return fmt.Errorf("%s: bad ROUNDS BATCH SERVER_PID CPU %q", clientArg, args[:4])
	}
	var names, files []string
	for _, a := range args[4:] {
		n, d, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("%s: %q is not NAME=DIR", clientArg, a)
		}
		names, files = append(names, n), append(files, filepath.Join(d, fileName))
	}
	runtime.LockOSThread()
	if cpu >= 0 {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("pin the client to CPU %d: %w", cpu, err)
		}
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fd, err := unix.Open(f, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", f, err)
		}
		defer unix.Close(fd)
		fds[i] = fd
	}
	buf := make([]byte, 4096)
	run := func(op string, t int) error {
		switch op {
		case "getxattr":
			n, err := unix.Getxattr(files[t], xattrName, buf[:256])
			if err != nil {
				return fmt.Errorf("getxattr %s: %w", files[t], err)
			}
			if string(buf[:n]) != xattrVal {
				return fmt.Errorf("getxattr %s: got %q, want %q", files[t], buf[:n], xattrVal)
			}
		case "open+close":
			fd, err := unix.Open(files[t], unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("open %s: %w", files[t], err)
			}
			if err := unix.Close(fd); err != nil {
				return fmt.Errorf("close %s: %w", files[t], err)
			}
		case "read 1 KB":
			n, err := unix.Pread(fds[t], buf[:fileBytes], 0)
			if err != nil {
				return fmt.Errorf("read %s: %w", files[t], err)
			}
			if !bytes.Equal(buf[:n], fileData) {
				return fmt.Errorf("read %s: %d bytes that are not the file's %d", files[t], n, fileBytes)
			}
		}
		return nil
	}
	type acc struct {
		ns                 []float64
		clientNS, serverNS int64
	}
	res := make(map[string]*acc)
	for r := 0; r < rounds; r++ {
		for _, op := range ops {
			for k := range names {
				t := (k + r) % len(names)
				c0, s0 := threadCPU(), processCPU(server)
				ns := make([]float64, 0, batch)
				for i := 0; i < batch; i++ {
					start := time.Now()
					err := run(op, t)
					d := time.Since(start)
					if err != nil {
						return fmt.Errorf("%s: %w", names[t], err)
					}
					ns = append(ns, float64(d.Nanoseconds()))
				}
				c1, s1 := threadCPU(), processCPU(server)
				if r == 0 {
					continue
				}
				a := res[names[t]+"\x00"+op]
				if a == nil {
					a = &acc{}
					res[names[t]+"\x00"+op] = a
				}
				a.ns = append(a.ns, ns...)
				a.clientNS += c1 - c0
				a.serverNS += s1 - s0
			}
		}
	}
	var out []stats
	for _, n := range names {
		for _, op := range ops {
			a := res[n+"\x00"+op]
			slices.Sort(a.ns)
			k := float64(len(a.ns))
			out = append(out, stats{
				Transport: n, Op: op, N: len(a.ns),
				MedianUS:  quantile(a.ns, 0.5) / 1e3,
				P90US:     quantile(a.ns, 0.9) / 1e3,
				ClientCPU: float64(a.clientNS) / k / 1e3,
				ServerCPU: float64(a.serverNS) / k / 1e3,
			})
		}
	}
	return json.NewEncoder(w).Encode(out)
}

// quantile of sorted values, by linear interpolation.
func quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return 0
	}
	x := q * float64(len(s)-1)
	i := int(x)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (s[i+1]-s[i])*(x-float64(i))
}

// threadCPU is the calling thread's user and system time, in nanoseconds.
func threadCPU() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// processCPU is the time process pid's threads have run, in nanoseconds (the first field of
// each thread's schedstat: exact, where getrusage of another process is not available).
func processCPU(pid int) int64 {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum int64
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue
		}
		f, _, _ := strings.Cut(string(b), " ")
		v, _ := strconv.ParseInt(f, 10, 64)
		sum += v
	}
	return sum
}

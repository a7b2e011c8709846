//go:build linux && (amd64 || arm64)

// Command uringprobe measures what FUSE over io_uring would save on this machine: it mounts
// one trivial tree (a directory, one 1 KB file with one extended attribute) three ways - go-fuse
// and a minimal hand-written loop on classic /dev/fuse, and the same minimal server on
// io_uring queues (protocol 7.42) - and measures getxattr, open + close and a 1 KB read on each,
// interleaved, from a client process of its own. Linux only, as root; it turns
// /sys/module/fuse/parameters/enable_uring on for the io_uring mount and back as it was.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == clientArg {
		if err := runClient(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "uringprobe client:", err)
			os.Exit(1)
		}
		return
	}
	cfg := config{}
	flag.IntVar(&cfg.rounds, "rounds", 11, "rounds of measurement, the first a warm-up")
	flag.IntVar(&cfg.batch, "batch", 1000, "calls per operation and transport in each round")
	flag.BoolVar(&cfg.uring.pin, "pin", true, "pin each io_uring queue's thread to its CPU, as libfuse does")
	taskrun := flag.String("taskrun", "signal", "how completions reach a queue's thread: signal (the kernel's default), coop (IORING_SETUP_COOP_TASKRUN) or defer (SINGLE_ISSUER and DEFER_TASKRUN)")
	flag.IntVar(&cfg.runs, "runs", 7, "client processes, one after the other, on the same mounts")
	flag.IntVar(&cfg.clientCPU, "client-cpu", -1, "pin the client to this CPU (-1: leave it to the scheduler)")
	flag.DurationVar(&cfg.timeout, "timeout", 10*time.Minute, "stop the measurement after this long")
	flag.Parse()
	flags, ok := taskrunModes[*taskrun]
	cfg.uring.flags = flags
	if !ok || cfg.rounds < 2 || cfg.batch < 1 || cfg.runs < 1 {
		fmt.Fprintln(os.Stderr, "uringprobe: -rounds must be at least 2, -batch and -runs at least 1, and -taskrun signal, coop or defer")
		os.Exit(2)
	}
	// Ctrl-C reaches the client too (one process group): its end ends the probe, which then
	// unmounts and puts enable_uring back instead of dying with the mounts up
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	dir, err := os.MkdirTemp("", "uringprobe-")
	if err == nil {
		defer os.RemoveAll(dir)
	}
	self, err2 := os.Executable()
	if err == nil {
		err = err2
	}
	var res *result
	if err == nil {
		res, err = probe(dir, self, cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "uringprobe:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	printReport(os.Stdout, cfg, res)
}

// Command benchtool is the kintfs benchmark (make bench, through scripts/bench.sh): run drives
// the whole of it and writes docs/benchmarks.md; the other subcommands are its steps, which it
// runs as processes of their own (and hyperfine runs copy): generating row trees, copying a
// tree with an fsync per file, timing reads under @<block>, and checking push gas against the
// EIP-7623 calldata floor.
//
//	benchtool run      (knobs in the environment: see scripts/bench.sh)
//	benchtool gen      -dir D -cats N -keys N -size B [-variant V] [-flush-every N -ctl F]
//	benchtool copy     -src S -dst D [-fsync]
//	benchtool readhist -cur F -hist 'MNT/@%d/entity/c/k' -versions F [-n N]
//	benchtool gas      -rpc URL -blocks F [-from-seq N]
//
// Every subcommand but run prints one JSON object.
package main

import (
	"fmt"
	"os"
	"sort"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmds := map[string]func([]string) error{
		"gen":      cmdGen,
		"copy":     cmdCopy,
		"readhist": cmdReadHist,
		"gas":      cmdGas,
		"run":      cmdRun,
	}
	run, ok := cmds[os.Args[1]]
	if !ok {
		usage()
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "benchtool %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchtool run|gen|copy|readhist|gas [flags]")
	os.Exit(2)
}

// median of a slice of durations in microseconds (sorted in place).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

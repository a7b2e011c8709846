// Command benchtool holds the helpers of scripts/bench.sh that the shell does badly: generating
// row trees, copying a tree with an fsync per file, timing reads under @<block>, counting
// JSON-RPC calls, and checking push gas against the EIP-7623 calldata floor.
//
//	benchtool gen      -dir D -cats N -keys N -size B [-variant V] [-flush-every N -ctl F]
//	benchtool copy     -src S -dst D [-fsync]
//	benchtool readhist -cur F -hist 'MNT/@%d/entity/c/k' -versions F [-n N]
//	benchtool rpcproxy -target URL
//	benchtool gas      -rpc URL -blocks F [-from-seq N]
//
// Every subcommand prints one JSON object (rpcproxy: its URL, then serves until killed).
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
		"rpcproxy": cmdRPCProxy,
		"gas":      cmdGas,
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
	fmt.Fprintln(os.Stderr, "usage: benchtool gen|copy|readhist|rpcproxy|gas [flags]")
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

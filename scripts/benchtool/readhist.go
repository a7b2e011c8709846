package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// version is one anchored version of the history row: the block of its epoch and its number.
type version struct {
	block uint64
	v     int
}

func readVersions(path string) ([]version, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []version
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 2 {
			continue
		}
		b, err1 := strconv.ParseUint(fs[0], 10, 64)
		v, err2 := strconv.Atoi(fs[1])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad line %q", sc.Text())
		}
		out = append(out, version{b, v})
	}
	return out, sc.Err()
}

// timedRead opens, reads and closes path, returning the content and the microseconds taken.
func timedRead(path string) ([]byte, float64, error) {
	t := time.Now()
	b, err := os.ReadFile(path)
	return b, float64(time.Since(t).Nanoseconds()) / 1e3, err
}

// cmdReadHist times reading the history row at arbitrary blocks (each path read once, so
// every read resolves @<block> afresh) against reading its current version, interleaved so
// that noise hits both alike, and checks that each block shows the version anchored there.
func cmdReadHist(args []string) error {
	fl := flag.NewFlagSet("readhist", flag.ExitOnError)
	cur := fl.String("cur", "", "the row's current path")
	hist := fl.String("hist", "", "the row's path under a block, with %d for the block")
	versions := fl.String("versions", "", "file of 'block version' lines")
	n := fl.Int("n", 200, "reads of each kind")
	fl.Parse(args)
	vs, err := readVersions(*versions)
	if err != nil {
		return err
	}
	if len(vs) < 2 {
		return fmt.Errorf("need at least 2 versions, have %d", len(vs))
	}
	rng := rand.New(rand.NewPCG(42, uint64(len(vs))))
	// Arbitrary blocks: a version's own block, or a block after it and before the next
	// version's (which must show the same version).
	type probe struct {
		block uint64
		v     int
	}
	var probes []probe
	seen := map[uint64]bool{}
	for tries := 0; len(probes) < *n && tries < 20**n; tries++ {
		i := rng.IntN(len(vs) - 1)
		b := vs[i].block
		if gap := vs[i+1].block - vs[i].block; gap > 1 && rng.IntN(2) == 0 {
			b += 1 + uint64(rng.IntN(int(gap-1)))
		}
		if !seen[b] {
			seen[b] = true
			probes = append(probes, probe{b, vs[i].v})
		}
	}
	want := func(b []byte, v int) error {
		var obj struct {
			V int `json:"v"`
		}
		if err := json.Unmarshal(b, &obj); err != nil {
			return fmt.Errorf("not JSON: %q", b)
		}
		if obj.V != v {
			return fmt.Errorf("shows version %d, want %d", obj.V, v)
		}
		return nil
	}
	last := vs[len(vs)-1]
	// warm the current path and one fixed history path
	fixed := fmt.Sprintf(*hist, vs[len(vs)/2].block)
	for i := 0; i < 3; i++ {
		if _, _, err := timedRead(*cur); err != nil {
			return err
		}
		if _, _, err := timedRead(fixed); err != nil {
			return err
		}
	}
	var tCur, tHist, tFixed []float64
	for _, p := range probes {
		b, us, err := timedRead(*cur)
		if err != nil {
			return err
		}
		if err := want(b, last.v); err != nil {
			return fmt.Errorf("current: %w", err)
		}
		tCur = append(tCur, us)
		path := fmt.Sprintf(*hist, p.block)
		b, us, err = timedRead(path)
		if err != nil {
			return err
		}
		if err := want(b, p.v); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		tHist = append(tHist, us)
		_, us, err = timedRead(fixed)
		if err != nil {
			return err
		}
		tFixed = append(tFixed, us)
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"versions": len(vs), "reads": len(probes),
		"current_median_us": median(tCur), "history_median_us": median(tHist),
		"history_same_block_median_us": median(tFixed), "verified": true,
	})
}

package replica

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"
)

// modelPaths are the rows the randomized test works on: every tier that takes writes, and
// entities with and without a category.
var modelPaths = []string{
	"entity/person/p0", "entity/person/p1", "entity/person/p2", "entity/place/q0", "entity/e0", "entity/e1",
	"state/s0", "state/s1", "state/s2", "state/s3", "state/s4", "state/s5",
	"reference/r0", "reference/r1", "reference/r2", "reference/r3", "reference/r4", "reference/r5",
}

func envInt(name string, def int64) int64 {
	if n, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil {
		return n
	}
	return def
}

// TestSealingModel runs random writes, deletions, renames and attribute changes on a real
// replica, interleaved with flushes against a real chain that pause at a random stage (and
// sometimes fail there) while more changes are made, and with restarts. After every step the
// replica must read exactly as an in-memory model of last-write-wins says; at the end a fresh
// machine must read the same from the chain.
//
// KINT_MODEL_SEED replays one seed; KINT_MODEL_OPS sets the number of steps (make stress
// runs 100,000). A failure names the seed and the step: that prefix of the run reproduces it.
// The chain is memchain; KINT_MODEL_CHAIN=dev runs it against a real go-ethereum node.
func TestSealingModel(t *testing.T) {
	t.Parallel() // a chain and homes of its own
	seed := envInt("KINT_MODEL_SEED", time.Now().UnixNano())
	steps := int(envInt("KINT_MODEL_OPS", 2000))
	t.Logf("seed %d, %d steps (replay: KINT_MODEL_SEED=%d KINT_MODEL_OPS=%d)", seed, steps, seed, steps)
	rng := rand.New(rand.NewSource(seed))
	e := newChainEnv(t)
	if os.Getenv("KINT_MODEL_CHAIN") == "dev" {
		e = newDevChainEnv(t)
	}
	r := e.machine()
	w := &writer{t: t, r: r, m: model{}}
	step := 0
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, step %d (KINT_MODEL_SEED=%d KINT_MODEL_OPS=%d reproduces it): %s",
			seed, step, seed, step, fmt.Sprintf(format, args...))
	}
	check := func(what string) {
		t.Helper()
		if d := diffModels(w.m, viewOf(t, w.r, modelPaths)); d != "" {
			fail("%s: %s", what, d)
		}
	}
	values := []string{`"x"`, `"y"`, `{"z":1}`}
	existing := func() (string, bool) {
		var have []string
		for _, p := range modelPaths {
			if _, ok := w.m[p]; ok {
				have = append(have, p)
			}
		}
		if len(have) == 0 {
			return "", false
		}
		return have[rng.Intn(len(have))], true
	}
	change := func() string {
		p := modelPaths[rng.Intn(len(modelPaths))]
		switch n := rng.Intn(20); {
		case n < 9:
			v := values[rng.Intn(len(values))]
			w.write(p, v)
			return "write " + p + " " + v
		case n < 13:
			if p, ok := existing(); ok {
				w.rm(p)
				return "rm " + p
			}
		case n < 16:
			if from, ok := existing(); ok {
				k := pathKey(from)
				var to string
				for {
					to = modelPaths[rng.Intn(len(modelPaths))]
					if to != from && pathKey(to).Tier == k.Tier {
						break
					}
				}
				w.mv(from, to)
				return "mv " + from + " " + to
			}
		default:
			if p, ok := existing(); ok {
				name, vals := "status", []*string{nil, strp("a"), strp("b")}
				if rng.Intn(2) == 0 {
					name, vals = "meta", []*string{nil, strp(`{"m":1}`), strp(`[2]`)}
				}
				v := vals[rng.Intn(len(vals))]
				w.attr(p, name, v)
				return "set " + name + " of " + p + " to " + strpOr(v)
			}
		}
		return "nothing"
	}
	stages := []PushStage{StageSealed, StageSent, StageReceipt, StageApplied}
	var flushes, failed, paused, restarts int
	start := time.Now()
	for step < steps {
		step++
		switch n := rng.Intn(100); {
		case n < 10:
			flushes++
			stage := stages[rng.Intn(len(stages))]
			pp := startPausedPush(w.r, stage)
			if pp.wait(t) {
				paused++
				for i := rng.Intn(5); i > 0 && step < steps; i-- {
					step++
					what := change()
					check("during a flush paused at " + stage.String() + ", after " + what)
				}
				var inject error
				if rng.Intn(5) == 0 {
					inject = errors.New("injected failure")
					failed++
				}
				if err := pp.finish(t, inject); err != nil && !errors.Is(err, inject) && !errors.Is(err, ErrNothingToPush) {
					fail("push: %v", err)
				}
			} else if err := <-pp.done; err != nil && !errors.Is(err, ErrNothingToPush) {
				fail("push: %v", err)
			}
			check("after a flush")
		case n < 11:
			restarts++
			w.r = e.reopen(w.r)
			check("after a restart")
		default:
			what := change()
			check("after " + what)
		}
	}
	elapsed := time.Since(start)
	flushAll(t, w.r)
	check("after the last flush")
	if got := stagedPaths(t, w.r, modelPaths); len(got) != 0 {
		fail("still staged after the last flush: %v", got)
	}
	fresh := e.machine()
	if _, err := fresh.Pull(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if d := diffModels(w.m, viewOf(t, fresh, modelPaths)); d != "" {
		fail("a fresh machine reads: %s", d)
	}
	t.Logf("%d steps: %d flushes (%d paused with changes, %d failed on purpose), %d restarts, %d rows at the end",
		steps, flushes, paused, failed, restarts, len(w.m))
	t.Logf("%d steps in %v, each checked against the model: %.0f steps a second", steps, elapsed.Round(time.Millisecond), float64(steps)/elapsed.Seconds())
}

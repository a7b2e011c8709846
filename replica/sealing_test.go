package replica

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// The last write wins: a change made while a flush is in flight is never lost, undone or
// brought back. These tests pause a real push against a real chain at each stage of an epoch
// and act on the rows it carries.

// modelRow is what a path should read as.
type modelRow struct {
	body   string
	status *string
	meta   *string
}

func (m modelRow) String() string {
	return fmt.Sprintf("body %q status %s meta %s", m.body, strpOr(m.status), strpOr(m.meta))
}

func strpOr(p *string) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *p)
}

// model maps a path ("state/a", "entity/person/x", "entity/x") to its row.
type model map[string]modelRow

func pathKey(path string) vault.Key {
	parts := strings.Split(path, "/")
	if len(parts) == 3 {
		return vault.Key{Tier: parts[0], Category: parts[1], HasCategory: true, Key: parts[2]}
	}
	return vault.Key{Tier: parts[0], Key: parts[1]}
}

// viewOf reads paths from a tree as a model.
func viewOf(t testing.TB, tr vault.TreeReader, paths []string) model {
	t.Helper()
	out := model{}
	for _, p := range paths {
		k := pathKey(p)
		v, err := tr.Get(k)
		if errors.Is(err, vault.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		body, err := tr.Content(k)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		out[p] = modelRow{body: string(body), status: v.Row.Status, meta: v.Row.Meta}
	}
	return out
}

// diffModels describes how got differs from want, "" when they agree.
func diffModels(want, got model) string {
	var lines []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("%s: missing, want %v", p, w))
		case g.String() != w.String():
			lines = append(lines, fmt.Sprintf("%s: %v, want %v", p, g, w))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			lines = append(lines, fmt.Sprintf("%s: %v, want absent", p, g))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

// stagedPaths lists the paths with a staged record, of paths.
func stagedPaths(t testing.TB, r *Replica, paths []string) []string {
	t.Helper()
	rows, dels, _, err := r.store.CollectStaged(false)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for i := range rows {
		ids[rows[i].ID()] = true
	}
	for _, d := range dels {
		ids[d.ID()] = true
	}
	var out []string
	for _, p := range paths {
		k := pathKey(p)
		if ids[seal.CanonicalID(k.Tier, k.CategoryPtr(), k.Key)] {
			out = append(out, p)
		}
	}
	return out
}

// pausedPush runs a push in the background that stops at stage of its first epoch until
// resume is called; fail makes the push fail there instead of going on.
type pausedPush struct {
	reached chan struct{}
	release chan error
	done    chan error
}

func startPausedPush(r *Replica, stage PushStage) *pausedPush {
	pp := &pausedPush{reached: make(chan struct{}), release: make(chan error), done: make(chan error, 1)}
	paused := false
	r.SetPushHook(func(s PushStage, seq uint64) error {
		if s != stage || paused {
			return nil
		}
		paused = true
		close(pp.reached)
		return <-pp.release
	})
	go func() {
		_, err := r.Push(context.Background(), PushOptions{})
		r.SetPushHook(nil)
		pp.done <- err
	}()
	return pp
}

// wait waits until the push reached its stage; false when it ended before.
func (pp *pausedPush) wait(t testing.TB) bool {
	t.Helper()
	select {
	case <-pp.reached:
		return true
	case err := <-pp.done:
		pp.done <- err
		return false
	case <-time.After(60 * time.Second):
		t.Fatal("the push never reached its stage")
	}
	return false
}

// finish lets the push go on (or fail with err) and returns what it returned.
func (pp *pausedPush) finish(t testing.TB, err error) error {
	t.Helper()
	select {
	case <-pp.reached:
		pp.release <- err
	default:
	}
	select {
	case err := <-pp.done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("the push did not finish")
	}
	return nil
}

// flushAll pushes until nothing is staged, and returns the number of epochs anchored.
func flushAll(t testing.TB, r *Replica) int {
	t.Helper()
	epochs := 0
	for i := 0; i < 3; i++ {
		rep, err := r.Push(context.Background(), PushOptions{})
		if errors.Is(err, ErrNothingToPush) {
			return epochs
		}
		if err != nil {
			t.Fatalf("push: %v", err)
		}
		epochs += len(rep.Epochs)
	}
	t.Fatal("still something to push after three pushes")
	return epochs
}

type writer struct {
	t testing.TB
	r *Replica
	m model
}

func (w *writer) write(path, body string) {
	w.t.Helper()
	if _, err := w.r.Write(pathKey(path), []byte(body), time.Now()); err != nil {
		w.t.Fatalf("write %s: %v", path, err)
	}
	row := w.m[path]
	row.body = body
	w.m[path] = row
}

func (w *writer) rm(path string) {
	w.t.Helper()
	if err := w.r.Remove(pathKey(path)); err != nil {
		w.t.Fatalf("rm %s: %v", path, err)
	}
	delete(w.m, path)
}

func (w *writer) mv(from, to string) {
	w.t.Helper()
	if err := w.r.Rename(pathKey(from), pathKey(to)); err != nil {
		w.t.Fatalf("mv %s %s: %v", from, to, err)
	}
	w.m[to] = w.m[from]
	delete(w.m, from)
}

func (w *writer) attr(path, name string, value *string) {
	w.t.Helper()
	if err := w.r.SetAttr(pathKey(path), name, value); err != nil {
		w.t.Fatalf("set %s of %s: %v", name, path, err)
	}
	row := w.m[path]
	if name == "status" {
		row.status = value
	} else {
		row.meta = value
	}
	w.m[path] = row
}

func (w *writer) check(what string, tr vault.TreeReader, paths []string) {
	w.t.Helper()
	if d := diffModels(w.m, viewOf(w.t, tr, paths)); d != "" {
		w.t.Fatalf("%s: %s", what, d)
	}
}

var sealingPaths = []string{"state/a", "state/b", "state/n", "state/m", "entity/person/p"}

// TestChangeDuringFlush: at each stage of a flush, each kind of change to a row the flush
// carries; the change must stand on the mount, stay staged, survive a restart, and reach a
// fresh machine after the next flush.
func TestChangeDuringFlush(t *testing.T) {
	cases := []struct {
		name   string
		before func(w *writer) // staged before the flush
		during func(w *writer) // done while it is paused
		staged []string        // staged once the paused flush has finished
	}{
		{"write back to the anchored content",
			func(w *writer) { w.write("state/a", "B") }, func(w *writer) { w.write("state/a", "A") }, []string{"state/a"}},
		{"write new content",
			func(w *writer) { w.write("state/a", "B") }, func(w *writer) { w.write("state/a", "C") }, []string{"state/a"}},
		{"write what is being sealed",
			func(w *writer) { w.write("state/a", "B") }, func(w *writer) { w.write("state/a", "C"); w.write("state/a", "B") }, nil},
		{"rm a row only staged",
			func(w *writer) { w.write("state/n", "N") }, func(w *writer) { w.rm("state/n") }, []string{"state/n"}},
		{"rm an anchored row being sealed",
			func(w *writer) { w.write("state/a", "B") }, func(w *writer) { w.rm("state/a") }, []string{"state/a"}},
		{"rm an anchored row not in the flush",
			func(w *writer) { w.write("state/n", "N") }, func(w *writer) { w.rm("state/a") }, []string{"state/a"}},
		{"mv a row only staged",
			func(w *writer) { w.write("state/n", "N") }, func(w *writer) { w.mv("state/n", "state/m") }, []string{"state/n", "state/m"}},
		{"mv an anchored row being sealed",
			func(w *writer) { w.write("state/a", "B") }, func(w *writer) { w.mv("state/a", "state/b") }, []string{"state/a", "state/b"}},
		{"recreate a deleted row with its anchored content",
			func(w *writer) { w.rm("state/a") }, func(w *writer) { w.write("state/a", "A") }, []string{"state/a"}},
		{"recreate a deleted row with new content",
			func(w *writer) { w.rm("state/a") }, func(w *writer) { w.write("state/a", "Z") }, []string{"state/a"}},
		{"set status",
			func(w *writer) { w.write("state/a", "B") }, func(w *writer) { w.attr("state/a", "status", strp("done")) }, []string{"state/a"}},
		{"set meta",
			func(w *writer) { w.write("entity/person/p", `"P2"`) }, func(w *writer) { w.attr("entity/person/p", "meta", strp(`{"k":1}`)) }, []string{"entity/person/p"}},
		{"set status back",
			func(w *writer) { w.attr("state/a", "status", strp("x")) }, func(w *writer) { w.attr("state/a", "status", nil) }, []string{"state/a"}},
	}
	for _, stage := range []PushStage{StageSealed, StageSent, StageReceipt, StageApplied} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", stage, c.name), func(t *testing.T) {
				t.Parallel()        // each case on a chain and homes of its own
				e := newChainEnv(t) // a chain of its own: the same vault starts empty each time
				r := e.machine()
				w := &writer{t: t, r: r, m: model{}}
				w.write("state/a", "A")
				w.write("entity/person/p", `"P"`)
				flushAll(t, r)
				c.before(w)
				pp := startPausedPush(r, stage)
				if !pp.wait(t) {
					t.Fatalf("the push ended before %s: %v", stage, <-pp.done)
				}
				c.during(w)
				w.check("while paused", r, sealingPaths)
				if err := pp.finish(t, nil); err != nil {
					t.Fatalf("push: %v", err)
				}
				w.check("after the flush", r, sealingPaths)
				if got := stagedPaths(t, r, sealingPaths); fmt.Sprint(got) != fmt.Sprint(c.staged) {
					t.Fatalf("staged after the flush: %v, want %v", got, c.staged)
				}
				r = e.reopen(r)
				w.r = r
				w.check("after a restart", r, sealingPaths)
				flushAll(t, r)
				w.check("after the next flush", r, sealingPaths)
				fresh := e.machine()
				if _, err := fresh.Pull(context.Background(), false); err != nil {
					t.Fatal(err)
				}
				w.check("on a fresh machine", fresh, sealingPaths)
			})
		}
	}
}

// TestFailedFlushKeepsNewerChange: a push that fails at any stage leaves the rows it carried
// staged, under the changes made while it was in flight; the push journal settles an epoch
// that was sent, and nothing is lost or brought back.
func TestFailedFlushKeepsNewerChange(t *testing.T) { failedFlushKeepsNewerChange(t, newChainEnv) }

// TestFailedFlushKeepsNewerChangeOnDevChain is the same through the RPC client and a real
// go-ethereum node: the push journal against real transactions and receipts.
func TestFailedFlushKeepsNewerChangeOnDevChain(t *testing.T) {
	t.Parallel() // mostly waiting on its own go-ethereum node
	failedFlushKeepsNewerChange(t, newDevChainEnv)
}

func failedFlushKeepsNewerChange(t *testing.T, newEnv func(testing.TB) *chainEnv) {
	for _, stage := range []PushStage{StageSealed, StageSent, StageReceipt, StageApplied} {
		t.Run(stage.String(), func(t *testing.T) {
			e := newEnv(t)
			r := e.machine()
			w := &writer{t: t, r: r, m: model{}}
			w.write("state/a", "A")
			w.write("state/b", "B")
			flushAll(t, r)
			w.write("state/a", "A2")
			w.write("state/n", "N")
			w.rm("state/b")
			pp := startPausedPush(r, stage)
			if !pp.wait(t) {
				t.Fatalf("the push ended before %s: %v", stage, <-pp.done)
			}
			w.write("state/a", "A")
			w.rm("state/n")
			w.write("state/b", "B")
			if err := pp.finish(t, errors.New("injected failure")); err == nil || !strings.Contains(err.Error(), "injected failure") {
				t.Fatalf("push returned %v, want the injected failure", err)
			}
			w.check("after the failed flush", r, sealingPaths)
			r = e.reopen(r)
			w.r = r
			w.check("after a restart", r, sealingPaths)
			flushAll(t, r)
			w.check("after the next flush", r, sealingPaths)
			if got := stagedPaths(t, r, sealingPaths); len(got) != 0 {
				t.Fatalf("still staged: %v", got)
			}
			fresh := e.machine()
			if _, err := fresh.Pull(context.Background(), false); err != nil {
				t.Fatal(err)
			}
			w.check("on a fresh machine", fresh, sealingPaths)
		})
	}
}

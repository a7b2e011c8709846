package integration

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// epochBlocks reads the blocks and block times of a machine's epochs from kintfs log.
func (m *machine) epochBlocks() ([]uint64, []time.Time) {
	m.t.Helper()
	var blocks []uint64
	var times []time.Time
	for _, line := range strings.Split(strings.TrimSpace(m.mustRun("", "log")), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != "seq" || f[2] != "block" {
			m.t.Fatalf("kintfs log line %q", line)
		}
		b, err := strconv.ParseUint(f[3], 10, 64)
		if err != nil {
			m.t.Fatal(err)
		}
		blocks = append(blocks, b)
		for i := range f[:len(f)-1] {
			if f[i] == "time" {
				at, err := time.Parse(time.RFC3339, f[i+1])
				if err != nil {
					m.t.Fatalf("kintfs log line %q: %v", line, err)
				}
				times = append(times, at)
			}
		}
	}
	if len(times) != len(blocks) {
		m.t.Fatalf("kintfs log gives %d block times for %d epochs", len(times), len(blocks))
	}
	return blocks, times
}

// atTime names the history root of a time.
func atTime(t time.Time) string { return "@" + t.UTC().Format(time.RFC3339) }

// historyWrites anchors, through a mount, diff, diff, a snapshot that deletes a row, and a
// diff; it returns what each path reads at each epoch's block ("" for absent).
func historyWrites(t *testing.T, a *machine) (blocks []uint64, times []time.Time, want []map[string]string) {
	ma := a.mount()
	steps := []map[string]string{
		{"entity/person/first": `{"v":1}`, "state/x": "x1"},
		{"entity/person/first": `{"v":2}`, "entity/person/second": `{"v":"s"}`},
		{"entity/person/first": "", "state/y": "y3"},
		{"state/x": "x4"},
	}
	now := map[string]string{}
	for i, step := range steps {
		for p, v := range step {
			if v == "" {
				if err := os.Remove(ma.path(p)); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, ma.path(p), v)
			}
			now[p] = v
		}
		if i == 2 {
			ma.mustCtl("compact")
		} else {
			ma.mustCtl("flush")
		}
		snap := map[string]string{}
		for p, v := range now {
			snap[p] = v
		}
		want = append(want, snap)
	}
	ma.unmount()
	blocks, times = a.epochBlocks()
	if len(blocks) != len(steps) {
		t.Fatalf("the writer lists %d epochs, want %d", len(blocks), len(steps))
	}
	for i := 1; i < len(times); i++ {
		if !times[i].After(times[i-1].Add(time.Second)) {
			t.Fatalf("epoch block times %v are not seconds apart", times)
		}
	}
	return blocks, times, want
}

// checkAtBlocks reads every path under @<block> of each epoch.
func checkAtBlocks(t *testing.T, m *mounted, blocks []uint64, want []map[string]string) {
	t.Helper()
	for i, b := range blocks {
		checkRoot(t, m, fmt.Sprintf("@%d", b), want[i])
	}
}

// checkRoot reads every path of want under one history root.
func checkRoot(t *testing.T, m *mounted, root string, want map[string]string) {
	t.Helper()
	for p, v := range want {
		got, err := os.ReadFile(m.path(root + "/" + p))
		switch {
		case v == "" && !errors.Is(err, os.ErrNotExist):
			t.Errorf("%s/%s: %q, %v; want it absent", root, p, got, err)
		case v != "" && (err != nil || string(got) != v):
			t.Errorf("%s/%s: %q, %v; want %q", root, p, got, err, v)
		}
	}
}

// checkAtTimes reads each epoch's state under @<time>: at its block time, a second after,
// and, for the last, long after; before the first, the empty tree.
func checkAtTimes(t *testing.T, m *mounted, times []time.Time, want []map[string]string) {
	t.Helper()
	for i, at := range times {
		checkRoot(t, m, atTime(at), want[i])
		checkRoot(t, m, atTime(at.Add(time.Second)), want[i])
	}
	checkRoot(t, m, atTime(times[len(times)-1].Add(24*time.Hour)), want[len(want)-1])
	entries, err := os.ReadDir(m.path(atTime(times[0].Add(-time.Second)) + "/state"))
	if err != nil || len(entries) != 0 {
		t.Errorf("@<time> before the first epoch: %v, %v; want the empty tree", entries, err)
	}
}

// TestHistoryBackfillOnMount: a fresh machine restores from the snapshot; while the backfill
// is held back, @<block> under the snapshot answers ENODATA (and the log says what to run);
// started, it completes history on its own; pull --full on another fresh machine does the
// same at once, and kintfs history and log list every version.
func TestHistoryBackfillOnMount(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "history")
	a.connect("pass history")
	blocks, times, want := historyWrites(t, a)

	b := newMachine(t, dc, "history")
	b.connect("pass history")
	b.extra = append(b.extra, "KINT_BACKFILL_START_SECONDS=3600")
	mb := b.mount()
	eventually(t, 30*time.Second, "the restore", func() error {
		if seq := mb.status()["mirror"].(map[string]any)["seq"].(float64); int(seq) != len(blocks) {
			return fmt.Errorf("mirror at seq %v", seq)
		}
		return nil
	})
	_, err := os.Stat(mb.path(fmt.Sprintf("@%d/entity", blocks[0])))
	if !errors.Is(err, syscall.ENODATA) {
		t.Fatalf("@%d before the backfill: %v, want ENODATA", blocks[0], err)
	}
	if _, err := os.Stat(mb.path(atTime(times[0]))); !errors.Is(err, syscall.ENODATA) {
		t.Fatalf("%s before the backfill: %v, want ENODATA", atTime(times[0]), err)
	}
	eventually(t, 5*time.Second, "the refusal is logged", func() error {
		if !strings.Contains(mb.log.String(), "kintfs pull --full") {
			return fmt.Errorf("not in the mount log:\n%s", mb.log.String())
		}
		return nil
	})
	if st := mb.status(); st["backfill"] != "not started" || st["history_from"].(map[string]any)["seq"].(float64) != 3 {
		t.Fatalf("status before the backfill: backfill %v, history_from %v", st["backfill"], st["history_from"])
	}
	// the snapshot and what follows are there already
	checkAtBlocks(t, mb, blocks[2:], want[2:])
	checkRoot(t, mb, atTime(times[2]), want[2])
	mb.unmount()

	// without the hold, the mount backfills on its own
	b.extra = b.extra[:len(b.extra)-1]
	mb = b.mount()
	eventually(t, 60*time.Second, "the backfill", func() error {
		if st := mb.status(); st["backfill"] != "done" {
			return fmt.Errorf("backfill %v", st["backfill"])
		}
		return nil
	})
	checkAtBlocks(t, mb, blocks, want)
	checkAtTimes(t, mb, times, want)
	if t.Failed() {
		t.Logf("mount log:\n%s\nstatus: %v", mb.log.String(), mb.status())
	}
	for _, bad := range []string{"@2026-12-01T10:00:00", "@2026-13-01T10:00:00Z", "@2026-12-01", "@now", "@-1"} {
		if _, err := os.Stat(mb.path(bad)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want ENOENT", bad, err)
		}
	}
	if got := strings.Count(b.mustRun("", "log"), "\n"); got != len(blocks) {
		t.Fatalf("kintfs log lists %d epochs, want %d", got, len(blocks))
	}
	hist := b.mustRun("", "history", "entity", "first", "--category", "person")
	if strings.Count(hist, "\n") != 3 || !strings.Contains(hist, "deleted") {
		t.Fatalf("kintfs history of the deleted row:\n%s", hist)
	}
	mb.unmount()

	// pull --full does it at once, from the CLI
	c := newMachine(t, dc, "history")
	c.connect("pass history")
	c.pull()
	if _, errs, code := c.run("", "history", "entity", "first", "--category", "person"); code == 0 || !strings.Contains(errs, "kintfs pull --full") {
		t.Fatalf("kintfs history before pull --full: exit %d: %s", code, errs)
	}
	if _, errs, code := c.run("", "history", "state", "x", "--block", fmt.Sprint(blocks[0])); code != 5 || !strings.Contains(errs, "kintfs pull --full") {
		t.Fatalf("kintfs history --block before pull --full: exit %d: %s", code, errs)
	}
	rep := c.pull("--full")
	if rep.Applied != 0 {
		t.Fatalf("pull --full applied %d epochs to the mirror, want none", rep.Applied)
	}
	mc := c.mount("--read-only")
	checkAtBlocks(t, mc, blocks, want)
	if _, err := os.Stat(mc.path(fmt.Sprintf("@%d/state", blocks[0]-1))); err != nil {
		t.Fatalf("the block before the first epoch: %v, want the empty tree", err)
	}
	// times resolve from what this machine recorded: with the chain gone, still the same
	dc.stop(t)
	checkAtTimes(t, mc, times, want)
}

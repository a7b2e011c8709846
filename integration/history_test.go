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

// epochBlocks reads the blocks of a machine's epochs from kintfs log.
func (m *machine) epochBlocks() []uint64 {
	m.t.Helper()
	var blocks []uint64
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
	}
	return blocks
}

// historyWrites anchors, through a mount, diff, diff, a snapshot that deletes a row, and a
// diff; it returns what each path reads at each epoch's block ("" for absent).
func historyWrites(t *testing.T, a *machine) (blocks []uint64, want []map[string]string) {
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
	blocks = a.epochBlocks()
	if len(blocks) != len(steps) {
		t.Fatalf("the writer lists %d epochs, want %d", len(blocks), len(steps))
	}
	return blocks, want
}

// checkAtBlocks reads every path under @<block> of each epoch.
func checkAtBlocks(t *testing.T, m *mounted, blocks []uint64, want []map[string]string) {
	t.Helper()
	for i, b := range blocks {
		for p, v := range want[i] {
			got, err := os.ReadFile(m.path(fmt.Sprintf("@%d/%s", b, p)))
			switch {
			case v == "" && !errors.Is(err, os.ErrNotExist):
				t.Errorf("@%d/%s: %q, %v; want it absent", b, p, got, err)
			case v != "" && (err != nil || string(got) != v):
				t.Errorf("@%d/%s: %q, %v; want %q", b, p, got, err, v)
			}
		}
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
	blocks, want := historyWrites(t, a)

	b := newMachine(t, dc, "history")
	b.connect("pass history")
	b.extra = append(b.extra, "KINT_BACKFILL_START_SECONDS=3600")
	mb := b.mount()
	eventually(t, 30*time.Second, "the restore", func() error {
		if _, err := os.ReadFile(mb.path("state/x")); err != nil {
			return err
		}
		return nil
	})
	_, err := os.Stat(mb.path(fmt.Sprintf("@%d/entity", blocks[0])))
	if !errors.Is(err, syscall.ENODATA) {
		t.Fatalf("@%d before the backfill: %v, want ENODATA", blocks[0], err)
	}
	if !strings.Contains(mb.log.String(), "kintfs pull --full") {
		t.Fatalf("the refusal is not logged:\n%s", mb.log.String())
	}
	if st := mb.status(); st["backfill"] != "not started" || st["history_from"].(map[string]any)["seq"].(float64) != 3 {
		t.Fatalf("status before the backfill: backfill %v, history_from %v", st["backfill"], st["history_from"])
	}
	// the snapshot and what follows are there already
	checkAtBlocks(t, mb, blocks[2:], want[2:])
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
}

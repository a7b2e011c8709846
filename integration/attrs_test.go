package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// requireTool fails in CI (which installs it, see .ci/run) and skips loudly elsewhere when a
// tool a test drives is missing.
func requireTool(t *testing.T, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	msg := fmt.Sprintf("TEST NOT RUN: %s is missing; apt-get install -y %s to run it", name, pkg)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// stats is stat -c '%n %i %Y.%y %a' of each path.
func stats(t *testing.T, paths ...string) string {
	t.Helper()
	out, err := exec.Command("stat", append([]string{"-c", "%i %y %a"}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("stat: %v\n%s", err, out)
	}
	return string(out)
}

// TestFlushAndPullKeepInodesAndTimes: a flush, a pull and a remount change no inode number,
// time or mode of a row they do not change; a row another machine changes keeps its number.
func TestFlushAndPullKeepInodesAndTimes(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "attrs")
	a.connect("correct horse battery")
	ma := a.mount()
	sh(t, ma.dir, `printf x > state/x && printf y > state/y && printf z > state/z &&
touch -d 2020-01-02T03:04:05.5Z state/x && chmod 600 state/x && mv state/z state/w`)
	paths := []string{ma.path("state/x"), ma.path("state/y"), ma.path("state/w")}
	before := stats(t, paths...)
	ma.mustCtl("flush")
	if st := ma.status(); st["staged_rows"].(float64) != 0 {
		t.Fatalf("rows still staged after flush: %v", st)
	}
	if got := stats(t, paths...); got != before {
		t.Fatalf("a flush changed inodes, times or modes:\nbefore %s\nafter  %s", before, got)
	}
	ma.mustCtl("pull")
	if got := stats(t, paths...); got != before {
		t.Fatalf("a pull changed inodes, times or modes:\nbefore %s\nafter  %s", before, got)
	}
	// touch and chmod stage nothing
	sh(t, ma.dir, `touch -d 2021-01-01T00:00:00Z state/y && chmod 640 state/y`)
	if st := ma.status(); st["staged_rows"].(float64) != 0 {
		t.Fatalf("touch and chmod staged rows: %v", st)
	}
	before = stats(t, paths...)

	// another machine changes y; here a pull brings it, y keeps its number, x is untouched
	b := newMachine(t, dc, "attrs")
	b.connect("correct horse battery")
	mb := b.mount()
	eventually(t, 30*time.Second, "second machine restores the tree", func() error {
		if got, err := readFileErr(mb.path("state/y")); err != nil || got != "y" {
			return fmt.Errorf("state/y = %q, %v", got, err)
		}
		return nil
	})
	writeFile(t, mb.path("state/y"), "y2")
	mb.mustCtl("flush")
	ma.mustCtl("pull")
	if got := readFile(t, ma.path("state/y")); got != "y2" {
		t.Fatalf("after the pull state/y = %q", got)
	}
	after := strings.Split(stats(t, paths...), "\n")
	was := strings.Split(before, "\n")
	if after[0] != was[0] || after[2] != was[2] {
		t.Fatalf("a pull of another row changed x or w:\nbefore %s\nafter  %s", before, strings.Join(after, "\n"))
	}
	if strings.Fields(after[1])[0] != strings.Fields(was[1])[0] {
		t.Fatalf("a pull that changed y changed its inode: %s -> %s", was[1], after[1])
	}
	if strings.Contains(after[1], "2021-01-01") {
		t.Fatalf("y changed by another machine kept the time set here: %s", after[1])
	}
	before = stats(t, paths...)
	ma.unmount()
	ma = a.mount()
	paths = []string{ma.path("state/x"), ma.path("state/y"), ma.path("state/w")}
	if got := stats(t, paths...); got != before {
		t.Fatalf("a remount changed inodes, times or modes:\nbefore %s\nafter  %s", before, got)
	}
}

// TestTrashAcrossFlushes: gio trash of a row (an entity: an anchored state or reference row
// cannot be trashed in kint's model), a flush (deleted on the chain), a rename back, a
// flush (back on the chain, content intact), and emptying the trash leaves history alone.
func TestTrashAcrossFlushes(t *testing.T) {
	requireFUSE(t)
	requireTool(t, "gio", "libglib2.0-bin")
	dc := startDevchain(t)
	a := newMachine(t, dc, "trash")
	a.connect("correct horse battery")
	ma := a.mount()
	const content = `{"row":"to trash"}`
	writeFile(t, ma.path("entity/g1"), content)
	ma.mustCtl("flush")
	first := anchoredBlock(t, ma, 0)

	sh(t, ma.dir, `gio trash entity/g1`)
	trash := fmt.Sprintf(".Trash-%d", os.Getuid())
	if got := readFile(t, ma.path(trash+"/files/g1")); got != content {
		t.Fatalf("trashed copy %q", got)
	}
	ma.mustCtl("flush")
	deleted := anchoredBlock(t, ma, first)
	if deleted == first {
		t.Fatal("the flush after gio trash anchored nothing")
	}
	if _, err := os.Stat(ma.path(fmt.Sprintf("@%d/entity/g1", deleted))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("@%d/entity/g1 after the trash was flushed: %v, want ENOENT", deleted, err)
	}
	// a machine restoring from the chain does not have it
	b := newMachine(t, dc, "trash")
	b.connect("correct horse battery")
	mb := b.mount()
	if block := anchoredBlock(t, mb, deleted-1); block != deleted {
		t.Fatalf("second machine at block %d, want %d", block, deleted)
	}
	if _, err := os.Stat(mb.path("entity/g1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("second machine has entity/g1: %v", err)
	}

	// restore: the rename back that a file manager's Restore does
	sh(t, ma.dir, `mv `+trash+`/files/g1 entity/g1 && rm `+trash+`/info/g1.trashinfo`)
	ma.mustCtl("flush")
	restored := anchoredBlock(t, ma, deleted)
	if got := readFile(t, ma.path(fmt.Sprintf("@%d/entity/g1", restored))); got != content {
		t.Fatalf("@%d/entity/g1 after the restore was flushed: %q", restored, got)
	}
	eventually(t, 30*time.Second, "second machine sees the restored row", func() error {
		if got, err := os.ReadFile(mb.path("entity/g1")); err != nil || string(got) != content {
			return fmt.Errorf("entity/g1 = %q, %v", got, err)
		}
		return nil
	})

	// trash again, flush, empty: the local copy goes, history stays
	sh(t, ma.dir, `gio trash entity/g1`)
	ma.mustCtl("flush")
	sh(t, ma.dir, `gio trash --empty; rm -rf `+trash+`/files/* `+trash+`/info/*`)
	if names, err := os.ReadDir(ma.path(trash + "/files")); err != nil || len(names) != 0 {
		t.Fatalf("emptied trash: %v %v", names, err)
	}
	for _, block := range []uint64{first, restored} {
		if got := readFile(t, ma.path(fmt.Sprintf("@%d/entity/g1", block))); got != content {
			t.Fatalf("@%d/entity/g1 after emptying the trash: %q", block, got)
		}
	}
	if _, err := os.Stat(ma.path("entity/g1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("entity/g1 after emptying: %v", err)
	}
}

// anchoredBlock is the block of the newest epoch .kint/blocks lists once it is past after.
func anchoredBlock(t *testing.T, mt *mounted, after uint64) uint64 {
	t.Helper()
	var block uint64
	eventually(t, 20*time.Second, "a new epoch in .kint/blocks", func() error {
		if strings.TrimSpace(readFile(t, mt.path(".kint/blocks"))) == "" {
			return errors.New(".kint/blocks is empty")
		}
		if block = lastBlock(t, mt); block <= after {
			return fmt.Errorf("newest block %d, want past %d", block, after)
		}
		return nil
	})
	return block
}

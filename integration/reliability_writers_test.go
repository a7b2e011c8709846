package integration

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// writerEdit is one change a writer made through its mount.
type writerEdit struct {
	path    string
	content string
	del     bool
	// anchored says a deleted row had an anchored version: only then has the deletion
	// anything to anchor (deleting a row never anchored only drops a local change)
	anchored bool
}

// TestTwoWriters mounts one vault on two machines (two KINT_HOMEs) and has each make random
// edits to the same small set of rows (KINTFS_TWO_WRITERS_EDITS each, default 50), with short
// quiet periods so that both flush (KINT_QUIET_SECONDS=1) and poll while the other writes.
// Once both have flushed and polled, they hold the same mirror (the same rows_root) as the
// chain head and the same tree, and each writer's last version of every row it touched is
// on chain (in some epoch's view under @<block>) or kept in a conflict copy that its status
// lists.
func TestTwoWriters(t *testing.T) {
	requireFUSE(t)
	edits := envCount("KINTFS_TWO_WRITERS_EDITS", 50)
	const pass = "two writers passphrase"
	dc := startDevchain(t)
	c := dc.client(t)
	a := newMachine(t, dc, "two-writers")
	a.connect(pass)
	a.extra = append(a.extra, "KINT_QUIET_SECONDS=1")
	ma := a.mount("--vault-model", "full") // writers rm anchored state rows, which only the full model allows
	writeFile(t, ma.path("state/seed"), "the first epoch, so the second machine adopts its key")
	ma.mustCtl("flush")
	b := newMachine(t, dc, "two-writers")
	b.connect(pass)
	b.extra = append(b.extra, "KINT_QUIET_SECONDS=1")
	mb := b.mount("--vault-model", "full")

	var keys []string
	for i := 0; i < 6; i++ {
		keys = append(keys, fmt.Sprintf("state/k%d", i), fmt.Sprintf("entity/shared/e%d", i))
	}
	logs := map[string][]writerEdit{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for _, w := range []struct {
		name string
		mt   *mounted
	}{{"A", ma}, {"B", mb}} {
		wg.Add(1)
		go func(name string, mt *mounted) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(time.Now().UnixNano() + int64(len(name))))
			var log []writerEdit
			for i := 0; i < edits; i++ {
				k := keys[rng.Intn(len(keys))]
				p := mt.path(k)
				if rng.Intn(5) == 0 {
					buf := make([]byte, 512)
					n, _ := unix.Getxattr(p, "user.kint.anchored", buf)
					anchored := n > 0 && strings.Contains(string(buf[:n]), "seq ")
					if err := os.Remove(p); err == nil {
						log = append(log, writerEdit{path: k, del: true, anchored: anchored})
					} else if !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("%s: rm %s: %v", name, k, err)
					}
				} else {
					content := fmt.Sprintf(`{"writer":%q,"edit":%d,"r":%d}`, name, i, rng.Intn(1000))
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Errorf("%s: mkdir for %s: %v", name, k, err)
					} else if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
						t.Errorf("%s: write %s: %v", name, k, err)
					} else {
						log = append(log, writerEdit{path: k, content: content})
					}
				}
				if i%10 == 9 {
					time.Sleep(time.Duration(1100+rng.Intn(900)) * time.Millisecond) // quiet: a flush goes out
				} else {
					time.Sleep(time.Duration(rng.Intn(150)) * time.Millisecond)
				}
			}
			mu.Lock()
			logs[name] = log
			mu.Unlock()
		}(w.name, w.mt)
	}
	wg.Wait()
	editTime := time.Since(start)

	// settle: flush both until nothing is staged and both mirrors are the chain head
	var sa, sb *mountStatus
	eventually(t, 120*time.Second, "both writers settle on the chain head", func() error {
		for _, mt := range []*mounted{ma, mb} {
			_ = mt.ctl("flush") // may lose a race with the other; the next round rebases
		}
		head := chainHead(t, c, a)
		var err error
		if sa, err = ma.readStatus(); err != nil {
			return err
		}
		if sb, err = mb.readStatus(); err != nil {
			return err
		}
		for name, st := range map[string]*mountStatus{"A": sa, "B": sb} {
			if st.StagedRows+st.StagedDels != 0 || st.Mirror.Seq != head.Seq || !strings.EqualFold(st.Mirror.Digest, head.Digest.Hex()) {
				_ = mtOf(name, ma, mb).ctl("pull")
				return fmt.Errorf("%s: %d staged, %d deletions, mirror %d, head %d (%s)", name, st.StagedRows, st.StagedDels, st.Mirror.Seq, head.Seq, st.errors())
			}
		}
		return nil
	})
	if sa.Mirror.Digest != sb.Mirror.Digest {
		t.Fatalf("the mirrors differ: A %s, B %s", sa.Mirror.Digest, sb.Mirror.Digest)
	}
	ta, tb := visibleTree(t, ma.dir), visibleTree(t, mb.dir)
	if fmt.Sprint(sortedMap(ta)) != fmt.Sprint(sortedMap(tb)) {
		t.Fatalf("the trees differ:\nA %v\nB %v", sortedMap(ta), sortedMap(tb))
	}

	// every writer's last version of each row: on chain, or in a conflict copy it lists
	blocks := epochBlocks(t, ma)
	conflicts := 0
	for name, log := range logs {
		mt, st := mtOf(name, ma, mb), map[string]*mountStatus{"A": sa, "B": sb}[name]
		conflicts += len(st.Conflicts)
		last := map[string]writerEdit{}
		for _, e := range log {
			last[e.path] = e
		}
		for k, e := range last {
			if e.del && !e.anchored || onChain(t, ma, blocks, k, e) || inConflictCopy(t, mt, st, k, e) {
				continue
			}
			t.Errorf("%s's last edit of %s (%+v) is neither on chain nor in a listed conflict copy; conflicts %+v", name, k, e, st.Conflicts)
		}
	}
	ma.checkNoPanic()
	mb.checkNoPanic()
	line := fmt.Sprintf("%d + %d edits in %s; %d epochs; %d conflict copies; rows_root digest %s on both", len(logs["A"]), len(logs["B"]),
		editTime.Round(time.Second), len(blocks), conflicts, sa.Mirror.Digest[:14])
	recordFigure(t, "two writers", "%s", line)
}

func mtOf(name string, a, b *mounted) *mounted {
	if name == "A" {
		return a
	}
	return b
}

// visibleTree is the tree without local-only files (dotfiles: conflict copies among them).
func visibleTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for p, v := range tree(t, dir) {
		if !strings.HasPrefix(filepath.Base(p), ".") {
			out[p] = v
		}
	}
	return out
}

// epochBlocks lists the blocks of the epochs a mount holds, oldest first.
func epochBlocks(t *testing.T, mt *mounted) []uint64 {
	t.Helper()
	var out []uint64
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, mt.path(".kint/blocks"))), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// onChain reports whether some epoch anchored e: the content under @<block>, or for a
// deletion the row gone at some block after it existed.
func onChain(t *testing.T, mt *mounted, blocks []uint64, k string, e writerEdit) bool {
	existed := false
	for _, b := range blocks {
		got, err := readFileErr(mt.path(fmt.Sprintf("@%d/%s", b, k)))
		switch {
		case err == nil && !e.del && got == e.content:
			return true
		case err == nil:
			existed = true
		case errors.Is(err, fs.ErrNotExist) && e.del && existed:
			return true
		case !errors.Is(err, fs.ErrNotExist):
			t.Errorf("read @%d/%s: %v", b, k, err)
		}
	}
	return false
}

// inConflictCopy reports whether the writer's status lists a conflict for k that kept e.
func inConflictCopy(t *testing.T, mt *mounted, st *mountStatus, k string, e writerEdit) bool {
	for _, c := range st.Conflicts {
		rel := c.Tier + "/"
		if c.Category != nil {
			rel += *c.Category + "/"
		}
		if rel+c.Key != k {
			continue
		}
		if e.del && c.Copy == "" {
			return true
		}
		if got, err := readFileErr(mt.path(rel + c.Copy)); err == nil && !e.del && got == e.content {
			return true
		}
	}
	return false
}

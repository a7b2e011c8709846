package replica

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kintfs/replica/memchain"
	"kintfs/replica/vault"
)

// TestPowerCutLostBodiesPutBack: after a run that ended without closing the store, the mirror
// bodies whose bytes never reached the disk (badger wrote a table pointing at them, then the
// power went) are put back from the epoch cache's blobs, checked against their digests and
// leaves, and stay put back, as do the versions in their history; one whose epoch is not in the
// cache reads as an error naming the way out, and the log says how many of each.
func TestPowerCutLostBodiesPutBack(t *testing.T) {
	e := newChainEnv(t)
	a := e.machine()
	body := func(i int) []byte {
		return []byte(strings.Repeat(fmt.Sprintf("lost-%d-marker %d ", i, i*7919), 400)) // 8 KB: the value log
	}
	key := func(i int) vault.Key { return vault.Key{Tier: "reference", Key: fmt.Sprint("doc", i)} }
	for i := 0; i < 3; i++ {
		if _, err := a.Write(key(i), body(i), time.Now()); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			flushAll(t, a) // doc0 and doc1 in one push, doc2 in the next
		}
	}
	flushAll(t, a)
	v2, err := a.store.Get(key(2))
	if err != nil || v2.Anchor == nil {
		t.Fatalf("doc2 after the flush: %+v, %v", v2, err)
	}
	opt := a.opt
	a.Close()

	dbDir := filepath.Join(opt.Home.Dir, "db", opt.Vault.Space16())
	for i := 0; i < 3; i++ {
		lose(t, dbDir, []byte(fmt.Sprintf("lost-%d-marker", i)))
	}
	// the power cut: the store was never closed, and doc2's epoch never reached the cache
	if err := os.WriteFile(filepath.Join(dbDir, "kintfs-running"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cached, err := filepath.Glob(filepath.Join(opt.Home.Dir, "epochs", "*", fmt.Sprintf("%08d.*", v2.Anchor.Seq)))
	if err != nil || len(cached) == 0 {
		t.Fatalf("doc2's epoch %d is not in the cache (%v)", v2.Anchor.Seq, err)
	}
	for _, f := range cached {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	var said []string
	opt.Log = lineLog(func(format string, args ...any) {
		mu.Lock()
		said = append(said, fmt.Sprintf(format, args...))
		mu.Unlock()
	})
	b, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if got, err := b.store.Content(key(i)); err != nil || !bytes.Equal(got, body(i)) {
			t.Fatalf("doc%d after the power cut: %d bytes, %v; want it put back", i, len(got), err)
		}
	}
	if got, err := b.store.Content(key(2)); err == nil || !strings.Contains(err.Error(), "rebuilt from the epoch cache") {
		t.Fatalf("doc2, lost and not in the cache: %d bytes, %v; want an error naming the way out", len(got), err)
	}
	mu.Lock()
	log := strings.Join(said, "\n")
	mu.Unlock()
	if !strings.Contains(log, "3 anchored rows lost their bodies, 2 put back from the epoch cache; 1 could not be put back here") ||
		!strings.Contains(log, "2 anchored records lost in a power cut were rebuilt") || !strings.Contains(log, "1 versions in the history lost their records") || !strings.Contains(log, "every start looks again") {
		t.Errorf("the log after the power cut:\n%s", log)
	}
	if strings.Contains(log, "doc") || strings.Contains(log, "lost-") {
		t.Errorf("the log names a row or quotes a body:\n%s", log)
	}
	b.Close()

	// put back in the state database, not served from the cache: they read without it
	if err := os.RemoveAll(filepath.Dir(cached[0])); err != nil {
		t.Fatal(err)
	}
	said = nil
	opt.Log = lineLog(func(format string, args ...any) {
		mu.Lock()
		said = append(said, fmt.Sprintf(format, args...))
		mu.Unlock()
	})
	c, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 2; i++ {
		if got, err := c.store.Content(key(i)); err != nil || !bytes.Equal(got, body(i)) {
			t.Fatalf("doc%d after a clean restart without the cache: %d bytes, %v", i, len(got), err)
		}
	}
	// doc2 is still lost: the open after the clean close looks again, and finds only it
	rp := c.store.UncleanStart()
	if !rp.Unclean || rp.Bodies != 0 || len(rp.BodiesLeft) != 1 || len(rp.Missing) != 1 || rp.Missing[0].Seq != v2.Anchor.Seq {
		t.Errorf("the open after a clean close that left doc2 lost: %+v; want it to look again, find doc2 alone and want its epoch %d", rp, v2.Anchor.Seq)
	}

	// a pull whose node has pruned that epoch's transaction says so and goes on; doc2 stays lost
	connOf(t, c).Fault(func(f *memchain.Faults) { f.NoTx = map[uint64]bool{v2.Anchor.Seq: true} })
	if _, err := c.Pull(context.Background(), false); err != nil {
		t.Fatalf("a pull that cannot fetch the epoch a power cut left unrepaired: %v; want it to go on", err)
	}
	mu.Lock()
	log = strings.Join(said, "\n")
	mu.Unlock()
	if !strings.Contains(log, "fetching the 1 epochs that carry what it could not put back failed") || !strings.Contains(log, "the next pull tries again") {
		t.Errorf("the log of the pull that could not fetch:\n%s", log)
	}
	if _, err := c.store.Content(key(2)); err == nil {
		t.Fatal("doc2 reads after a pull that could not fetch its epoch")
	}
	connOf(t, c).Fault(func(f *memchain.Faults) { f.NoTx = nil })

	// the next pull fetches that epoch from the chain, caches its blob and puts back what it carries
	if _, err := c.Pull(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if got, err := c.store.Content(key(2)); err != nil || !bytes.Equal(got, body(2)) {
		t.Fatalf("doc2 after a pull: %d bytes, %v; want it put back from the chain", len(got), err)
	}
	if got, err := c.store.At(v2.Anchor.Block).Content(key(2)); err != nil || !bytes.Equal(got, body(2)) {
		t.Fatalf("doc2 at block %d after a pull: %d bytes, %v; want its history version rebuilt", v2.Anchor.Block, len(got), err)
	}
	if rp := c.store.UncleanStart(); len(rp.BodiesLeft) != 0 || rp.RecordsLeft != 0 || len(rp.Missing) != 0 || rp.Bodies != 1 || rp.Records != 1 {
		t.Errorf("after the pull: %+v; want doc2's body and history version put back, nothing left", rp)
	}
	if blob, err := filepath.Glob(filepath.Join(opt.Home.Dir, "epochs", "*", fmt.Sprintf("%08d.bin", v2.Anchor.Seq))); err != nil || len(blob) != 1 {
		t.Errorf("epoch %d's blob in the cache after the pull: %v, %v", v2.Anchor.Seq, blob, err)
	}
	mu.Lock()
	log = strings.Join(said, "\n")
	mu.Unlock()
	if !strings.Contains(log, "1 epochs it wanted were fetched from the chain; 1 anchored records and 1 bodies put back") {
		t.Errorf("the log of the pull:\n%s", log)
	}
	// all of it back: a clean close leaves no running marker, and the next open looks for nothing
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dbDir, "kintfs-running")); !os.IsNotExist(err) {
		t.Errorf("the running marker after a clean close with everything put back: %v", err)
	}
}

// lose zeroes every page of the value logs in dir that holds marker, as a power cut loses
// pages that were never synced.
func lose(t *testing.T, dir string, marker []byte) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no value log under %s (%v)", dir, err)
	}
	lost := 0
	for _, name := range logs {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(b); off += 4096 {
			if page := b[off:min(off+4096, len(b))]; bytes.Contains(page, marker) {
				clear(page)
				lost++
			}
		}
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if lost == 0 {
		t.Fatalf("%q is in no value log", marker)
	}
}

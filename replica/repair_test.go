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
	// offline opens: an open with a connection fetches what the cache lacks itself
	// (TestPowerCutOpenFetchesWhatTheCacheLacks); this one leaves it to the pull
	online := opt.Client
	opt.Client = nil
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
	c.setClient(online)
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
	revertPages(t, dir, marker, nil)
}

// TestPowerCutDuringPushPutBackFromJournal: a push applies its epochs before their cache files
// are durable and clears an epoch's journal entry only after them. A power cut in between
// keeps the apply's records and loses the pages of the body it wrote and of the cache files;
// the epoch's transaction is gone from the node too, and the machine starts offline. The open
// takes the blob from the journal entry's signed transaction and puts back the body and its
// history version.
func TestPowerCutDuringPushPutBackFromJournal(t *testing.T) {
	e := newChainEnv(t)
	a := e.machine()
	if _, err := a.Write(vault.Key{Tier: "reference", Key: "before"}, []byte("an epoch before, so the cache has a directory"), time.Now()); err != nil {
		t.Fatal(err)
	}
	flushAll(t, a)
	key := vault.Key{Tier: "reference", Key: "doc-pj"}
	marker := []byte("journal-body-marker")
	body := bytes.Repeat(append(marker, " 7919 "...), 400) // 10 KB: the value log
	if _, err := a.Write(key, body, time.Now()); err != nil {
		t.Fatal(err)
	}
	opt := a.opt
	dbDir := filepath.Join(opt.Home.Dir, "db", opt.Vault.Space16())
	cacheDir := opt.Home.Path("epochs", opt.Vault.Space16())
	var synced map[string][]byte
	a.SetPushHook(func(stage PushStage, seq uint64) error {
		switch stage {
		case StageSent:
			synced = keptLog(t, dbDir) // the journal entry is synced before the send
		case StageReceipt:
			// no cache file of this push reaches its place: the push fails at its commit
			if err := os.Rename(cacheDir, cacheDir+".aside"); err != nil {
				return err
			}
			return os.WriteFile(cacheDir, nil, 0o600)
		}
		return nil
	})
	if _, err := a.Push(context.Background(), PushOptions{}); err == nil || !strings.Contains(err.Error(), "cache the pushed epochs") {
		t.Fatalf("the push whose cache files cannot be written: %v", err)
	}
	v, err := a.store.Get(key)
	if err != nil || v.Anchor == nil {
		t.Fatalf("doc-pj after the push: %+v, %v; want it applied", v, err)
	}
	if pend, err := a.store.PendingPushes(); err != nil || len(pend) != 1 || pend[0].Seq != v.Anchor.Seq {
		t.Fatalf("the push journal after the push: %+v, %v; want epoch %d's entry", pend, err, v.Anchor.Seq)
	}
	a.SetPushHook(nil)
	a.Close()

	// the cut: what the apply wrote after the journal entry's sync is lost, as are the cache files
	revertPages(t, dbDir, marker, synced)
	if err := os.Remove(cacheDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cacheDir+".aside", cacheDir); err != nil {
		t.Fatal(err)
	}
	if blobs, _ := filepath.Glob(filepath.Join(cacheDir, fmt.Sprintf("%08d.*", v.Anchor.Seq))); len(blobs) != 0 {
		t.Fatalf("epoch %d's cache files are in place: %v", v.Anchor.Seq, blobs)
	}
	if err := os.WriteFile(filepath.Join(dbDir, "kintfs-running"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// offline, and the node has pruned the transaction: only the journal has the blob
	connOf(t, a).Fault(func(f *memchain.Faults) { f.NoTx = map[uint64]bool{v.Anchor.Seq: true} })
	opt.Client = nil
	b, said := openLogged(t, opt)
	if got, err := b.store.Content(key); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("doc-pj after the power cut: %d bytes, %v; want it put back from the push journal", len(got), err)
	}
	if got, err := b.store.At(v.Anchor.Block).Content(key); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("doc-pj at block %d after the power cut: %d bytes, %v; want its history version put back", v.Anchor.Block, len(got), err)
	}
	if rp := b.store.UncleanStart(); rp.Bodies == 0 || len(rp.BodiesLeft) != 0 || rp.RecordsLeft != 0 || len(rp.Missing) != 0 {
		t.Errorf("the open's repair: %+v; want the body put back and nothing left", rp)
	}
	log := said.text()
	if !strings.Contains(log, "1 epochs it wanted were taken from the push journal") {
		t.Errorf("the log of the open:\n%s", log)
	}
	if strings.Contains(log, "doc-pj") || strings.Contains(log, string(marker)) {
		t.Errorf("the log names a row or quotes a body:\n%s", log)
	}
}

// keptLog is the content of the value logs in dir now: what a power cut after their last sync
// keeps of them.
func keptLog(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no value log under %s (%v)", dir, err)
	}
	kept := map[string][]byte{}
	for _, name := range logs {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		kept[name] = b
	}
	return kept
}

// revertPages puts every page of the value logs in dir that holds marker back as it was in
// kept (zero where kept had none), as a power cut loses the pages written since a sync: the
// bytes a sync covered stay, the rest of their page goes.
func revertPages(t *testing.T, dir string, marker []byte, kept map[string][]byte) {
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
		old := kept[name]
		for off := 0; off < len(b); off += 4096 {
			page := b[off:min(off+4096, len(b))]
			if !bytes.Contains(page, marker) {
				continue
			}
			was := make([]byte, len(page))
			if off < len(old) {
				copy(was, old[off:min(off+len(page), len(old))])
			}
			if !bytes.Equal(page, was) {
				copy(page, was)
				lost++
			}
		}
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if lost == 0 {
		t.Fatalf("no page holding %q was written since what was kept", marker)
	}
}

// TestPowerCutOpenFetchesWhatTheCacheLacks: a power cut took the bytes of an anchored row's
// mirror record and of its version in history (its 2 KB meta lives in a value log), and the
// epoch that anchored it is neither in the epoch cache (trimmed by hand) nor in the push
// journal. Offline, the open refuses, naming the cause and the way out; with a node that has
// pruned the transaction it refuses saying the fetch failed. With a connection the open fetches
// the epoch from the chain, checks it against the recorded digest, caches it and rebuilds what
// was lost: the row and its version at the epoch's block read with their meta, and the log says
// where the epoch came from without naming the row.
func TestPowerCutOpenFetchesWhatTheCacheLacks(t *testing.T) {
	e := newChainEnv(t)
	a := e.machine()
	key := vault.Key{Tier: "reference", Key: "doc-mf"}
	marker := "meta-fetch-marker"
	meta := `{"note":"` + strings.Repeat(marker+" ", 120) + `"}`
	v := anchorWithMeta(t, a, key, meta)
	opt, online := cutAndTrim(t, a, marker, v.Anchor.Seq)
	cacheDir := opt.Home.Path("epochs", opt.Vault.Space16())
	refused := func(why, cause string) {
		t.Helper()
		b, err := Open(opt)
		if err == nil {
			b.Close()
			t.Fatalf("%s: the open rebuilt a record from an epoch it could not have", why)
		}
		msg := err.Error()
		for _, want := range []string{"1 anchored rows lost their records in a power cut", "move KINT_HOME/db aside", cause} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the refusal does not say %q: %v", why, want, err)
			}
		}
		if strings.Contains(msg, marker) || strings.Contains(msg, "doc-mf") {
			t.Errorf("%s: the refusal names the row or quotes its meta: %v", why, err)
		}
	}
	opt.Client = nil
	refused("offline", "this command is offline")
	online.Fault(func(f *memchain.Faults) { f.NoTx = map[uint64]bool{v.Anchor.Seq: true} })
	opt.Client = online
	refused("a node without the transaction", "from the chain failed")
	online.Fault(func(f *memchain.Faults) { f.NoTx = nil })

	b, said := openLogged(t, opt)
	for _, at := range []struct {
		name string
		get  func() (*vault.Version, error)
	}{
		{"now", func() (*vault.Version, error) { return b.store.Get(key) }},
		{fmt.Sprintf("at block %d", v.Anchor.Block), func() (*vault.Version, error) { return b.store.At(v.Anchor.Block).Get(key) }},
	} {
		got, err := at.get()
		if err != nil || got.Row.Meta == nil || *got.Row.Meta != meta || got.Anchor == nil || got.Anchor.Seq != v.Anchor.Seq {
			t.Fatalf("doc-mf %s after the open: %+v, %v; want the anchored version with its meta", at.name, got, err)
		}
	}
	if rp := b.store.UncleanStart(); rp.Records < 2 || rp.RecordsLeft != 0 || len(rp.Missing) != 0 {
		t.Errorf("the open's repair: %+v; want the mirror record and the history version rebuilt, nothing left", rp)
	}
	if blob, err := filepath.Glob(filepath.Join(cacheDir, fmt.Sprintf("%08d.bin", v.Anchor.Seq))); err != nil || len(blob) != 1 {
		t.Errorf("epoch %d's blob in the cache after the open: %v, %v", v.Anchor.Seq, blob, err)
	}
	log := said.text()
	if !strings.Contains(log, "1 epochs it wanted were fetched from the chain") {
		t.Errorf("the log of the open:\n%s", log)
	}
	if strings.Contains(log, "doc-mf") || strings.Contains(log, marker) {
		t.Errorf("the log names the row or quotes its meta:\n%s", log)
	}
}

// TestPowerCutOpenFetchesEpochsAtOnce: a cut took the records of rows anchored in three
// epochs, all three trimmed from the cache. The open online fetches them in one round trip,
// not one an epoch, and rebuilds every record.
func TestPowerCutOpenFetchesEpochsAtOnce(t *testing.T) {
	e := newChainEnv(t)
	a := e.machine()
	marker := "meta-batch-marker"
	meta := `{"note":"` + strings.Repeat(marker+" ", 120) + `"}`
	var keys []vault.Key
	var seqs []uint64
	for i := 0; i < 3; i++ {
		key := vault.Key{Tier: "reference", Key: fmt.Sprintf("doc-b%d", i)}
		keys, seqs = append(keys, key), append(seqs, anchorWithMeta(t, a, key, meta).Anchor.Seq)
	}
	if seqs[0] == seqs[1] || seqs[1] == seqs[2] {
		t.Fatalf("the rows share epochs: %v", seqs)
	}
	opt, online := cutAndTrim(t, a, marker, seqs...)
	before := online.Stats()
	b, said := openLogged(t, opt)
	after := online.Stats()
	if calls, txs := after.Calls-before.Calls, after.Methods["eth_getTransactionByHash"]-before.Methods["eth_getTransactionByHash"]; calls != 1 || txs != 3 {
		t.Errorf("the open made %d round trips for %d transactions; want the 3 epochs fetched in 1", calls, txs)
	}
	for _, key := range keys {
		got, err := b.store.Get(key)
		if err != nil || got.Row.Meta == nil || *got.Row.Meta != meta {
			t.Fatalf("%s after the open: %+v, %v; want the anchored version with its meta", key.Key, got, err)
		}
	}
	if rp := b.store.UncleanStart(); rp.RecordsLeft != 0 || len(rp.Missing) != 0 {
		t.Errorf("the open's repair: %+v; want nothing left", rp)
	}
	if log := said.text(); !strings.Contains(log, "3 epochs it wanted were fetched from the chain") {
		t.Errorf("the log of the open:\n%s", log)
	}
}

// openLogged opens the replica of opt, failing the test if it cannot, with its log kept; it is
// closed when the test ends.
func openLogged(t *testing.T, opt Options) (*Replica, *logLines) {
	t.Helper()
	said := &logLines{}
	opt.Log = lineLog(said.logf(t))
	b, err := Open(opt)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b, said
}

// anchorWithMeta writes the row key with meta and flushes it into an epoch of its own; it
// returns the anchored version.
func anchorWithMeta(t *testing.T, a *Replica, key vault.Key, meta string) *vault.Version {
	t.Helper()
	if _, err := a.Write(key, []byte("the body of "+key.Key), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := a.SetAttr(key, "meta", &meta); err != nil {
		t.Fatal(err)
	}
	flushAll(t, a)
	v, err := a.store.Get(key)
	if err != nil || v.Anchor == nil {
		t.Fatalf("%s after its flush: %+v, %v", key.Key, v, err)
	}
	return v
}

// cutAndTrim closes a, then makes its state database look as a power cut left it: the pages
// holding marker lost, and the run not closed. The epochs seqs are taken out of the epoch
// cache. It returns a's options and its connection, to open the replica again with.
func cutAndTrim(t *testing.T, a *Replica, marker string, seqs ...uint64) (Options, *memchain.Conn) {
	t.Helper()
	opt, online := a.opt, connOf(t, a)
	a.Close()
	dbDir := filepath.Join(opt.Home.Dir, "db", opt.Vault.Space16())
	lose(t, dbDir, []byte(marker))
	if err := os.WriteFile(filepath.Join(dbDir, "kintfs-running"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cacheDir := opt.Home.Path("epochs", opt.Vault.Space16())
	for _, seq := range seqs {
		cached, err := filepath.Glob(filepath.Join(cacheDir, fmt.Sprintf("%08d.*", seq)))
		if err != nil || len(cached) == 0 {
			t.Fatalf("epoch %d is not in the cache (%v)", seq, err)
		}
		for _, f := range cached {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	return opt, online
}

package store

import (
	"bytes"
	"errors"
	"fmt"
	"kintfs/replica/vault"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/seal"
)

// pauseSyncs makes the store's syncs stop at the hook until the returned release is called;
// entered gets one value per sync that reached the hook. Set before any goroutine writes.
func pauseSyncs(s *Store) (entered chan int, release func()) {
	entered = make(chan int, 100)
	gate := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	n := 0
	s.db.syncHook = func() {
		mu.Lock()
		n++
		entered <- n
		mu.Unlock()
		<-gate
	}
	return entered, func() { once.Do(func() { close(gate) }) }
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// TestReadsDoNotWaitOnSync: while a write's sync is held at the hook, reads of the tree and of
// content are served, and they see the state before or after the write, never part of it; the
// write itself does not return until its sync is done.
func TestReadsDoNotWaitOnSync(t *testing.T) {
	r := newTestStore(t)
	old := vault.Key{Tier: "state", Key: "old"}
	k := vault.Key{Tier: "state", Key: "goal"}
	mustWrite(t, r.Store, old, "already there")
	mustWrite(t, r.Store, k, "first")
	entered, release := pauseSyncs(r.Store)
	defer release()

	wrote := make(chan error, 1)
	go func() {
		_, err := r.Write(k, []byte("second version"), time.Now())
		wrote <- err
	}()
	waitFor(t, entered, "the write's sync")

	read := make(chan string, 1)
	go func() {
		var out []string
		for _, key := range []vault.Key{old, k} {
			v, err := r.Get(key)
			if err != nil {
				read <- fmt.Sprintf("get %s: %v", key.Key, err)
				return
			}
			b, err := r.Content(key)
			if err != nil {
				read <- fmt.Sprintf("content %s: %v", key.Key, err)
				return
			}
			if int64(len(b)) != v.Size {
				out = append(out, fmt.Sprintf("%s: size %d but content %q", key.Key, v.Size, b))
			}
			out = append(out, string(b))
		}
		ls, err := r.List("state", nil)
		if err != nil {
			read <- err.Error()
			return
		}
		read <- strings.Join(out, "|") + "|" + names(ls)
	}()
	got := waitFor(t, read, "reads while a sync is held (they waited on it)")
	if got != "already there|second version|goal,old" && got != "already there|first|goal,old" {
		t.Fatalf("reads during the sync: %s", got)
	}
	select {
	case err := <-wrote:
		t.Fatalf("the write returned (%v) before its sync was done", err)
	default:
	}
	release()
	if err := waitFor(t, wrote, "the write after its sync"); err != nil {
		t.Fatal(err)
	}
	if b, err := r.Content(k); err != nil || string(b) != "second version" {
		t.Fatalf("after the write: %q, %v", b, err)
	}
}

// TestConcurrentWritesShareOneSync: writes that commit while a sync is running all wait for
// one next sync, not one each.
func TestConcurrentWritesShareOneSync(t *testing.T) {
	r := newTestStore(t)
	entered, release := pauseSyncs(r.Store)
	defer release()
	const writers = 8
	errs := make(chan error, writers+1)
	go func() {
		_, err := r.Write(vault.Key{Tier: "state", Key: "first"}, []byte("x"), time.Now())
		errs <- err
	}()
	waitFor(t, entered, "the first write's sync")
	r.db.mu.Lock()
	base := r.db.committed
	r.db.mu.Unlock()
	for i := 0; i < writers; i++ {
		go func() {
			_, err := r.Write(vault.Key{Tier: "state", Key: fmt.Sprintf("w%d", i)}, []byte(strings.Repeat("y", 1024)), time.Now())
			errs <- err
		}()
	}
	deadline := time.Now().Add(time.Minute)
	for {
		r.db.mu.Lock()
		n := r.db.committed
		r.db.mu.Unlock()
		if n >= base+writers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d writes committed while the first sync was held", n-base, writers)
		}
		time.Sleep(5 * time.Millisecond)
	}
	release()
	for i := 0; i <= writers; i++ {
		if err := waitFor(t, errs, "the writes"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(entered); n != 1 {
		t.Fatalf("%d syncs after the first for %d writes that committed during it, want 1", n, writers)
	}
	ls, _ := r.List("state", nil)
	if len(ls) != writers+1 {
		t.Fatalf("state/ = %s", names(ls))
	}
}

// TestCreateWaitsForNoSync: a create does not sync; Sync then makes it durable, and returns at
// once when everything already is.
func TestCreateWaitsForNoSync(t *testing.T) {
	r := newTestStore(t)
	entered, release := pauseSyncs(r.Store)
	defer release()
	k := vault.Key{Tier: "state", Key: "new"}
	if _, err := r.Create(k, 0o644, time.Now()); err != nil {
		t.Fatal(err)
	}
	if len(entered) != 0 {
		t.Fatal("a create synced")
	}
	if v, err := r.Get(k); err != nil || v.Size != 0 {
		t.Fatalf("the created file: %+v, %v", v, err)
	}
	release()
	if err := r.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(entered) != 1 {
		t.Fatalf("Sync after a create ran %d syncs, want 1", len(entered))
	}
	if err := r.Sync(); err != nil || len(entered) != 1 {
		t.Fatalf("Sync with nothing new: %v, %d syncs", err, len(entered))
	}
}

const groupKillEnv = "KINT_TEST_GROUP_KILL_DIR"

// TestCrashDuringGroupCommitChild is the process TestCrashDuringGroupCommit kills: it writes
// acknowledged rows, then holds a sync that several writes and a create wait on.
func TestCrashDuringGroupCommitChild(t *testing.T) {
	dir := os.Getenv(groupKillEnv)
	if dir == "" {
		t.Skip("the child half of TestCrashDuringGroupCommit; it runs only when that test starts it")
	}
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := s.Write(vault.Key{Tier: "state", Key: fmt.Sprintf("acked%d", i)}, groupBody(i), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Println("ACKED")
	entered := make(chan bool, 100)
	s.db.syncHook = func() {
		entered <- true
		select {} // the sync never finishes: the process is killed in it
	}
	for i := 0; i < 8; i++ {
		go s.Write(vault.Key{Tier: "state", Key: fmt.Sprintf("inflight%d", i)}, groupBody(100+i), time.Now())
	}
	<-entered
	if _, err := s.Create(vault.Key{Tier: "state", Key: "created"}, 0o600, time.Now()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the other writes commit and wait
	fmt.Println("KILL ME")
	time.Sleep(time.Hour)
}

func groupBody(i int) []byte {
	return []byte(fmt.Sprintf("row %d %s", i, strings.Repeat(fmt.Sprint(i%10), 2000)))
}

// TestCrashDuringGroupCommit: a process killed (SIGKILL) while writes wait on a group sync
// keeps every write acknowledged before; each write in the group, and a file created but not
// yet synced, is there whole or not at all.
func TestCrashDuringGroupCommit(t *testing.T) {
	dir := t.TempDir()
	if !killChildAt(t, "^TestCrashDuringGroupCommitChild$", groupKillEnv+"="+dir, "it held a group sync", "ACKED") {
		t.Fatal("the child held a group sync before it acknowledged its writes")
	}

	s, err := OpenStore(dir)
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer s.Close()
	for i := 0; i < 20; i++ {
		k := vault.Key{Tier: "state", Key: fmt.Sprintf("acked%d", i)}
		if b, err := s.Content(k); err != nil || string(b) != string(groupBody(i)) {
			t.Fatalf("acknowledged write %d after the crash: %.40q, %v", i, b, err)
		}
	}
	kept := 0
	for i := 0; i < 8; i++ {
		kept += wholeOrAbsent(t, s, vault.Key{Tier: "state", Key: fmt.Sprintf("inflight%d", i)}, string(groupBody(100+i)))
	}
	kept += wholeOrAbsent(t, s, vault.Key{Tier: "state", Key: "created"}, "")
	t.Logf("unacknowledged changes kept whole: %d of 9", kept)
}

// wholeOrAbsent checks that k is either absent everywhere (lookup and listing) or present
// everywhere with content want; 1 when present.
func wholeOrAbsent(t *testing.T, s *Store, k vault.Key, want string) int {
	t.Helper()
	ls, err := s.List(k.Tier, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := strings.Contains(","+names(ls)+",", ","+k.Key+",")
	v, err := s.Get(k)
	if errors.Is(err, vault.ErrNotFound) {
		if listed {
			t.Fatalf("%s is listed but not found", k.Key)
		}
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Content(k)
	if err != nil || string(b) != want || v.Size != int64(len(want)) || !listed || v.Ino == 0 {
		t.Fatalf("%s half exists after the crash: %+v, listed %v, content %.40q, %v", k.Key, v, listed, b, err)
	}
	return 1
}

// TestReadsDoNotWaitOnApplySync: an epoch's apply commits under the tree's lock but syncs
// after releasing it, the marker of a batched epoch first (readers see none of the epoch) and
// then the rest (readers see all of it): reads are served while each sync is held, and the
// apply returns only after the last.
func TestReadsDoNotWaitOnApplySync(t *testing.T) {
	r := newTestStore(t)
	k := vault.Key{Tier: "state", Key: "mine"}
	mustWrite(t, r.Store, k, "local row")
	gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
	entered := make(chan int, 10)
	var syncs atomic.Int32
	r.db.syncHook = func() {
		n := int(syncs.Add(1))
		entered <- n
		if n <= len(gates) {
			<-gates[n-1]
		}
	}
	defer func() {
		for _, g := range gates {
			select {
			case <-g:
			default:
				close(g)
			}
		}
	}()
	p := plaintextFor(map[string]seal.Row{}, 1, TinyRows(50, "x"), nil)
	if n := len(r.applyBatches(r.prepareApply(vault.EpochInfo{Seq: 1}, p, ApplyOptions{}))); n < 2 {
		t.Fatalf("the epoch is applied in %d batch, want a batched apply", n)
	}
	applied := make(chan error, 1)
	go func() {
		_, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 1, Block: 10, Digest: common.Hash{1}}, p, ApplyOptions{})
		applied <- err
	}()
	read := func() string {
		out := make(chan string, 1)
		go func() {
			b, err := r.Content(k)
			ls, _ := r.List("state", nil)
			out <- fmt.Sprintf("%s %v %d", b, err, len(ls))
		}()
		return waitFor(t, out, "reads while a sync of the apply is held (they waited on it)")
	}
	for i, want := range []string{"local row <nil> 1", "local row <nil> 51"} {
		if n := waitFor(t, entered, "a sync of the apply"); n != i+1 {
			t.Fatalf("sync %d entered, want %d", n, i+1)
		}
		if got := read(); got != want {
			t.Fatalf("reads during sync %d of the apply: %s, want %s", i+1, got, want)
		}
		select {
		case err := <-applied:
			t.Fatalf("the apply returned (%v) before its sync %d was done", err, i+1)
		default:
		}
		close(gates[i])
	}
	if err := waitFor(t, applied, "the apply after its syncs"); err != nil {
		t.Fatal(err)
	}
}

// TestSyncLogs: a sync fsyncs the newest memtable log every time and the newest value log
// when a value was written since the last sync, each log rotated away from once (forgotten
// once badger removes it), the value logs at once and then the memtable logs at once, never
// one of those while a value log is synced, and the directory when a log appeared in it.
func TestSyncLogs(t *testing.T) {
	dir := t.TempDir()
	put := func(names ...string) {
		for _, name := range names {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	put("000009.vlog", "000010.vlog", "00001.mem", "00002.mem", "MANIFEST")
	newestVlog, newestMem := "000010.vlog", "00002.mem"
	d := newDB(nil, dir)
	var values int64 // values written to value logs
	d.written = func() int64 { return values }
	var mu sync.Mutex
	var synced []string
	inFlight, most := 0, 0
	valuesInFlight, pointersEarly := 0, 0
	d.fsync = func(path string) error {
		ext := filepath.Ext(path)
		mu.Lock()
		synced = append(synced, filepath.Base(path))
		inFlight++
		most = max(most, inFlight)
		if ext == ".vlog" {
			valuesInFlight++
		} else if ext == ".mem" && valuesInFlight > 0 {
			pointersEarly++
		}
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // long enough for the others to start
		mu.Lock()
		inFlight--
		if ext == ".vlog" {
			valuesInFlight--
		}
		mu.Unlock()
		return d.logs.sync(path)
	}
	t.Cleanup(d.logs.close)
	t.Cleanup(d.watch.close)
	sorted := func(names ...string) string {
		sort.Strings(names)
		return strings.Join(names, " ")
	}
	round := func() string {
		t.Helper()
		synced = nil
		if err := d.syncNow(); err != nil {
			t.Fatal(err)
		}
		// only the newest logs stay open: a removed one is not held on disk from here
		if held := heldNames(&d.logs); held != sorted(newestVlog, newestMem) {
			t.Fatalf("after a sync the logs held open are %q, want the newest %s and %s", held, newestVlog, newestMem)
		}
		sort.Strings(synced)
		return strings.Join(synced, " ")
	}
	if got, want := round(), sorted("000009.vlog", "000010.vlog", "00001.mem", "00002.mem", filepath.Base(dir)); got != want {
		t.Fatalf("first sync: %s, want %s", got, want)
	}
	if most != 2 {
		t.Errorf("%d logs synced at once, want the 2 of each kind", most)
	}
	if pointersEarly != 0 {
		t.Errorf("%d memtable logs were synced while a value log was: a pointer could be durable before its value", pointersEarly)
	}
	listed := d.listings
	values++
	if got := round(); got != sorted("000010.vlog", "00002.mem") {
		t.Fatalf("second sync: %s, want the newest logs only", got)
	}
	if got := round(); got != "00002.mem" {
		t.Fatalf("a sync with no value written since the last: %s, want the newest memtable log only", got)
	}
	if runtime.GOOS == "linux" && d.listings != listed {
		t.Fatal("a sync listed the directory again with no file come or gone since the last")
	}
	if err := os.Remove(filepath.Join(dir, "000009.vlog")); err != nil {
		t.Fatal(err)
	}
	put("00003.mem")
	newestMem = "00003.mem"
	values++
	if got, want := round(), sorted("000010.vlog", "00002.mem", "00003.mem", filepath.Base(dir)); got != want {
		t.Fatalf("after a rotation: %s, want %s", got, want)
	}
	if d.done["000009.vlog"] || !d.done["00001.mem"] || !d.done["00002.mem"] || len(d.done) != 2 {
		t.Fatalf("after badger removed a log and rotated another: %v", d.done)
	}
	// a sync through the logs held sees what was written since it opened them
	f, err := os.OpenFile(filepath.Join(dir, newestVlog), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("more")); err != nil {
		t.Fatal(err)
	}
	if err := d.logs.sync(filepath.Join(dir, newestVlog)); err != nil {
		t.Fatal(err)
	}
	// a log is synced with fdatasync, the directory (its entries) with fsync
	if err := d.logs.sync(dir); err != nil {
		t.Fatal(err)
	}
	if f, _ := d.logs.open(dir); !f.dir {
		t.Fatal("the directory is held as a log: it would be synced with fdatasync")
	}
	if f, _ := d.logs.open(filepath.Join(dir, newestVlog)); f.dir {
		t.Fatal("a log is held as a directory: it would be synced with fsync")
	}
	if err := d.logs.sync(filepath.Join(dir, "000009.vlog")); !os.IsNotExist(err) {
		t.Fatalf("sync of a removed log = %v, want not exist (syncNow passes over it)", err)
	}
	d.logs.close()
	if held := heldNames(&d.logs); held != "" {
		t.Fatalf("logs held after close: %s", held)
	}
	if !newestOf("1000000.vlog", "999999.vlog") || newestOf("000009.vlog", "000010.vlog") {
		t.Fatal("newestOf compares the numbers, not the text")
	}
}

// heldNames are the base names of the files l holds open, sorted and joined.
func heldNames(l *logFiles) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var names []string
	for path := range l.held {
		names = append(names, filepath.Base(path))
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// TestSyncWaitsForQueuedCommits: a sync covers a queued commit (a create's) only once badger
// has written it: a Sync made while one is in flight touches no log until it lands, and a
// queued commit that failed fails every sync and every change after it, naming the way out.
func TestSyncWaitsForQueuedCommits(t *testing.T) {
	r := newTestStore(t)
	d := r.db
	var fsyncs atomic.Int32
	fsync := d.fsync
	d.fsync = func(path string) error { fsyncs.Add(1); return fsync(path) }
	inFlight := func() { // a commit handed to badger and not written yet, as commitQueued leaves it
		d.gate.RLock()
		d.noteCommit()
	}
	inFlight()
	done := make(chan error, 1)
	go func() { done <- r.Sync() }()
	select {
	case err := <-done:
		t.Fatalf("Sync returned (%v) while a commit before it was not written", err)
	case <-time.After(100 * time.Millisecond):
	}
	if n := fsyncs.Load(); n != 0 {
		t.Fatalf("%d logs synced while a commit before the sync was not written", n)
	}
	d.landed(nil)
	if err := waitFor(t, done, "the Sync after the queued commit landed"); err != nil {
		t.Fatal(err)
	}
	if fsyncs.Load() == 0 {
		t.Fatal("the Sync synced no log")
	}

	inFlight()
	d.landed(errors.New("no space left on device"))
	err := r.Sync()
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "remount") {
		t.Fatalf("Sync after a failed queued commit: %v", err)
	}
	if _, werr := r.Write(vault.Key{Tier: "state", Key: "after"}, []byte("x"), time.Now()); werr == nil || werr.Error() != err.Error() {
		t.Fatalf("a write after a failed queued commit: %v", werr)
	}
}

// TestNoWriteLandsInASync: while a sync runs (held after its value logs' fsync) no commit
// lands in badger's logs: a write started then returns only after the sync has finished, so
// the memtable logs' fsync can never make durable an entry whose value the value logs' fsync
// did not cover.
func TestNoWriteLandsInASync(t *testing.T) {
	r := newTestStore(t)
	d := r.db
	inSync, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fsync := d.fsync
	d.fsync = func(path string) error {
		if strings.HasSuffix(path, ".vlog") {
			once.Do(func() { close(inSync); <-release })
		}
		return fsync(path)
	}
	synced := make(chan error, 1)
	go func() {
		_, err := r.Write(vault.Key{Tier: "state", Key: "first"}, bytes.Repeat([]byte("a"), maxPiecedBody+1), time.Now())
		synced <- err
	}()
	waitFor(t, inSync, "the first write's sync at its value logs")
	before := valuesWritten()
	wrote := make(chan error, 1)
	go func() {
		_, err := r.Write(vault.Key{Tier: "state", Key: "second"}, bytes.Repeat([]byte("b"), maxPiecedBody+1), time.Now())
		wrote <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if after := valuesWritten(); after != before {
		t.Errorf("%d values landed in the value log inside a sync, after its fsync of the value logs began", after-before)
	}
	close(release)
	if err := waitFor(t, synced, "the first write"); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, wrote, "the second write"); err != nil {
		t.Fatal(err)
	}
}

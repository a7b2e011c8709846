package store

import (
	"errors"
	"expvar"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// db is the badger database with group commit. Badger is opened without synced writes: a
// commit lands in its memory-mapped logs, where it survives the process being killed, and is
// visible to every later read. A change is acknowledged (its Update returns) only once a sync
// has covered it, and one sync covers every commit made before it started: writers that
// commit while a sync runs share the next one. The tree's lock is never held across a sync,
// so reads do not wait on the disk.
type db struct {
	*badger.DB
	dir string

	mu        sync.Mutex
	cond      *sync.Cond
	committed uint64 // commits made so far
	synced    uint64 // commits a finished sync covered
	syncing   bool
	// gate keeps writes out of badger's logs while a sync runs. Every commit holds it for
	// reading until badger has written it (a queued one until it landed), and a sync holds it
	// for writing: a write landing between the value logs' fsync and the memtable logs' would
	// be made durable by the second while its value, in a value log, was not, and after a power
	// cut its entry would point at bytes that never got to the disk. It also makes a sync wait
	// for the queued commits counted before it.
	gate sync.RWMutex
	// queuedErr is the first error of a queued commit: the change it made to the tree is not in
	// the logs, so every sync after it fails with it until the store is reopened.
	queuedErr error
	// done are the logs badger rotated away from and a sync has covered: they take no more
	// writes, so they are synced once. Guarded by the sync in progress.
	done map[string]bool
	// known are the logs the last sync saw: a new one is made durable by syncing the directory.
	known map[string]bool
	// valuesSynced is what written said when the value logs were last synced (-1: never).
	valuesSynced int64
	// written is valuesWritten (tests count their own)
	written func() int64
	// logNames are the logs in dir at the last listing, which a sync takes again while watch
	// says the directory has not changed.
	logNames []string
	watch    *dirWatch
	listings int // how many times a sync listed dir (tests read it)
	// busy runs at each read and commit: it tells the releaser the store is in use.
	busy func()
	// syncHook, when set (by tests), runs in each sync before it touches the disk.
	syncHook func()
	// fsync syncs one file or directory (logs.sync; tests watch it).
	fsync func(path string) error
	logs  logFiles
	// pinned is a read transaction at what a sync made durable (see pinSynced), taken at
	// pinnedAt and moved forward at most every pinEvery; closed says Close let it go for
	// good. Guarded by the gate held for writing.
	pinned   *badger.Txn
	pinnedAt time.Time
	pinEvery time.Duration
	closed   bool
}

// pinEvery is how often at most a sync moves its read transaction forward (pinSynced): taking
// one waits for badger's bookkeeping of the commits before it, 40-90 µs of a durable close when
// done at every sync, and a pin left behind only keeps more versions from compaction a little
// longer.
const pinEvery = time.Second

func newDB(b *badger.DB, dir string) *db {
	d := &db{DB: b, dir: dir, done: map[string]bool{}, known: map[string]bool{}, watch: newDirWatch(dir), busy: func() {}, valuesSynced: -1, written: valuesWritten,
		pinEvery: pinEvery}
	d.fsync = d.logs.sync
	d.cond = sync.NewCond(&d.mu)
	return d
}

// Close closes badger, then the logs kept open for its syncs. Everything committed is synced
// first, values before pointers: badger's close writes its memtable into a table and syncs
// that before its value log, and a table on the disk whose values are not would read them
// back empty after a power cut.
func (d *db) Close() error {
	err := d.Sync()
	d.gate.Lock()
	d.closed = true
	if d.pinned != nil {
		d.pinned.Discard()
		d.pinned = nil
	}
	d.gate.Unlock()
	err = errors.Join(err, d.DB.Close())
	d.logs.close()
	d.watch.close()
	return err
}

// Update runs fn in one transaction and returns once the change is durable.
func (d *db) Update(fn func(txn *badger.Txn) error) error {
	n, err := d.commit(fn)
	if err != nil {
		return err
	}
	return d.waitSynced(n)
}

// View is badger's View, as busy.
func (d *db) View(fn func(txn *badger.Txn) error) error {
	d.busy()
	return d.DB.View(fn)
}

// NewTransaction is badger's NewTransaction, as busy.
func (d *db) NewTransaction(update bool) *badger.Txn {
	d.busy()
	return d.DB.NewTransaction(update)
}

// writeBatch runs fn on one of badger's write batches and flushes it, committed but not yet
// synced.
func (d *db) writeBatch(fn func(wb *badger.WriteBatch) error) error {
	d.busy()
	d.gate.RLock()
	defer d.gate.RUnlock()
	wb := d.DB.NewWriteBatch()
	defer wb.Cancel()
	if err := fn(wb); err != nil {
		return err
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	d.noteCommit()
	return nil
}

// commit runs fn in one transaction, committed but not yet synced; n is the commit to pass to
// waitSynced.
func (d *db) commit(fn func(txn *badger.Txn) error) (n uint64, err error) {
	d.busy()
	d.gate.RLock()
	defer d.gate.RUnlock()
	if err := d.DB.Update(fn); err != nil {
		return 0, err
	}
	return d.noteCommit(), nil
}

// commitOnly is commit for a caller that holds the tree's lock across several commits (an
// epoch's apply), which calls durable once it has let the lock go, or for a change a later
// synced commit makes durable (it is in the logs before that one).
func (d *db) commitOnly(fn func(txn *badger.Txn) error) error {
	_, err := d.commit(fn)
	return err
}

// commitQueued is commitOnly without waiting for badger to write the transaction: it returns
// once the transaction is queued, ahead of every commit made after it (badger writes them in
// the order they were handed over, and a read waits for those before it). A create answers at
// once this way, and the synced commit of the close that follows covers it. A queued commit
// that fails makes every sync after it fail (see queuedErr).
func (d *db) commitQueued(fn func(txn *badger.Txn) error) error {
	d.busy()
	txn := d.DB.NewTransaction(true)
	defer txn.Discard()
	if err := fn(txn); err != nil {
		return err
	}
	d.gate.RLock() // before the count: a sync that counts this commit waits for it to land
	d.noteCommit()
	txn.CommitWith(d.landed)
	return nil
}

// landed notes that a queued commit is in badger's logs, or failed with err.
func (d *db) landed(err error) {
	if err != nil {
		d.mu.Lock()
		if d.queuedErr == nil {
			d.queuedErr = fmt.Errorf("a change was not written to the state database: %w; remount to go on", err)
		}
		d.mu.Unlock()
	}
	d.gate.RUnlock()
}

// failed is the error of a queued commit that failed, if any.
func (d *db) failed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.queuedErr
}

func (d *db) noteCommit() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.committed++
	return d.committed
}

// commits is how many commits were made so far.
func (d *db) commits() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.committed
}

// Sync makes durable whatever was written to badger so far, through a transaction or not (a
// WriteBatch).
func (d *db) Sync() error { return d.waitSynced(d.noteCommit()) }

// durable waits until every commit made so far is durable; it returns at once when one is.
func (d *db) durable() error {
	d.mu.Lock()
	n := d.committed
	d.mu.Unlock()
	return d.waitSynced(n)
}

// waitSynced returns once commit n is durable: covered by a sync that started after it. The
// first waiter with no sync running starts one for everything committed so far; the others
// wait for it, or for the next one when theirs came too late for it.
func (d *db) waitSynced(n uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.synced < n {
		if d.queuedErr != nil {
			return d.queuedErr
		}
		if d.syncing {
			d.cond.Wait()
			continue
		}
		d.syncing = true
		upTo := d.committed
		d.mu.Unlock()
		err := d.syncNow()
		d.mu.Lock()
		d.syncing = false
		if err == nil && upTo > d.synced {
			d.synced = upTo
		}
		d.cond.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}

// syncNow makes every commit made before it durable. It syncs each of badger's value logs
// and memtable logs that may hold a write no sync has covered: the newest of each kind, and
// those badger rotated away from since the last sync (without synced writes it syncs none when
// it starts a new one). Then it syncs the directory when it holds a log it did not before.
//
// The value logs go first, and the memtable logs only once they are done: a memtable log
// holds a pointer into a value log for every value of valueThreshold bytes or more, and a
// pointer made durable before its value would, after a power cut, point at bytes that never
// reached the disk (a row or a push journal entry read back empty). Logs of one kind are
// synced at once.
//
// When no value was written to a value log since they were last synced, they are left alone:
// on ext4 an fdatasync with nothing to write still flushes the disk's cache, 50 µs, and a
// durable write of a small file (staged in pieces, pieces.go) writes none.
func (d *db) syncNow() error {
	if d.syncHook != nil {
		d.syncHook()
	}
	d.gate.Lock()
	defer d.gate.Unlock()
	written := d.written()
	values := written < 0 || written != d.valuesSynced
	// drained before the listing: a change made while it runs is listed by the next sync
	if d.watch.changed() || d.logNames == nil {
		d.listings++
		names, err := listLogs(d.dir)
		d.logNames = names // nil on an error: the next sync lists again
		if err != nil {
			return err
		}
	}
	logs := d.logNames
	newest := map[string]string{}
	for _, name := range logs {
		if ext := filepath.Ext(name); newestOf(name, newest[ext]) {
			newest[ext] = name
		}
	}
	// only the newest logs take more writes; every other one is let go once this sync covered it
	defer d.logs.keepOnly(d.dir, map[string]bool{newest[".vlog"]: true, newest[".mem"]: true})
	var todo []string
	seen := make(map[string]bool, len(logs))
	newLog := false
	for _, name := range logs {
		seen[name] = true
		if !d.known[name] {
			newLog = true
		}
		if !d.done[name] {
			todo = append(todo, name)
		}
	}
	if !values {
		todo = slices.DeleteFunc(todo, func(name string) bool { return filepath.Ext(name) == ".vlog" })
	}
	for _, kind := range []string{".vlog", ".mem"} {
		var names []string
		for _, name := range todo {
			if filepath.Ext(name) == kind {
				names = append(names, name)
			}
		}
		// after a failure no memtable log is synced
		if err := d.syncLogs(names); err != nil {
			return err
		}
	}
	if values {
		d.valuesSynced = written
	}
	for _, name := range todo {
		if name != newest[filepath.Ext(name)] {
			d.done[name] = true // rotated away from: it takes no more writes
		}
	}
	for name := range d.done {
		if !seen[name] {
			delete(d.done, name) // badger removed it
		}
	}
	d.known = seen
	if newLog {
		if err := d.fsync(d.dir); err != nil {
			return err
		}
	}
	d.pinSynced()
	return nil
}

// pinSynced holds a read transaction at what the sync that just ended made durable, in place
// of the one an earlier sync held; it runs with the gate held for writing, so no commit is
// between the two. Badger's compaction keeps, of every key, each version newer than the oldest
// open read transaction and the newest one not newer, so the newest durable version of every
// record stays while a newer one is not durable yet (a pin from an older sync keeps it too). A
// memtable flush can write that newer version's entry to a table before its value is synced;
// a power cut then loses the value, and the start after it goes back to the durable version
// (dropLostStaged), which compaction would otherwise have dropped.
func (d *db) pinSynced() {
	if d.closed || d.DB == nil { // nil: a test's logs without a database
		return
	}
	if d.pinned != nil {
		if time.Since(d.pinnedAt) < d.pinEvery {
			return
		}
		d.pinned.Discard()
	}
	d.pinned, d.pinnedAt = d.DB.NewTransaction(false), time.Now()
}

// valuesWritten is how many values badger has written to value logs in this process, all
// stores together (its metric badger_write_num_vlog, counted once a request's values are in
// the log, before its commit returns), or -1 when badger does not say.
func valuesWritten() int64 {
	if v, ok := expvar.Get(badgerValuesWritten).(*expvar.Int); ok {
		return v.Value()
	}
	return -1
}

const badgerValuesWritten = "badger_write_num_vlog"

// syncLogs fsyncs the logs named in dir, all at once: the first in this goroutine, the others
// in goroutines meanwhile (with one log, none is started). A log badger removed holds nothing
// unsynced.
func (d *db) syncLogs(names []string) error {
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i := 1; i < len(names); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.fsync(filepath.Join(d.dir, names[i]))
		}()
	}
	if len(names) > 0 {
		errs[0] = d.fsync(filepath.Join(d.dir, names[0]))
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// listLogs lists badger's value logs and memtable logs in dir (never nil).
func listLogs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	logs := []string{} // not nil: listed
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); ext == ".vlog" || ext == ".mem" {
			logs = append(logs, e.Name())
		}
	}
	return logs, nil
}

// newestOf reports whether the log name (numbered, zero padded) comes after than.
func newestOf(name, than string) bool {
	if than == "" {
		return true
	}
	a, b := strings.TrimLeft(name, "0"), strings.TrimLeft(than, "0")
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

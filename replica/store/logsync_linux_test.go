package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kintfs/replica/vault"
)

// A sync lists badger's directory only when the watch says a file came or went since the last
// one; the watch must never miss one, and must say changed for good once it cannot tell.
func TestDirWatch(t *testing.T) {
	dir := t.TempDir()
	w := newDirWatch(dir)
	defer w.close()
	if w.fd < 0 {
		t.Fatal("no inotify watch: every sync would list the directory")
	}
	if w.changed() {
		t.Fatal("changed before anything happened")
	}
	step := func(what string, do func() error) {
		t.Helper()
		if err := do(); err != nil {
			t.Fatal(err)
		}
		if !w.changed() {
			t.Fatalf("%s: not seen", what)
		}
		if w.changed() {
			t.Fatalf("%s: still changed when asked again", what)
		}
	}
	log := filepath.Join(dir, "00001.mem")
	step("a new log", func() error { return os.WriteFile(log, []byte("x"), 0o600) })
	// a write into a log is no change of the listing
	if err := os.WriteFile(log, []byte("more"), 0o600); err != nil {
		t.Fatal(err)
	}
	if w.changed() {
		t.Fatal("a write into a log said the directory changed")
	}
	step("a log renamed in", func() error {
		tmp := filepath.Join(t.TempDir(), "x")
		if err := os.WriteFile(tmp, nil, 0o600); err != nil {
			return err
		}
		return os.Rename(tmp, filepath.Join(dir, "00002.mem"))
	})
	step("a log removed", func() error { return os.Remove(log) })
	// more events than the kernel queues: the watch cannot tell what it missed
	const queueLimit = "/proc/sys/fs/inotify/max_queued_events"
	if limit, err := os.ReadFile(queueLimit); err == nil && os.WriteFile(queueLimit, []byte("64"), 0) == nil {
		w2 := newDirWatch(dir) // takes the limit as it is now
		if err := os.WriteFile(queueLimit, limit, 0); err != nil {
			t.Fatal(err)
		}
		defer w2.close()
		for i := 0; i < 100; i++ {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%05d.sst", i)), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if !w2.changed() || !w2.broken {
			t.Fatal("an overflowed queue was not seen")
		}
		if !w2.changed() {
			t.Fatal("an overflowed queue did not leave the watch saying changed when asked again")
		}
	} else {
		t.Logf("queue overflow not tried: cannot lower %s", queueLimit)
	}
	// the directory gone: changed from then on
	w.changed()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if !w.changed() {
		t.Fatal("a removed directory was not seen")
	}
	if !w.changed() {
		t.Fatal("a removed directory did not leave the watch saying changed when asked again")
	}
}

// Every durable change is covered by a sync of the memtable log that holds it, across the
// rotations badger makes as it writes: a sync that took its listing from before a rotation
// would sync the log badger left, and the change would not be durable.
func TestSyncCoversRotatedLogs(t *testing.T) {
	r := newTestStore(t)
	var mu sync.Mutex
	synced := map[string]bool{}
	r.db.fsync = func(path string) error { // the names only: the disk's part is not what is tested
		mu.Lock()
		defer mu.Unlock()
		synced[filepath.Base(path)] = true
		return nil
	}
	newestMem := func() string {
		t.Helper()
		names, err := listLogs(r.dir)
		if err != nil {
			t.Fatal(err)
		}
		newest := ""
		for _, name := range names {
			if filepath.Ext(name) == ".mem" && newestOf(name, newest) {
				newest = name
			}
		}
		return newest
	}
	body := bytes.Repeat([]byte("m"), valueThreshold-100) // kept in the memtable, not the value log
	last, rotations, listings := newestMem(), 0, r.db.listings
	for i := 0; rotations < 2; i++ {
		if i == 100000 {
			t.Fatalf("badger rotated its memtable log %d times in %d writes", rotations, i)
		}
		mu.Lock()
		clear(synced)
		mu.Unlock()
		if _, err := r.Write(vault.Key{Tier: "state", Key: fmt.Sprintf("k%06d", i)}, body, time.Now()); err != nil {
			t.Fatal(err)
		}
		// the log that holds the write: a rotation comes before a write, never after it
		now := newestMem()
		mu.Lock()
		covered := synced[now]
		mu.Unlock()
		if !covered {
			t.Fatalf("write %d returned before a sync of %s, the log that holds it (rotations so far: %d)", i, now, rotations)
		}
		if now != last {
			rotations, last = rotations+1, now
		}
	}
	if r.db.listings-listings > 20 {
		t.Errorf("%d listings of the directory for 2 rotations", r.db.listings-listings)
	}
}

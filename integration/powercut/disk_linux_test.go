package powercut

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// require fails the test in CI when a cut cannot be tested here, and skips it loudly elsewhere.
func require(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		msg := "POWER CUTS CANNOT BE TESTED HERE (" + err.Error() + "): this test did NOT run"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// open opens a volume on image in directories of the test's, closed when the test ends.
func open(t *testing.T, image []byte, mkfs bool) *Volume {
	t.Helper()
	v, err := OpenVolume(image, t.TempDir(), t.TempDir(), mkfs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// TestCutKeepsSyncedLosesCached: data the file system wrote to the disk but did not flush is
// in the image a cut leaves only when the cut keeps its pages; data flushed always is. The file
// is overwritten in place, so that the new content reaches the disk (sync_file_range) with no
// change to the file system's metadata, and no journal commit flushes it.
func TestCutKeepsSyncedLosesCached(t *testing.T) {
	require(t)
	image, err := Empty(64 << 20)
	if err != nil {
		t.Fatal(err)
	}
	v := open(t, image, true)
	d, mnt := v.Disk, v.Dir
	path := filepath.Join(mnt, "f")
	before, after := bytes.Repeat([]byte("A"), 3*PageSize), bytes.Repeat([]byte("B"), 3*PageSize)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(before); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mnt)
	synced := d.Syncs()
	if synced == 0 {
		t.Fatal("an fsync on the file system reached the disk as no sync")
	}
	if _, err := f.WriteAt(after, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER); err != nil {
		t.Fatal(err)
	}
	lost, lostN, _ := d.Cut(LoseAll)
	kept, keptN, _ := d.Cut(func(int64) bool { return true })
	if d.Syncs() != synced {
		t.Fatalf("the disk was synced %d times more during the test; the cut images are not what it means to test", d.Syncs()-synced)
	}
	if lostN != 0 || keptN < 3 {
		t.Fatalf("kept %d pages when losing all, %d when keeping all: want 0 and at least the file's 3", lostN, keptN)
	}
	f.Close()
	if err := v.Check(); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name  string
		image []byte
		want  []byte
	}{{"cache lost", lost, before}, {"cache kept", kept, after}} {
		v := open(t, c.image, false)
		got, err := os.ReadFile(filepath.Join(v.Dir, "f"))
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s: the file reads %.8q... (%d bytes), %v: want %.8q...", c.name, got, len(got), err, c.want)
		}
		if err := v.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

func syncDir(t *testing.T, dir string) {
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

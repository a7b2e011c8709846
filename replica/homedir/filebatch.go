package homedir

import (
	"os"
	"path/filepath"
	"sync"

	"kintfs/chain/atomicfile"
)

// FileBatch writes files under the home that appear and become durable together, for a pull
// that caches many epochs: each file is written to a temporary file beside its place, not
// synced; Commit makes the data of all of them durable at once (syncData), then renames each
// into place and syncs their directories. So a file is never seen half written, as with
// WriteFile, but the batch pays a few syncs instead of one a file. A crash before Commit
// leaves none of the batch's files in place, only temporary files under a .tmp- name that no
// reader takes for a cached epoch.
type FileBatch struct {
	home    Home
	mu      sync.Mutex
	pending []batchedFile
	dirs    map[string]bool // the directories made and given their modes by this batch
}

type batchedFile struct{ tmp, path string }

// NewBatch starts a batch of files under the home.
func (h Home) NewBatch() *FileBatch { return &FileBatch{home: h} }

// WriteFile writes data as the file elem once the batch commits. It may be called from
// several goroutines.
func (b *FileBatch) WriteFile(data []byte, elem ...string) error {
	path := b.home.Path(elem...)
	if err := b.ensure(filepath.Dir(filepath.Join(elem...))); err != nil {
		return err
	}
	// made with mode 0600, as every file of the home
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	b.mu.Lock()
	b.pending = append(b.pending, batchedFile{tmp: tmp.Name(), path: path})
	b.mu.Unlock()
	return nil
}

// ensure makes the directory sub of the home, with the home's modes, once per batch: a
// pull or a flush writes thousands of files into the same few directories.
func (b *FileBatch) ensure(sub string) error {
	b.mu.Lock()
	done := b.dirs[sub]
	b.mu.Unlock()
	if done {
		return nil
	}
	if _, err := b.home.Ensure(sub); err != nil {
		return err
	}
	b.mu.Lock()
	if b.dirs == nil {
		b.dirs = map[string]bool{}
	}
	b.dirs[sub] = true
	b.mu.Unlock()
	return nil
}

// Commit makes every file written so far durable and puts it in place; the batch can then
// take more. On an error the files not yet in place are removed.
func (b *FileBatch) Commit() error {
	b.mu.Lock()
	files := b.pending
	b.pending = nil
	b.mu.Unlock()
	if len(files) == 0 {
		return nil
	}
	tmps := make([]string, len(files))
	for i, f := range files {
		tmps[i] = f.tmp
	}
	if err := syncData(tmps); err != nil {
		b.remove(files)
		return err
	}
	return b.put(files, true)
}

// rename puts the files written so far in place without syncing them.
func (b *FileBatch) rename() error {
	b.mu.Lock()
	files := b.pending
	b.pending = nil
	b.mu.Unlock()
	return b.put(files, false)
}

// put renames files into place and, when sync, syncs their directories.
func (b *FileBatch) put(files []batchedFile, sync bool) error {
	placed := make([]string, len(files))
	for i, f := range files {
		if err := os.Rename(f.tmp, f.path); err != nil {
			b.remove(files[i:])
			return err
		}
		placed[i] = f.path
	}
	if !sync {
		return nil
	}
	return syncDirsOf(placed)
}

// syncDirsOf syncs each directory that holds one of paths, once: the names put there.
func syncDirsOf(paths []string) error {
	done := map[string]bool{}
	for _, p := range paths {
		if d := filepath.Dir(p); !done[d] {
			done[d] = true
			if err := atomicfile.Sync(d); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *FileBatch) remove(files []batchedFile) {
	for _, f := range files {
		os.Remove(f.tmp)
	}
}

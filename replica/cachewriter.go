package replica

import (
	"sync"

	"kintfs/replica/homedir"
)

// cacheWriters bounds the epoch cache files written at once during a pull.
const cacheWriters = 4

// cacheWriter writes epoch cache files beside a pull, several at once. The cache is only a
// cache (a blob is trusted after its keccak matches the chain's digest), so it may lag the
// apply; wait ends the pull's writes and returns the first error. The applied epochs' files go
// through batch (when not nil), which the pull commits before each sync of the store.
type cacheWriter struct {
	sem   chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error
	batch *homedir.FileBatch
}

func newCacheWriter(batch *homedir.FileBatch) *cacheWriter {
	return &cacheWriter{sem: make(chan struct{}, cacheWriters), batch: batch}
}

// do runs write in the background, waiting while cacheWriters writes are under way.
func (w *cacheWriter) do(write func() error) {
	w.sem <- struct{}{}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.sem }()
		if err := write(); err != nil {
			w.mu.Lock()
			if w.err == nil {
				w.err = err
			}
			w.mu.Unlock()
		}
	}()
}

// wait waits for every write and returns the first error.
func (w *cacheWriter) wait() error {
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// commit waits for every write, then makes the files of w's batch durable and puts them in
// place; what must not be durable before them is synced after it returns.
func (w *cacheWriter) commit() error {
	if err := w.wait(); err != nil {
		return err
	}
	return w.batch.Commit()
}

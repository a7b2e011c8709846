package replica

import (
	"errors"
	"sync"

	"kintfs/replica/store"
	"kintfs/seal"
)

// chunkFeed hands a push its chunks as the splitter closes them, so that the first epoch is
// sealed and sent while the rest of a large change set is still being measured.
type chunkFeed struct {
	ch   chan seal.Chunk
	stop chan struct{}
	err  error // the splitter's, set before ch is closed
	once sync.Once
	// release, when set, is called once the splitter has stopped
	release func()
}

var errFeedStopped = errors.New("push ended before its change set was split")

// feedSnapshot hands out a snapshot, a push's one chunk.
func feedSnapshot(snapshot seal.Chunk) *chunkFeed {
	f := &chunkFeed{ch: make(chan seal.Chunk, 1), stop: make(chan struct{})}
	f.ch <- snapshot
	close(f.ch)
	return f
}

// feedChunks splits the rows and deletions of rows in the background, cut to fit bucket (0:
// the largest epoch) with headroom for the rest of the plaintext, reading each row's body only
// as the splitter reaches it; close ends rows.
func feedChunks(rows *store.PushRows, bucket, headroom int) *chunkFeed {
	f := &chunkFeed{ch: make(chan seal.Chunk, 2), stop: make(chan struct{}), release: rows.Close}
	go func() {
		defer close(f.ch)
		f.err = split(rows, seal.NewChunker(bucket, headroom, func(c seal.Chunk) error {
			select {
			case f.ch <- c:
				return nil
			case <-f.stop:
				return errFeedStopped
			}
		}))
	}()
	return f
}

func split(rows *store.PushRows, k *seal.Chunker) error {
	for i := range rows.Dels {
		if err := k.AddDeleted(&rows.Dels[i]); err != nil {
			return err
		}
	}
	for i := range rows.Rows {
		row, err := rows.Row(i)
		if err != nil {
			return err
		}
		if err := k.AddRow(&row); err != nil {
			return err
		}
	}
	return k.Close()
}

// next is the next chunk; at the end ok is false, with the splitter's error if it failed.
func (f *chunkFeed) next() (c seal.Chunk, ok bool, err error) {
	if c, ok = <-f.ch; !ok {
		return c, false, f.err
	}
	return c, true, nil
}

// close stops the splitter and waits until it has; it may be called more than once.
func (f *chunkFeed) close() {
	f.once.Do(func() { close(f.stop) })
	for range f.ch {
	}
	if f.release != nil {
		f.release()
	}
}

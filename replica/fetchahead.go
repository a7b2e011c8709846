package replica

import (
	"context"
	"fmt"
	"sync"

	"kintfs/chain"
)

// fetchAheadDepth bounds the calldata batches a walk has in flight while it goes on
// discovering older epochs.
const fetchAheadDepth = 3

// fetchAhead fetches the blobs of walked epochs in the background, a batch at a time, while
// the walk goes on: the network waits of discovery and of calldata overlap. Results are kept
// by the index of the epoch in the walk's list (which grows meanwhile) and put in place by
// finish.
type fetchAhead struct {
	r   *Replica
	ctx context.Context
	sem chan struct{}
	wg  sync.WaitGroup
	cw  *cacheWriter // the fetched blobs, cached beside the walk

	mu        sync.Mutex
	blobs     map[int][]byte
	snap      int // the lowest index whose blob is a snapshot; -1 for none yet
	err       error
	fetched   int
	fromCache int
}

func (r *Replica) newFetchAhead(ctx context.Context) *fetchAhead {
	return &fetchAhead{r: r, ctx: ctx, sem: make(chan struct{}, fetchAheadDepth), cw: newCacheWriter(nil), blobs: map[int][]byte{}, snap: -1}
}

// submit fetches the blobs of list[from:to] in the background; it waits while fetchAheadDepth
// batches are in flight.
func (f *fetchAhead) submit(list []walked, from, to int) {
	if from >= to {
		return
	}
	evs := make([]*chain.EpochEvent, 0, to-from)
	for i := from; i < to; i++ {
		evs = append(evs, list[i].ev)
	}
	select {
	case f.sem <- struct{}{}:
	case <-f.ctx.Done():
		f.fail(f.ctx.Err())
		return
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer func() { <-f.sem }()
		f.fetch(from, evs)
	}()
}

// fetch is one batch: from the cache when the blob's keccak matches the event, else from
// the push calldata, cached as it arrives.
func (f *fetchAhead) fetch(from int, evs []*chain.EpochEvent) {
	got := make([][]byte, len(evs))
	var need []*chain.EpochEvent
	var idx []int
	cached := 0
	for i, ev := range evs {
		if b, ok := f.r.cache.Blob(ev.Seq, ev.Digest); ok {
			got[i] = b
			cached++
			continue
		}
		need = append(need, ev)
		idx = append(idx, i)
	}
	if len(need) > 0 {
		blobs, err := f.r.Client().FetchBlobs(f.ctx, need)
		if err != nil {
			f.fail(err)
			return
		}
		trackerOf(f.ctx).fetched(len(need), blobBytes(blobs))
		for j, b := range blobs {
			got[idx[j]] = b
			seq := need[j].Seq
			f.cw.do(func() error {
				if err := f.r.cache.PutBlob(seq, b); err != nil {
					return fmt.Errorf("cache epoch %d: %w", seq, err)
				}
				return nil
			})
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetched += len(need)
	f.fromCache += cached
	for i, b := range got {
		f.blobs[from+i] = b
		if isSnapshotBlob(b) && (f.snap < 0 || from+i < f.snap) {
			f.snap = from + i
		}
	}
}

func (f *fetchAhead) fail(err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

// state is what the finished batches found so far: the first error, and the lowest index of
// a snapshot (-1: none).
func (f *fetchAhead) state() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap, f.err
}

// finish waits for every batch, puts the blobs in list and counts them in rep. It returns the
// index of the first snapshot (-1 when none).
func (f *fetchAhead) finish(list []walked, rep *PullReport) (int, error) {
	f.wg.Wait()
	f.fail(f.cw.wait())
	f.mu.Lock()
	defer f.mu.Unlock()
	rep.Fetched += f.fetched
	rep.FromCache += f.fromCache
	if f.err != nil {
		return -1, f.err
	}
	for i := range list {
		if b, ok := f.blobs[i]; ok {
			list[i].blob = b
		}
	}
	return f.snap, nil
}

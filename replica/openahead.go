package replica

import (
	"runtime"
	"sync"

	"kintfs/seal"
)

// openAheadDepth bounds how many walked epochs are opened ahead of the apply: each is held
// decrypted and decoded until the apply takes it.
const openAheadDepth = 16

// openAhead decrypts, inflates and checks (seal.Open) the walked epochs on other cores while
// the apply goes on, oldest first, so that the apply, which stays in order on one goroutine,
// only waits for an epoch when it outruns them. It checks nothing less: an epoch opened ahead
// went through the same seal.Open, and the apply still checks the digest chain (the walk did)
// and the running rows_root. An epoch opened under a data key the apply has since left
// (adoptKey), or that failed to open, is opened again in the apply's turn, which gives the
// error as before.
type openAhead struct {
	r     *Replica
	dek   [32]byte // the data key when it started: the workers never read the replica's
	list  []walked
	jobs  chan openJob
	res   []chan openedEpoch // by index in list, the apply's alone; nil until submitted
	next  int                // the next index to submit (they go down: the list is newest first)
	wg    sync.WaitGroup
	close sync.Once
}

// openJob is one epoch to open, and where its result goes.
type openJob struct {
	i   int
	res chan<- openedEpoch
}

type openedEpoch struct {
	o   *seal.Opened
	dek [32]byte
	err error
}

// startOpenAhead opens the epochs of list (newest first) above mirror, oldest first.
func (r *Replica) startOpenAhead(list []walked, mirror uint64) *openAhead {
	a := &openAhead{r: r, dek: r.opt.DEK, list: list, jobs: make(chan openJob, openAheadDepth+1), res: make([]chan openedEpoch, len(list)), next: len(list) - 1}
	for a.next >= 0 && list[a.next].ev.Seq <= mirror {
		a.next--
	}
	workers := min(runtime.NumCPU(), openAheadDepth)
	for range workers {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for j := range a.jobs {
				j.res <- a.open(j.i)
			}
		}()
	}
	return a
}

func (a *openAhead) open(i int) openedEpoch {
	w := a.list[i]
	o, err := seal.Open(w.blob, a.dek, a.r.epochContext(w.ev.Seq, w.ev.Prev))
	return openedEpoch{o: o, dek: a.dek, err: err}
}

// take is epoch i opened under the data key the replica holds now. Only the apply's goroutine
// calls it (it also changes the data key, in adoptKey, and only between takes).
func (a *openAhead) take(i int) (*seal.Opened, error) {
	// keep the openAheadDepth epochs from i on submitted; those past i (a snapshot stepped
	// over them) are left out
	for a.next >= 0 && a.next > i-openAheadDepth {
		if a.next <= i {
			ch := make(chan openedEpoch, 1)
			a.res[a.next] = ch
			a.jobs <- openJob{i: a.next, res: ch}
		}
		a.next--
	}
	if ch := a.res[i]; ch != nil {
		a.res[i] = nil
		if got := <-ch; got.err == nil && got.dek == a.r.opt.DEK {
			return got.o, nil
		}
	}
	w := a.list[i]
	return seal.Open(w.blob, a.r.opt.DEK, a.r.epochContext(w.ev.Seq, w.ev.Prev))
}

// stop ends the workers once the epochs submitted are opened; results not taken are dropped.
func (a *openAhead) stop() {
	a.close.Do(func() { close(a.jobs) })
	a.wg.Wait()
}

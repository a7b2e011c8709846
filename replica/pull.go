package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
	"kintfs/replica/homedir"
	"kintfs/replica/store"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// PullReport says what a pull did.
type PullReport struct {
	Head      vault.Head       `json:"head"`
	Mirror    vault.Head       `json:"mirror"`
	Walked    int              `json:"walked"`
	Fetched   int              `json:"fetched"`
	FromCache int              `json:"from_cache"`
	Applied   int              `json:"applied"`
	Recorded  int              `json:"recorded"` // epochs under a snapshot whose history pull --full recorded
	Changed   int              `json:"changed"`
	Skipped   []vault.Gap      `json:"skipped,omitempty"`
	Gap       *vault.Gap       `json:"gap,omitempty"`
	Conflicts []vault.Conflict `json:"conflicts,omitempty"`
	RPCCalls  uint64           `json:"rpc_calls"`   // round trips to the RPC (a batch is one)
	Retries   uint64           `json:"rpc_retries"` // attempts repeated after a transport failure
	// FromSecondRPC counts the epochs whose calldata the RPC answered null for (a pruned
	// node) and the second RPC served
	FromSecondRPC uint64 `json:"from_second_rpc"`
}

// The walk fetches blobs in batches that grow from fetchFirst to fetchMax events: the first
// batch is small, so that a restore from a snapshot near the head fetches little beyond it.
const (
	fetchFirst = 4
	fetchMax   = 100
)

type walked struct {
	ev   *chain.EpochEvent
	blob []byte
	time uint64 // its block's timestamp, when read (0: not yet)
}

// stampTimes reads, in batches, the block timestamps of the walked epochs above seq, so that
// each epoch record carries its time from the moment it is applied and @<time> never sees
// an applied epoch without one.
func (r *Replica) stampTimes(ctx context.Context, list []walked, above uint64) error {
	var blocks []uint64
	for _, w := range list {
		if w.ev.Seq > above {
			blocks = append(blocks, w.ev.Block)
		}
	}
	if len(blocks) == 0 {
		return nil
	}
	times, err := r.Client().BlockTimes(ctx, blocks)
	if err != nil {
		return fmt.Errorf("read block times: %w", err)
	}
	for i := range list {
		list[i].time = times[list[i].ev.Block]
	}
	return nil
}

// Pull brings the mirror up to the chain head.
func (r *Replica) Pull(ctx context.Context, full bool) (*PullReport, error) {
	r.pushMu.Lock()
	defer r.pushMu.Unlock()
	ctx = withTracker(ctx, newTracker(ctx, "pull", 0))
	c, err := r.connect(ctx)
	if err != nil {
		r.status.notePull(nil, err)
		return nil, err
	}
	before := c.Stats()
	if err := r.refetchMissing(ctx, c); err != nil {
		r.status.notePull(nil, err)
		return nil, err
	}
	rep, err := r.pull(ctx, c, full)
	if serr := r.store.EndSealing(); err == nil && serr != nil {
		return rep, serr
	}
	if rep != nil {
		after := c.Stats()
		rep.RPCCalls, rep.Retries = after.Calls-before.Calls, after.Retries-before.Retries
		rep.FromSecondRPC = after.FromSecondary - before.FromSecondary
	}
	if _, perr := r.store.PruneConflicts(); err == nil && perr != nil {
		err = perr
	}
	r.status.notePull(rep, err)
	return rep, err
}

// pull brings the mirror up to the head. full walks every epoch on a machine that has none
// yet; on one that has, it pulls as usual and then records the history of the epochs an
// earlier pull stepped over.
func (r *Replica) pull(ctx context.Context, c Chain, full bool) (*PullReport, error) {
	mirror, err := r.MirrorHead()
	if err != nil {
		return nil, err
	}
	rep, err := r.pullMirror(ctx, c, full && mirror.Seq == 0)
	if err == nil && full {
		var br *BackfillReport
		br, err = r.runBackfill(ctx, BackfillOptions{})
		rep.Recorded, rep.Skipped = br.Recorded, append(rep.Skipped, br.Skipped...)
	}
	if terr := r.recordBlockTimes(ctx); err == nil && terr != nil {
		err = fmt.Errorf("record block times: %w", terr)
	}
	return rep, err
}

func (r *Replica) pullMirror(ctx context.Context, c Chain, full bool) (*PullReport, error) {
	if err := r.recoverPending(ctx); err != nil {
		return nil, err
	}
	ch, err := c.Head(ctx, r.vault.Owner, r.vault.Space)
	if err != nil {
		return nil, fmt.Errorf("read head: %w", err)
	}
	head := vault.Head{Seq: ch.Seq, Digest: ch.Digest, Block: ch.Block}
	rep := &PullReport{Head: head}
	if err := r.checkFresh(ctx, head); err != nil {
		return rep, err
	}
	mirror, err := r.MirrorHead()
	if err != nil {
		return rep, err
	}
	rep.Mirror = mirror
	if head.Seq == mirror.Seq && head.Digest == mirror.Digest && !full {
		return rep, nil
	}
	if head.Seq == mirror.Seq && head.Digest != mirror.Digest {
		return rep, fmt.Errorf("%w: the chain has digest %s at seq %d, this machine applied %s", ErrFork, short(head.Digest), head.Seq, short(mirror.Digest))
	}
	t := trackerOf(ctx)
	t.setTotal(int(head.Seq - mirror.Seq))
	list, err := r.walk(ctx, head, mirror, full, full, rep)
	if err == nil {
		err = r.stampTimes(ctx, list, mirror.Seq)
	}
	if err != nil {
		return rep, err
	}
	t.setTotal(toApply(list, mirror))
	err = r.applyWalk(list, mirror, rep, t)
	if n := len(list); err != nil && !full && rep.Gap != nil && rep.Gap.Seq == list[n-1].ev.Seq && rep.Gap.Seq > mirror.Seq+1 {
		// the walk stopped at an epoch that claims to be a snapshot, and it does not apply:
		// the epochs under it still do
		r.warnf("pull: epoch %d claims to be a snapshot but cannot be applied (%s); walking the full history instead", rep.Gap.Seq, rep.Gap.Reason)
		if list, err = r.walk(ctx, head, mirror, false, true, rep); err == nil {
			err = r.stampTimes(ctx, list, mirror.Seq)
		}
		if err != nil {
			return rep, err
		}
		rep.Gap = nil
		err = r.applyWalk(list, mirror, rep, t)
	}
	if m, merr := r.MirrorHead(); merr == nil {
		rep.Mirror = m
	}
	return rep, err
}

// checkFresh refuses a head older than the watermark, or the same seq with another digest.
// With no watermark yet (a cold start) a second opinion on the head is asked for first.
func (r *Replica) checkFresh(ctx context.Context, head vault.Head) error {
	seen, err := r.store.Seen()
	if err != nil {
		return err
	}
	if seen.Seq == 0 && head.Seq > 0 && r.opt.ColdStart != nil {
		if err := r.opt.ColdStart(ctx, head); err != nil {
			return err
		}
	}
	if head.Seq < seen.Seq {
		return fmt.Errorf("%w: the RPC says the head is seq %d, but this machine has already seen seq %d", ErrStaleRPC, head.Seq, seen.Seq)
	}
	if head.Seq == seen.Seq && seen.Seq > 0 && head.Digest != seen.Digest {
		return fmt.Errorf("%w: the RPC says seq %d has digest %s, but this machine saw %s", ErrStaleRPC, head.Seq, short(head.Digest), short(seen.Digest))
	}
	if head.Seq > seen.Seq {
		return r.store.SetSeen(head)
	}
	return nil
}

// walk reads Epoch events back from head through prevBlock, found by ranged log queries (each
// checked as it is used, with the exact block asked where a range does not answer for it), and
// fetches their blobs in batches. It stops at the mirror (unless full), at the first epoch, or
// (unless pastSnapshots) at the newest snapshot. The result is newest first.
func (r *Replica) walk(ctx context.Context, head, mirror vault.Head, full, pastSnapshots bool, rep *PullReport) ([]walked, error) {
	var floor uint64
	if !full && mirror.Seq > 0 {
		floor = mirror.Block
	}
	d := r.Client().NewDiscovery(ctx, r.vault.Owner, r.vault.Space, floor)
	defer d.Close()
	// after the first batch, calldata is fetched while the walk goes on
	fctx, cancelFetch := context.WithCancel(ctx)
	w := &walkState{batch: fetchFirst, fa: r.newFetchAhead(fctx), rep: rep, pastSnapshots: pastSnapshots}
	defer func() { cancelFetch(); w.fa.wg.Wait() }()
	block, seq, want := head.Block, head.Seq, head.Digest
	for seq >= 1 {
		if !full && seq <= mirror.Seq {
			break
		}
		ev, err := r.walkEvent(ctx, d, w.list, block, seq, want, mirror)
		if err != nil {
			return nil, err
		}
		w.list = append(w.list, walked{ev: ev})
		if r.walkEnds(ev, seq, pastSnapshots) {
			break
		}
		block, seq, want = ev.PrevBlock, seq-1, ev.Prev
		if len(w.list)-w.fetched < w.batch {
			continue
		}
		done, more, err := r.fetchBatch(ctx, w)
		if err != nil {
			return nil, err
		}
		if done != nil {
			return done, nil
		}
		if !more {
			break
		}
	}
	return r.endWalk(w, mirror, full)
}

// walkState is a walk under way.
type walkState struct {
	list          []walked // newest first
	fetched       int      // list[:fetched] have blobs, or are being fetched
	batch         int      // the size of the next batch to fetch
	fa            *fetchAhead
	rep           *PullReport
	pastSnapshots bool
}

// walkEvent reads the event of seq and checks it against the event after it (the last of
// list) and against the mirror.
func (r *Replica) walkEvent(ctx context.Context, d chain.EventFinder, list []walked, block, seq uint64, want common.Hash, mirror vault.Head) (*chain.EpochEvent, error) {
	ev, err := d.Next(ctx, block, seq, want)
	if err != nil {
		return nil, err
	}
	if n := len(list); n > 0 && list[n-1].ev.Prev != ev.Digest {
		return nil, fmt.Errorf("%w: epoch %d names prev %s but epoch %d has digest %s", ErrStaleRPC, seq+1, short(list[n-1].ev.Prev), seq, short(ev.Digest))
	}
	if seq == mirror.Seq && ev.Digest != mirror.Digest && mirror.Seq > 0 {
		return nil, fmt.Errorf("%w: the chain has digest %s at seq %d, this machine applied %s", ErrFork, short(ev.Digest), seq, short(mirror.Digest))
	}
	return ev, nil
}

// walkEnds reports whether nothing under ev is needed: it is the first epoch, or (unless
// pastSnapshots) a snapshot already in the cache.
func (r *Replica) walkEnds(ev *chain.EpochEvent, seq uint64, pastSnapshots bool) bool {
	if ev.PrevBlock == 0 || seq == 1 {
		return true
	}
	if !pastSnapshots {
		if b, ok := r.cache.Blob(seq, ev.Digest); ok && isSnapshotBlob(b) {
			return true // a snapshot already here (init fetched it): nothing under it is needed
		}
	}
	return false
}

// fetchBatch fetches the batch of events the walk just filled: the first, small one at once
// (a snapshot near the head ends the walk there, and done is the list cut after it), later
// ones ahead of the walk. more is false when the walk can stop.
func (r *Replica) fetchBatch(ctx context.Context, w *walkState) (done []walked, more bool, err error) {
	if w.fetched == 0 {
		stop, err := r.fetch(ctx, w.list, w.fetched, w.rep)
		if err != nil {
			return nil, false, err
		}
		if stop >= 0 && !w.pastSnapshots {
			w.rep.Walked = stop + 1
			return w.list[:stop+1], false, nil
		}
	} else {
		w.fa.submit(w.list, w.fetched, len(w.list))
	}
	w.fetched = len(w.list)
	w.batch = min(2*w.batch, fetchMax)
	if stop, err := w.fa.state(); err != nil || (stop >= 0 && !w.pastSnapshots) {
		return nil, false, nil
	}
	return nil, true, nil
}

// endWalk fetches what the walk has not, cuts the list after the newest snapshot (unless
// pastSnapshots) and checks that its oldest epoch follows the mirror.
func (r *Replica) endWalk(w *walkState, mirror vault.Head, full bool) ([]walked, error) {
	list := w.list
	w.fa.submit(list, w.fetched, len(list))
	stop, err := w.fa.finish(list, w.rep)
	if err != nil {
		return nil, err
	}
	if stop >= 0 && !w.pastSnapshots {
		list = list[:stop+1]
	}
	w.rep.Walked = len(list)
	if n := len(list); n > 0 && !full && mirror.Seq > 0 {
		if oldest := list[n-1]; oldest.ev.Seq == mirror.Seq+1 && oldest.ev.Prev != mirror.Digest {
			return nil, fmt.Errorf("%w: epoch %d names prev %s, this machine applied %s at seq %d", ErrFork, oldest.ev.Seq, short(oldest.ev.Prev), short(mirror.Digest), mirror.Seq)
		}
	}
	return list, nil
}

// fetch fills the blobs of list[from:], from the cache when its keccak matches the event and
// otherwise from the push calldata, and returns the index of the first snapshot among them
// (-1 when none).
func (r *Replica) fetch(ctx context.Context, list []walked, from int, rep *PullReport) (int, error) {
	var need []*chain.EpochEvent
	var idx []int
	for i := from; i < len(list); i++ {
		if b, ok := r.cache.Blob(list[i].ev.Seq, list[i].ev.Digest); ok {
			list[i].blob = b
			rep.FromCache++
			continue
		}
		need = append(need, list[i].ev)
		idx = append(idx, i)
	}
	if len(need) > 0 {
		blobs, err := r.Client().FetchBlobs(ctx, need)
		if err != nil {
			return -1, err
		}
		trackerOf(ctx).fetched(len(need), blobBytes(blobs))
		for j, b := range blobs {
			list[idx[j]].blob = b
			if err := r.cache.PutBlob(need[j].Seq, b); err != nil {
				return -1, fmt.Errorf("cache epoch %d: %w", need[j].Seq, err)
			}
		}
		rep.Fetched += len(need)
	}
	for i := from; i < len(list); i++ {
		if h, _, err := seal.ParseHeader(list[i].blob); err == nil && h.IsSnapshot() {
			return i, nil
		}
	}
	return -1, nil
}

// contradiction marks an epoch that opened but disagrees with the chain: never walked past.
func contradiction(err error) bool {
	return errors.Is(err, seal.ErrSeqMismatch) || errors.Is(err, seal.ErrSpaceMismatch) ||
		errors.Is(err, seal.ErrPrevMismatch) || errors.Is(err, seal.ErrRootMismatch) || errors.Is(err, store.ErrRootMismatch)
}

// applyWalk opens and applies the walked epochs oldest first. An epoch that cannot be opened
// is skipped when a later snapshot in the walk opens; otherwise the pull stops there. The
// opened epochs are written to the epoch cache beside the apply.
//
// The epochs are committed without a sync each and made durable together: every
// pullSyncEvery epochs and before the pull returns (on an error too), the cache files written
// so far are waited for and committed (made durable at once, then put in place: see
// homedir.FileBatch), and then one sync of the store covers every epoch applied before it. A
// crash in between leaves the store at the boundary of an epoch applied before it, never
// ahead of the cache files made durable before its sync; the next pull fetches the rest.
//
// The blobs the walk fetched are made durable before the first apply (one sync, and only when
// it fetched any): the kernel may write the store's pages back before any sync of the pull's,
// and an apply a power cut keeps must find its epoch's blob, from which the next open puts
// back the records and bodies the cut took (store.Repair).
func (r *Replica) applyWalk(list []walked, mirror vault.Head, rep *PullReport, t *tracker) error {
	if rep.Fetched > 0 {
		var seqs []uint64
		for _, w := range list {
			if w.ev.Seq > mirror.Seq {
				seqs = append(seqs, w.ev.Seq)
			}
		}
		if err := r.cache.SyncBlobs(seqs); err != nil {
			return fmt.Errorf("sync the fetched epochs: %w", err)
		}
	}
	cw := newCacheWriter(r.opt.Home.NewBatch())
	err := r.applyWalkCaching(list, mirror, rep, cw, t)
	if werr := r.syncApplied(cw); err == nil && werr != nil {
		err = werr
	}
	return err
}

// beforeApply, when not nil, is called before a pulled epoch is applied (for the test that
// looks at what is durable then).
var beforeApply func(seq uint64)

// pullSyncEvery is how many epochs a pull applies between two syncs of the store (a
// variable for the test that kills a pull between two).
var pullSyncEvery = 64

// syncApplied waits for the cache files written so far, then makes every epoch applied
// before it durable with one sync of the store.
func (r *Replica) syncApplied(cw *cacheWriter) error {
	if err := cw.commit(); err != nil {
		return fmt.Errorf("cache the applied epochs: %w", err)
	}
	if err := r.store.Sync(); err != nil {
		return fmt.Errorf("sync the applied epochs: %w", err)
	}
	return nil
}

// toApply is the number of walked epochs above the mirror.
func toApply(list []walked, mirror vault.Head) int {
	n := 0
	for _, w := range list {
		if w.ev.Seq > mirror.Seq {
			n++
		}
	}
	return n
}

func (r *Replica) applyWalkCaching(list []walked, mirror vault.Head, rep *PullReport, cw *cacheWriter, t *tracker) error {
	gaps, err := r.store.Gaps()
	if err != nil {
		return err
	}
	ahead := r.startOpenAhead(list, mirror.Seq)
	defer ahead.stop()
	unsynced := 0
	for i := len(list) - 1; i >= 0; i-- {
		w := list[i]
		if w.ev.Seq <= mirror.Seq {
			continue // walked with --full for the cache; already applied
		}
		if unsynced == pullSyncEvery {
			if err := r.syncApplied(cw); err != nil {
				return err
			}
			unsynced = 0
		}
		unsynced++
		err := r.applyOpened(w, rep, cw, func() (*seal.Opened, error) { return ahead.take(i) })
		if err == nil {
			t.landed(w.ev.Seq, int64(len(w.blob)), fmt.Sprintf("epoch %d applied (block %d)", w.ev.Seq, w.ev.Block))
			mirror.Seq = w.ev.Seq
			continue
		}
		gap := vault.Gap{Seq: w.ev.Seq, Block: w.ev.Block, Reason: err.Error()}
		if !contradiction(err) {
			for j := i - 1; j >= 0; j-- {
				h, _, perr := seal.ParseHeader(list[j].blob)
				if perr != nil || !h.IsSnapshot() {
					continue
				}
				if serr := r.applyOpened(list[j], rep, cw, func() (*seal.Opened, error) { return ahead.take(j) }); serr == nil {
					gap.SupersededBy = list[j].ev.Seq
					rep.Skipped = append(rep.Skipped, gap)
					r.warnf("pull: epoch %d cannot be applied (%s); superseded by snapshot %d", gap.Seq, gap.Reason, gap.SupersededBy)
					mirror.Seq = list[j].ev.Seq
					i = j
					break
				}
			}
			if gap.SupersededBy != 0 {
				continue
			}
		}
		rep.Gap = &gap
		r.warnf("pull: stopped at epoch %d: %s", gap.Seq, gap.Reason)
		gaps = append(openGaps(gaps, 0, gap.Seq), gap)
		if err := r.syncApplied(cw); err != nil { // the cache first: SetGaps syncs the store
			return err
		}
		if err := r.store.SetGaps(gaps); err != nil {
			return err
		}
		return fmt.Errorf("%w: epoch %d: %s", ErrGapOpen, gap.Seq, gap.Reason)
	}
	if err := r.syncApplied(cw); err != nil { // the cache first: SetGaps syncs the store
		return err
	}
	return r.store.SetGaps(openGaps(gaps, mirror.Seq, 0))
}

// openGaps keeps the gaps a later applied epoch has not stepped over, less the one at seq
// replacing (which is about to be recorded again).
func openGaps(gaps []vault.Gap, applied, replacing uint64) []vault.Gap {
	var out []vault.Gap
	for _, g := range gaps {
		if g.Seq > applied && g.SupersededBy == 0 && g.Seq != replacing {
			out = append(out, g)
		}
	}
	return out
}

// adoptKey takes the data key of an epoch sealed under another one than this machine holds
// (another machine rotated it, or created the vault first), when the cached key-encryption key
// opens one of its wraps.
func (r *Replica) adoptKey(blob []byte, seq uint64) {
	h, _, err := seal.ParseHeader(blob)
	if err != nil || h.DekID == seal.DEKID(r.opt.DEK) {
		return
	}
	kek, err := r.opt.Home.LoadKEK(r.vault.Space)
	if err != nil {
		return
	}
	dek, err := seal.DEKFromHeader(h, kek)
	if err != nil {
		return
	}
	if err := r.opt.Home.SaveDEK(r.vault.Space, dek); err != nil {
		r.warnf("pull: cache the data key of epoch %d: %v", seq, err)
		return
	}
	r.opt.DEK = dek
	r.vault.SetWraps(h.Wraps)
	r.vault.DekID = fmt.Sprintf("%x", h.DekID[:])
	if err := r.opt.Home.SaveVault(r.vault); err != nil {
		r.warnf("pull: save vault.json: %v", err)
	}
	r.logf("pull: epoch %d is sealed under data key %s; adopted it from the epoch's wraps", seq, r.vault.DekID)
}

func (r *Replica) applyOne(w walked, rep *PullReport) error {
	return r.applyOneCaching(w, rep, nil)
}

// applyOneCaching is applyOne with the opened epoch cached through cw (nil: at once).
func (r *Replica) applyOneCaching(w walked, rep *PullReport, cw *cacheWriter) error {
	return r.applyOpened(w, rep, cw, func() (*seal.Opened, error) {
		return seal.Open(w.blob, r.opt.DEK, r.epochContext(w.ev.Seq, w.ev.Prev))
	})
}

// applyOpened is applyOneCaching with the epoch opened by open (under the data key held once
// adoptKey has run).
func (r *Replica) applyOpened(w walked, rep *PullReport, cw *cacheWriter, open func() (*seal.Opened, error)) error {
	ev := w.ev
	r.adoptKey(w.blob, ev.Seq)
	opened, err := open()
	if err != nil {
		return err
	}
	info := epochInfoOf(ev, opened)
	info.Time = w.time
	if beforeApply != nil {
		beforeApply(ev.Seq)
	}
	// with cw (a pull's walk) the epoch is made durable by the walk's next syncApplied
	changed, conflicts, err := r.store.ApplyEpoch(info, opened.Plaintext, store.ApplyOptions{NoSync: cw != nil})
	if err != nil {
		return err
	}
	cacheIt := func() error {
		put := r.cache.PutOpened
		if cw != nil && cw.batch != nil {
			put = func(m *homedir.CacheMeta, pt []byte) error { return r.cache.PutOpenedIn(cw.batch, m, pt) }
		}
		if err := put(cacheMeta(&info, ev.PrevBlock), opened.Raw); err != nil {
			return fmt.Errorf("cache epoch %d: %w", ev.Seq, err)
		}
		return nil
	}
	if cw != nil {
		cw.do(cacheIt)
	} else if err := cacheIt(); err != nil {
		return err
	}
	if cw != nil && cw.batch != nil {
		// raising the bucket syncs the store: the cache files of the epochs it covers first
		if cur, err := r.Bucket(); err == nil && info.Bucket > cur {
			if err := r.syncApplied(cw); err != nil {
				return err
			}
		}
	}
	if err := r.raiseBucket(info.Bucket); err != nil {
		return err
	}
	rep.Applied++
	rep.Changed += len(changed)
	rep.Conflicts = append(rep.Conflicts, conflicts...)
	for i := range conflicts {
		r.warnConflict(&conflicts[i])
	}
	return nil
}

// warnConflict logs a row both this machine and the chain changed, naming both files and
// how to resolve it.
func (r *Replica) warnConflict(c *vault.Conflict) {
	row, cp := ConflictPaths(c)
	if c.Copy == "" {
		r.warnf("conflict: %s was deleted here and changed by another machine in epoch %d: the chain's version stays", row, c.Seq)
		return
	}
	r.warnf("conflict: %s was changed here and by another machine (epoch %d): the chain's version stays in %s, yours is in %s; keep yours with mv %s over it, or drop it with rm (then kintfs conflicts no longer lists it)",
		row, c.Seq, row, cp, cp)
}

// ConflictPaths are the paths, under the mountpoint, of a conflicting row and of the copy of
// this machine's version ("" for a deletion). Names are written as the mount lists them for
// the usual keys ('/' as %2F, '%' as %25).
func ConflictPaths(c *vault.Conflict) (row, copyPath string) {
	esc := strings.NewReplacer("%", "%25", "/", "%2F", "\x00", "%00")
	dir := c.Tier + "/"
	if c.Category != nil && c.Tier == seal.TierEntity {
		dir += esc.Replace(*c.Category) + "/"
	}
	name := esc.Replace(c.Key)
	if strings.HasPrefix(name, ".") {
		name = "%2E" + name[1:]
	}
	row = dir + name
	if c.Copy != "" {
		copyPath = dir + c.Copy
	}
	return row, copyPath
}

func (r *Replica) raiseBucket(b int) error {
	cur, err := r.Bucket()
	if err != nil {
		return err
	}
	if b > cur {
		return r.store.SetBucket(b)
	}
	return nil
}

func short(h common.Hash) string { return h.Hex()[:14] }

// blobBytes is the size of blobs in all.
func blobBytes(blobs [][]byte) int64 {
	var n int64
	for _, b := range blobs {
		n += int64(len(b))
	}
	return n
}

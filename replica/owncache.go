package replica

import (
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/replica/store"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// ownCacheEvery is how many of its epochs a push lands between two commits of their cache
// files (and clears of their journal entries).
const ownCacheEvery = 64

// ownCache writes the epoch cache files of a push's own epochs (the blob as sent, the
// plaintext and the metadata) beside the push, off the path from one epoch to the next: on
// some disks creating a file costs more than sealing and applying an epoch. An epoch's journal
// entry is cleared only once its files are durable, so a crash in between leaves the entry of
// an epoch the mirror holds, and the next push's recovery writes the files from the entry
// (recacheOwn). Every ownCacheEvery epochs the files written so far are made durable together
// and the entries of the epochs they complete are cleared in one synced commit, in the
// background while the push lands the next epochs, one such commit at a time, in order; when
// the push ends, the last of them is waited for and the rest committed.
type ownCache struct {
	r      *Replica
	cw     *cacheWriter
	landed []uint64   // epochs applied whose entries wait for their files
	newest vault.Head // the newest of them
	// the result of the commit under way in the background, nil when none is
	committing chan error
}

func (r *Replica) newOwnCache() *ownCache {
	return &ownCache{r: r, cw: newCacheWriter(r.opt.Home.NewBatch())}
}

// putBlob caches the blob of an epoch about to be sent.
func (o *ownCache) putBlob(seq uint64, blob []byte) {
	cw := o.cw
	cw.do(func() error { return o.r.cache.PutBlobIn(cw.batch, seq, blob) })
}

// putOpened caches an epoch that landed and notes that its entry waits for the files.
func (o *ownCache) putOpened(info *vault.EpochInfo, prevBlock uint64, plaintext []byte) {
	meta := cacheMeta(info, prevBlock)
	cw := o.cw
	cw.do(func() error { return o.r.cache.PutOpenedIn(cw.batch, meta, plaintext) })
	o.landed = append(o.landed, info.Seq)
	o.newest = vault.Head{Seq: info.Seq, Digest: info.Digest, Block: info.Block}
}

// commitIfDue starts a commit in the background once ownCacheEvery epochs wait, after the one
// before it ended; an error of that one is returned.
func (o *ownCache) commitIfDue() error {
	if len(o.landed) < ownCacheEvery {
		return nil
	}
	if err := o.wait(); err != nil {
		return err
	}
	cw, landed, newest := o.cw, o.landed, o.newest
	o.cw, o.landed = newCacheWriter(o.r.opt.Home.NewBatch()), nil
	o.committing = make(chan error, 1)
	go func(done chan<- error) { done <- o.r.commitOwn(cw, landed, newest) }(o.committing)
	return nil
}

// wait waits for the commit under way, if any, and returns its error.
func (o *ownCache) wait() error {
	if o.committing == nil {
		return nil
	}
	err := <-o.committing
	o.committing = nil
	return err
}

// commit waits for the commit under way, then commits what was written since.
func (o *ownCache) commit() error {
	err := o.wait()
	if cerr := o.r.commitOwn(o.cw, o.landed, o.newest); err == nil {
		err = cerr
	}
	o.landed = nil
	return err
}

// commitOwn makes the files written through cw durable, then clears the entries of landed,
// recording newest, the newest of them, as the chain head seen.
func (r *Replica) commitOwn(cw *cacheWriter, landed []uint64, newest vault.Head) error {
	if err := cw.commit(); err != nil {
		return fmt.Errorf("cache the pushed epochs: %w", err)
	}
	if len(landed) == 0 {
		return nil
	}
	return r.clearLanded(landed, newest)
}

// clearLanded clears the journal entries of epochs applied here as this machine's own, and
// records newest, the newest of them, as the chain head seen when it is newer than the one
// recorded, in one commit.
func (r *Replica) clearLanded(seqs []uint64, newest vault.Head) error {
	old, err := r.store.Seen()
	if err != nil {
		return err
	}
	var seen *vault.Head
	if newest.Seq > old.Seq {
		seen = &newest
	}
	return r.store.ClearPending(seqs, seen)
}

// recacheOwn writes the cache files of a journaled epoch from its entry (info is its record,
// prevBlock the block of the epoch before) unless they are in place: after a crash before a
// push made them durable, or for an epoch the recovery adopts. j is the entry opened
// (openJournaled), nil when the caller has not: then it is opened here, only when a file is
// missing.
func (r *Replica) recacheOwn(p *store.PendingPush, info *vault.EpochInfo, prevBlock uint64, j *openedEntry) error {
	if _, err := r.cache.Meta(p.Seq); err == nil {
		if _, ok := r.cache.Blob(p.Seq, p.Digest); ok {
			return nil
		}
	}
	if j == nil {
		var err error
		if j, err = r.openJournaled(p); err != nil {
			return err
		}
	}
	b := r.opt.Home.NewBatch()
	if j.blob != nil {
		if err := r.cache.PutBlobIn(b, p.Seq, j.blob); err != nil {
			return err
		}
	}
	if err := r.cache.PutOpenedIn(b, cacheMeta(info, prevBlock), j.raw); err != nil {
		return err
	}
	return b.Commit()
}

// openedEntry is a push journal entry's epoch opened: its blob, from the calldata of the entry's
// signed transaction (nil for an entry written before layout 7 whose calldata does not hash to
// its digest: it kept the plaintext), and its plaintext, as bytes and decoded.
type openedEntry struct {
	blob, raw []byte
	pt        *seal.Plaintext
}

// openJournaled decodes the transaction of the journaled epoch p and opens its blob with the
// vault's key, once for both the cache files and the apply of an adopted epoch.
func (r *Replica) openJournaled(p *store.PendingPush) (*openedEntry, error) {
	blob, err := journaledBlob(p)
	if err != nil && (!errors.Is(err, errJournaledBlob) || len(p.Plaintext) == 0) {
		return nil, err
	}
	raw, pt, err := r.plaintextOf(p, blob)
	if err != nil {
		return nil, err
	}
	return &openedEntry{blob: blob, raw: raw, pt: pt}, nil
}

// plaintextOf is the plaintext of the journaled epoch p: the one its entry kept (written before
// layout 7), else blob's, p's blob, opened with the vault's key.
func (r *Replica) plaintextOf(p *store.PendingPush, blob []byte) ([]byte, *seal.Plaintext, error) {
	if len(p.Plaintext) > 0 {
		pt, err := seal.DecodePlaintext(p.Plaintext)
		if err != nil {
			return nil, nil, fmt.Errorf("push journal entry %d: %w", p.Seq, err)
		}
		return p.Plaintext, pt, nil
	}
	o, err := seal.Open(blob, r.opt.DEK, r.epochContext(p.Seq, p.Prev))
	if err != nil {
		return nil, nil, fmt.Errorf("push journal entry %d: %w", p.Seq, err)
	}
	return o.Raw, o.Plaintext, nil
}

// errJournaledBlob: the calldata of a push journal entry's transaction does not hash to the
// entry's digest.
var errJournaledBlob = errors.New("the calldata of its transaction does not hash to its digest")

// journaledBlob is the blob of a push journal entry, from the calldata of its signed
// transaction, checked against the entry's digest.
func journaledBlob(p *store.PendingPush) ([]byte, error) {
	prep, err := prepared(p)
	if err != nil {
		return nil, err
	}
	_, _, _, blob, err := chain.DecodePushCalldata(prep.Tx.Data())
	if err != nil {
		return nil, fmt.Errorf("push journal entry %d: %w", p.Seq, err)
	}
	if crypto.Keccak256Hash(blob) != p.Digest {
		return nil, fmt.Errorf("push journal entry %d: %w", p.Seq, errJournaledBlob)
	}
	return blob, nil
}

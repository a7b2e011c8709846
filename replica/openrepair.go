package replica

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
	"kintfs/replica/store"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// openFetchTimeout bounds each fetch from the chain during an open, of one epoch or of all a
// repair wants at once: a start waits for it.
const openFetchTimeout = 20 * time.Second

// openSources gives the open after an unclean run the rows of the anchored epochs it needs
// to put back what a power cut took. An epoch the epoch cache lacks (a cache trimmed by hand
// or pulled by an earlier version, or the files of a push the cut took before they were
// durable) is taken from the push journal's entry when this machine pushed it, else fetched
// from the chain when the replica has a connection. Either is checked against the digest the
// state database recorded, then cached. Without them a lost mirror record stops the open.
type openSources struct {
	r              *Replica
	journal, chain int   // epochs taken from each
	chainErr       error // the first fetch that failed: the chain is not asked again in this open
}

func (o *openSources) rows(info *vault.EpochInfo, journaled *store.PendingPush) ([]seal.Row, error) {
	rows, err := o.r.anchoredRows(info, nil)
	if err == nil || o.r.opt.DEK == ([32]byte{}) {
		return rows, err
	}
	blob, jerr := journaledEpoch(journaled)
	switch {
	case jerr == nil:
		o.journal++
	case o.r.opt.Client == nil:
		return nil, fmt.Errorf("%w; %w, and this command is offline", err, jerr)
	case o.chainErr != nil:
		return nil, fmt.Errorf("%w; %w, and fetching an epoch from the chain failed: %w", err, jerr, o.chainErr)
	default:
		var blobs [][]byte
		if blobs, o.chainErr = o.fetch([]*chain.EpochEvent{o.r.epochEvent(info)}); o.chainErr != nil {
			return nil, fmt.Errorf("%w; %w, and fetching it from the chain failed: %w", err, jerr, o.chainErr)
		}
		blob = blobs[0]
		o.chain++
	}
	if err := o.r.cache.PutBlob(info.Seq, blob); err != nil {
		return nil, fmt.Errorf("cache epoch %d: %w", info.Seq, err)
	}
	return o.r.anchoredRows(info, nil)
}

// want fetches at once, when the replica has a connection, every epoch a repair is about to
// ask rows for that neither the cache nor the push journal holds, checked as a pull checks it,
// and caches it, where rows then finds it: a start after a cut that took records from many
// epochs waits for one batch of requests, not one request an epoch. A failed fetch is rows'
// to report, and the chain is not asked again in this open. A cached blob is only looked for
// here, not read: rows reads it and checks its digest, and fetches a damaged one alone.
func (o *openSources) want(infos []vault.EpochInfo, journaled []*store.PendingPush) {
	if o.r.opt.DEK == ([32]byte{}) || o.r.opt.Client == nil || o.chainErr != nil {
		return
	}
	var evs []*chain.EpochEvent
	for i := range infos {
		if o.r.cache.HasBlob(infos[i].Seq) || journaled[i] != nil {
			continue
		}
		evs = append(evs, o.r.epochEvent(&infos[i]))
	}
	if len(evs) == 0 {
		return
	}
	blobs, err := o.fetch(evs)
	if err != nil {
		o.chainErr = err
		return
	}
	for i, blob := range blobs {
		if err := o.r.cache.PutBlob(evs[i].Seq, blob); err != nil {
			return // rows finds the epoch missing and fetches it alone, saying why if that fails
		}
		o.chain++
	}
}

var errNotJournaled = errors.New("the push journal has no entry for it")

// journaledEpoch is the blob of the push journal entry p, which has the digest asked for.
func journaledEpoch(p *store.PendingPush) ([]byte, error) {
	if p == nil {
		return nil, errNotJournaled
	}
	return journaledBlob(p)
}

// fetch reads the blobs of the epochs evs name from their push transactions, checked as a
// pull checks them, within openFetchTimeout.
func (o *openSources) fetch(evs []*chain.EpochEvent) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openFetchTimeout)
	defer cancel()
	return o.r.opt.Client.FetchBlobs(ctx, evs)
}

// epochEvent is the Epoch event the state database's record of an anchored epoch stands for.
func (r *Replica) epochEvent(info *vault.EpochInfo) *chain.EpochEvent {
	return &chain.EpochEvent{Owner: r.vault.Owner, Space: r.vault.Space, Writer: info.Writer, Seq: info.Seq,
		Prev: info.Prev, Digest: info.Digest, Block: info.Block, TxHash: common.HexToHash(info.Tx)}
}

// report says where the epochs the open took from outside the cache came from.
func (o *openSources) report() {
	const lead = "a run ended without closing the state database"
	if o.journal > 0 {
		o.r.logf("%s: %d epochs it wanted were taken from the push journal", lead, o.journal)
	}
	if o.chain > 0 {
		o.r.logf("%s: %d epochs it wanted were fetched from the chain", lead, o.chain)
	}
	if o.chainErr != nil {
		o.r.warnf("%s: fetching the epochs it wanted from the chain failed (%v); the next pull tries again", lead, o.chainErr)
	}
}

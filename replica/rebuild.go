package replica

import (
	"fmt"
	"kintfs/replica/homedir"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// RebuildFromCache rebuilds a lost state database from the epoch cache, without RPC: every
// cached blob is checked against its recorded digest, opened, and applied in order, from the
// newest snapshot whose chain of epochs after it is complete. It returns how many epochs it
// applied; a database that already has a mirror is left alone.
func (r *Replica) RebuildFromCache() (int, error) {
	head, err := r.MirrorHead()
	if err != nil || head.Seq > 0 {
		return 0, err
	}
	seqs, err := r.cache.Seqs()
	if err != nil || len(seqs) == 0 {
		return 0, err
	}
	type cached struct {
		meta *homedir.CacheMeta
		blob []byte
	}
	var run []cached // the contiguous run of epochs ending at the newest cached one
	for i := len(seqs) - 1; i >= 0; i-- {
		meta, err := r.cache.Meta(seqs[i])
		if err != nil {
			return 0, err
		}
		blob, ok := r.cache.Blob(meta.Seq, common.HexToHash(meta.Digest))
		if !ok {
			break
		}
		if n := len(run); n > 0 && (run[n-1].meta.Seq != meta.Seq+1 || run[n-1].meta.Prev != meta.Digest) {
			break
		}
		run = append(run, cached{meta, blob})
		if h, _, err := seal.ParseHeader(blob); err == nil && h.IsSnapshot() {
			break
		}
		if meta.Seq == 1 {
			break
		}
	}
	if n := len(run); n == 0 || (run[n-1].meta.Seq != 1 && !isSnapshotBlob(run[n-1].blob)) {
		return 0, nil // no complete start in the cache: a pull will fetch it
	}
	applied := 0
	for i := len(run) - 1; i >= 0; i-- {
		m := run[i].meta
		w := walked{blob: run[i].blob, ev: eventFromMeta(m)}
		var rep PullReport
		if err := r.applyOne(w, &rep); err != nil {
			return applied, fmt.Errorf("rebuild from the epoch cache: epoch %d: %w", m.Seq, err)
		}
		applied++
	}
	last := run[0].meta
	h := vault.Head{Seq: last.Seq, Digest: common.HexToHash(last.Digest), Block: last.Block}
	if err := r.store.SetSeen(h); err != nil {
		return applied, err
	}
	r.logf("rebuilt the state database from %d cached epochs (mirror at seq %d)", applied, last.Seq)
	return applied, nil
}

func isSnapshotBlob(b []byte) bool {
	h, _, err := seal.ParseHeader(b)
	return err == nil && h.IsSnapshot()
}

// eventFromMeta is the Epoch event a cached epoch's metadata records.
func eventFromMeta(m *homedir.CacheMeta) *chain.EpochEvent {
	return &chain.EpochEvent{Writer: common.HexToAddress(m.Writer), Seq: m.Seq, Prev: common.HexToHash(m.Prev),
		Digest: common.HexToHash(m.Digest), PrevBlock: m.PrevBlock, Block: m.Block, TxHash: common.HexToHash(m.Tx)}
}

// cacheMeta is the epoch cache's record of an applied epoch, in kint's form; prevBlock is the
// block of the epoch before it (the event's prevBlock).
func cacheMeta(info *vault.EpochInfo, prevBlock uint64) *homedir.CacheMeta {
	return &homedir.CacheMeta{Seq: info.Seq, Digest: info.Digest.Hex(), Prev: info.Prev.Hex(), PrevBlock: prevBlock,
		Block: info.Block, Tx: info.Tx, Bucket: info.Bucket, RowsRoot: info.RowsRoot.Hex(), Writer: info.Writer.Hex(),
		Snapshot: info.Snapshot}
}

package replica

import (
	"context"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// The child is killed once epoch pushKillAt is applied: before the push has made any of its
// epochs' cache files durable (it does every ownCacheEvery epochs and at its end).
const (
	pushKillEpochs = 10
	pushKillAt     = 6
)

// TestPushKilledBeforeCacheChild is the process TestPushKilledBeforeCache kills: it pushes the
// staged rows and stops dead once epoch KillAt is applied.
func TestPushKilledBeforeCacheChild(t *testing.T) {
	s, ok := childSetupOf(t)
	if !ok {
		t.Skip("the child half of TestPushKilledBeforeCache; it runs only when that test starts it")
	}
	r := openChildMachine(t, s)
	r.SetPushHook(func(stage PushStage, seq uint64) error {
		if stage == StageApplied && seq == s.KillAt {
			fmt.Println("KILL ME")
			time.Sleep(time.Hour)
		}
		return nil
	})
	r.Push(context.Background(), PushOptions{})
	t.Fatal("the push was not stopped")
}

// TestPushKilledBeforeCache: a push killed with SIGKILL after it applied its epochs and
// before it made their cache files durable leaves their journal entries; the next push's
// recovery writes every missing file from them, and the epoch cache then holds each epoch of
// the vault, whole and verified, with the journal empty and nothing lost.
func TestPushKilledBeforeCache(t *testing.T) {
	pushKilledBeforeCache(t, pushKillEpochs, pushKillAt, false)
}

// TestPushKilledDuringCacheCommit: the same, killed once the push has started committing its
// first ownCacheEvery epochs' files in the background and landed more after them: whether that
// commit finished or not, the recovery leaves the cache and the journal as whole.
func TestPushKilledDuringCacheCommit(t *testing.T) {
	pushKilledBeforeCache(t, ownCacheEvery+12, ownCacheEvery+3, true)
}

// pushKilledBeforeCache pushes epochs epochs, one row each, in a child killed once epoch
// killAt is applied; with someCached, the first ownCacheEvery epochs' files may be in place.
func pushKilledBeforeCache(t *testing.T, epochs int, killAt uint64, someCached bool) {
	e := newDevChainEnv(t)
	a := e.machine()
	w := &writer{t: t, r: a, m: model{}}
	// 2.5 KB of noise: one row to a 4096 epoch, so the push cuts one epoch per row
	for n := range epochs {
		w.write(fmt.Sprintf("state/r%03d", n), noiseText(uint64(n), 2500))
	}
	opt := a.opt
	a.Close()

	setup := childSetup{Home: opt.Home.Dir, RPC: e.rpc, Contract: e.contract.Hex(),
		SessionKey: hex.EncodeToString(crypto.FromECDSA(opt.SessionKey)), KillAt: killAt}
	killChild(t, "TestPushKilledBeforeCacheChild", setup, fmt.Sprintf("epoch %d was applied", killAt))

	r, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	head, err := r.MirrorHead()
	if err != nil {
		t.Fatal(err)
	}
	pend, err := r.PendingPushes()
	if err != nil {
		t.Fatal(err)
	}
	// the entries of epochs whose files a finished commit made durable are cleared; every
	// other entry up to killAt is kept
	kept := killAt
	if someCached && len(pend) > 0 && pend[0].Seq > 1 {
		kept -= pend[0].Seq - 1
	}
	if head.Seq != killAt || uint64(len(pend)) < kept {
		t.Fatalf("after the kill: mirror at seq %d with %d journal entries; want seq %d and every entry up to it kept but those a commit cleared", head.Seq, len(pend), killAt)
	}
	if _, err := r.cache.Meta(killAt); err == nil {
		t.Fatalf("epoch %d's cache files are in place although the push never made them durable", killAt)
	}
	for _, p := range pend {
		if _, err := r.cache.Meta(p.Seq); err == nil && p.Seq > ownCacheEvery {
			t.Fatalf("epoch %d's cache files are in place although no commit covered it", p.Seq)
		}
	}

	// the epochs the child sent after the one it was killed at are adopted, the rest pushed
	flushAll(t, r)
	if head, err := r.MirrorHead(); err != nil || head.Seq != uint64(epochs) {
		t.Fatalf("after the flush: mirror at seq %d (%v), want %d", head.Seq, err, epochs)
	}
	if pend, err := r.PendingPushes(); err != nil || len(pend) != 0 {
		t.Fatalf("journal after the flush: %d entries, %v", len(pend), err)
	}
	for seq := uint64(1); seq <= uint64(epochs); seq++ {
		meta, err := r.cache.Meta(seq)
		if err != nil {
			t.Fatalf("epoch %d: no cache metadata: %v", seq, err)
		}
		if _, ok := r.cache.Blob(seq, common.HexToHash(meta.Digest)); !ok {
			t.Fatalf("epoch %d: its cached blob does not match its digest", seq)
		}
		rec, _, err := r.store.EpochRecord(seq)
		if err != nil || common.HexToHash(meta.Digest) != rec.Digest || meta.Block != rec.Block {
			t.Fatalf("epoch %d: cached as digest %s block %d, applied as %s block %d (%v)", seq, meta.Digest, meta.Block, rec.Digest.Hex(), rec.Block, err)
		}
	}
	if d := diffModels(w.m, viewOf(t, r, keysOf(w.m))); d != "" {
		t.Fatalf("after the flush: %s", d)
	}
}

package replica

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
	"kintfs/replica/memchain"
	"kintfs/replica/store"
	"kintfs/seal"
)

// askCounter is a connection to the real chain that counts what recovery asks it.
type askCounter struct {
	Chain
	heads, lookups, epochAts atomic.Int32
}

func (c *askCounter) Head(ctx context.Context, owner common.Address, space common.Hash) (chain.Head, error) {
	c.heads.Add(1)
	return c.Chain.Head(ctx, owner, space)
}

func (c *askCounter) TxStatus(ctx context.Context, hash common.Hash) (bool, uint64, error) {
	c.lookups.Add(1)
	return c.Chain.TxStatus(ctx, hash)
}

func (c *askCounter) EpochAt(ctx context.Context, owner common.Address, space common.Hash, block, seq uint64) (*chain.EpochEvent, error) {
	c.epochAts.Add(1)
	return c.Chain.EpochAt(ctx, owner, space, block, seq)
}

// crashAt pushes one row on a fresh machine and stops the push at stage, as a kill -9 there
// would, and returns the machine and its one push journal entry.
func crashAt(t *testing.T, e *chainEnv, stage PushStage) (*Replica, *writer, store.PendingPush) {
	t.Helper()
	a := e.machine()
	w := &writer{t: t, r: a, m: model{}}
	w.write("state/a", "A")
	crashPushAt(t, a, stage, 0, PushOptions{})
	pend, err := a.PendingPushes()
	if err != nil || len(pend) != 1 {
		t.Fatalf("push journal after a crash at %s: %v, %v", stage, pend, err)
	}
	return a, w, pend[0]
}

// reopenCounting restarts r on a connection that counts what recovery asks the chain.
func reopenCounting(t *testing.T, e *chainEnv, r *Replica) (*Replica, *askCounter) {
	t.Helper()
	c := &askCounter{Chain: e.conn()}
	r.opt.Client = c
	return e.reopen(r), c
}

// asked is what recovery asked the chain.
type asked struct{ heads, lookups, epochAts int32 }

// recovered settles r's push journal, checks the epoch was adopted once and restores, and
// returns what the recovery asked c.
func recovered(t *testing.T, e *chainEnv, r *Replica, c *askCounter, w *writer) asked {
	t.Helper()
	return recoveredTo(t, e, r, c, w, 1)
}

// recoveredTo is recovered for a push journal whose last entry is seq.
func recoveredTo(t *testing.T, e *chainEnv, r *Replica, c *askCounter, w *writer, seq uint64) asked {
	t.Helper()
	if err := r.recoverPending(context.Background()); err != nil {
		t.Fatalf("recovery: %v", err)
	}
	n := asked{c.heads.Load(), c.lookups.Load(), c.epochAts.Load()}
	if pend, err := r.PendingPushes(); err != nil || len(pend) != 0 {
		t.Fatalf("push journal after the recovery: %v, %v", pend, err)
	}
	if m, err := r.MirrorHead(); err != nil || m.Seq != seq {
		t.Fatalf("mirror after the recovery: %+v, %v; want the epoch adopted", m, err)
	}
	if got := chainHead(t, r).Seq; got != seq {
		t.Fatalf("head seq %d after the recovery: the epoch was sent twice", got)
	}
	if p := stagedPaths(t, r, keysOf(w.m)); len(p) != 0 {
		t.Fatalf("still staged: %v", p)
	}
	if d := diffModels(w.m, restored(t, e, keysOf(w.m))); d != "" {
		t.Fatalf("fresh machine: %s", d)
	}
	return n
}

// The journal entry keeps how far its push got, and recovery asks the chain only what that
// stage leaves open: after the receipt, whether the block it named holds the epoch; before
// it, where the transaction is.
func TestPushJournalStage(t *testing.T) {
	t.Run("sealed", func(t *testing.T) {
		// the node refused the send: the entry stays sealed, and recovery sends it again
		e := newChainEnv(t)
		a := e.machine()
		w := &writer{t: t, r: a, m: model{}}
		w.write("state/a", "A")
		connOf(t, a).Fault(func(f *memchain.Faults) { f.RefuseSends = 1 })
		if _, err := a.Push(context.Background(), PushOptions{}); !Offline(err) {
			t.Fatalf("push with the send refused: %v, want offline", err)
		}
		pend, err := a.PendingPushes()
		if err != nil || len(pend) != 1 || pend[0].Stage != store.JournalSealed {
			t.Fatalf("push journal after a refused send: %+v, %v; want one sealed entry", pend, err)
		}
		a, c := reopenCounting(t, e, a)
		n := recovered(t, e, a, c, w)
		if n.heads == 0 || n.lookups == 0 {
			t.Fatalf("a sealed entry was settled without the chain: %d heads, %d lookups", n.heads, n.lookups)
		}
	})
	t.Run("sent alone", func(t *testing.T) {
		// the send of a push's last epoch moves no stage (its receipt does): it stays sealed,
		// which recovery takes as possibly sent
		e := newChainEnv(t)
		a, w, p := crashAt(t, e, StageSent)
		if p.Stage != store.JournalSealed || p.Block != 0 {
			t.Fatalf("entry after the send: stage %s block %d, want sealed", p.Stage, p.Block)
		}
		a, c := reopenCounting(t, e, a)
		n := recovered(t, e, a, c, w)
		if n.heads == 0 || n.lookups == 0 {
			t.Fatalf("a sent entry was settled without asking where its transaction is: %d heads, %d lookups", n.heads, n.lookups)
		}
	})
	t.Run("sent back to back", func(t *testing.T) {
		// on a chain that takes epochs back to back, journaling the next epoch records the
		// one before it as sent, in the same commit
		e := newDevChainEnv(t)
		a := e.machine()
		w := &writer{t: t, r: a, m: model{}}
		stageNoise(t, w, "b2b", 8) // two epochs of four rows
		crashPushAt(t, a, StageSent, 2, PushOptions{Confirmations: 1})
		pend, err := a.PendingPushes()
		if err != nil || len(pend) != 2 || pend[0].Stage != store.JournalSent || pend[1].Stage != store.JournalSealed {
			t.Fatalf("push journal after two sends: %+v, %v; want epoch 1 sent, epoch 2 sealed", pend, err)
		}
		a, c := reopenCounting(t, e, a)
		recoveredTo(t, e, a, c, w, 2)
	})
	t.Run("receipt seen", func(t *testing.T) {
		e := newChainEnv(t)
		a, w, p := crashAt(t, e, StageReceipt)
		if p.Stage != store.JournalReceipt || p.Block == 0 || p.Block != chainHead(t, a).Block {
			t.Fatalf("entry after the receipt: stage %s block %d, want receipt seen in block %d", p.Stage, p.Block, chainHead(t, a).Block)
		}
		a, c := reopenCounting(t, e, a)
		n := recovered(t, e, a, c, w)
		if n.lookups != 0 || n.heads != 0 || n.epochAts != 1 {
			t.Fatalf("an entry whose receipt was seen asked %d heads, %d lookups, %d events; want only its block's event", n.heads, n.lookups, n.epochAts)
		}
	})
	t.Run("receipt of a block that no longer holds it", func(t *testing.T) {
		// the chain is the truth: a block named by the receipt that does not hold the epoch
		// (a reorganisation moved it) sends recovery to the chain's head and lookup
		e := newChainEnv(t)
		a, w, p := crashAt(t, e, StageReceipt)
		if err := a.store.SetPendingStage(p.Seq, store.JournalReceipt, p.Block-1); err != nil {
			t.Fatal(err)
		}
		a, c := reopenCounting(t, e, a)
		n := recovered(t, e, a, c, w)
		if n.lookups == 0 {
			t.Fatal("the wrong block was trusted: no lookup of the transaction")
		}
	})
	t.Run("entry without a stage", func(t *testing.T) {
		// written before the stage was kept: recovered from the chain alone, as it was
		e := newChainEnv(t)
		a, w, p := crashAt(t, e, StageReceipt)
		p.Stage, p.Block = store.JournalUnknown, 0
		if err := a.store.PutPendingBatch([]store.PendingPush{p}); err != nil {
			t.Fatal(err)
		}
		if pend, _ := a.PendingPushes(); len(pend) != 1 || pend[0].Stage != store.JournalUnknown {
			t.Fatalf("the old entry reads back as %+v", pend)
		}
		a, c := reopenCounting(t, e, a)
		n := recovered(t, e, a, c, w)
		if n.heads == 0 || n.lookups == 0 {
			t.Fatalf("an entry without a stage was settled without the chain: %d heads, %d lookups", n.heads, n.lookups)
		}
	})
}

// TestPushJournalKeepsNamesNotPlaintext: a push journal entry keeps the ids of the rows its
// epoch carries, not its plaintext, which the blob in its signed transaction holds: recovery
// adopts the epoch from the blob, and the plaintext it caches is the one sealed. An entry in
// the layout before (the plaintext kept, no ids) is recovered the same way.
func TestPushJournalKeepsNamesNotPlaintext(t *testing.T) {
	for _, layout := range []string{"ids", "plaintext kept"} {
		t.Run(layout, func(t *testing.T) {
			e := newChainEnv(t)
			a, w, p := crashAt(t, e, StageReceipt)
			if len(p.Plaintext) != 0 || len(p.IDs) != 1 || p.IDs[0] != seal.CanonicalID("state", nil, "a") {
				t.Fatalf("the entry keeps plaintext %d bytes and ids %q; want state/a's id alone", len(p.Plaintext), p.IDs)
			}
			blob, err := journaledBlob(&p)
			if err != nil {
				t.Fatal(err)
			}
			o, err := seal.Open(blob, a.opt.DEK, a.epochContext(p.Seq, p.Prev))
			if err != nil {
				t.Fatal(err)
			}
			if layout == "plaintext kept" {
				p.Plaintext, p.IDs = o.Raw, nil
				if err := a.store.PutPendingBatch([]store.PendingPush{p}); err != nil {
					t.Fatal(err)
				}
			}
			a, c := reopenCounting(t, e, a)
			recovered(t, e, a, c, w)
			cached, err := os.ReadFile(a.opt.Home.Path("epochs", a.vault.Space16(), fmt.Sprintf("%08d.json", p.Seq)))
			if err != nil || !bytes.Equal(cached, o.Raw) {
				t.Fatalf("the cached plaintext of epoch %d: %d bytes, %v; want the %d sealed", p.Seq, len(cached), err, len(o.Raw))
			}
		})
	}
}

package replica

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/replica/memchain"
	"kintfs/seal"
)

// The engine against a chain that fails or lies, on memchain: every case ends with the
// rows anchored once and readable everywhere, or with a refusal that names its reason and
// leaves this machine's state as it was.

func connOf(t testing.TB, r *Replica) *memchain.Conn {
	t.Helper()
	c, ok := r.Client().(*memchain.Conn)
	if !ok {
		t.Fatalf("the replica is not on memchain: %T", r.Client())
	}
	return c
}

func chainHead(t testing.TB, r *Replica) chain.Head {
	t.Helper()
	h, err := r.Client().Head(context.Background(), r.vault.Owner, r.vault.Space)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// restored is a fresh machine's view of paths after its first pull.
func restored(t testing.TB, e *chainEnv, paths []string) model {
	t.Helper()
	b := e.machine()
	// A loaded machine can make one RPC call miss its deadline; a fresh machine pulls again,
	// going on from what it applied. What is checked is what it ends with.
	for try := 1; ; try++ {
		_, err := b.Pull(context.Background(), false)
		if err == nil {
			break
		}
		if !Offline(err) || try == 3 {
			t.Fatalf("fresh machine: pull (try %d): %v", try, err)
		}
		t.Logf("fresh machine: pull (try %d): %v; pulling again", try, err)
	}
	return viewOf(t, b, paths)
}

var faultPaths = []string{"state/a", "state/b", "state/c"}

// TestPushLostReceipt: the connection drops after the push is sent, before its receipt. The
// push fails as offline; the next flush (in this process, or after a restart) finds the
// transaction mined and adopts its epoch: one epoch on the chain, nothing left staged.
func TestPushLostReceipt(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "same process", true: "after a restart"}[restart], func(t *testing.T) {
			e := newChainEnv(t)
			a := e.machine()
			w := &writer{t: t, r: a, m: model{}}
			w.write("state/a", "A")
			w.write("state/b", "B")
			connOf(t, a).Fault(func(f *memchain.Faults) { f.LoseReceipts = 1 })
			_, err := a.Push(context.Background(), PushOptions{})
			if !Offline(err) {
				t.Fatalf("push with the receipt lost: %v, want offline", err)
			}
			if got := chainHead(t, a).Seq; got != 1 {
				t.Fatalf("the sent push is not on the chain: head seq %d", got)
			}
			if restart {
				a = e.reopen(a)
				w.r = a
			}
			w.check("before the next flush", a, faultPaths)
			flushAll(t, a)
			if got := chainHead(t, a).Seq; got != 1 {
				t.Fatalf("head seq %d after the recovery: the epoch was sent twice", got)
			}
			if p := stagedPaths(t, a, faultPaths); len(p) != 0 {
				t.Fatalf("still staged: %v", p)
			}
			if d := diffModels(w.m, restored(t, e, faultPaths)); d != "" {
				t.Fatalf("fresh machine: %s", d)
			}
		})
	}
}

// TestPushRefusedSend: a send the RPC refuses leaves nothing on the chain and every row
// staged; the next flush anchors them once.
func TestPushRefusedSend(t *testing.T) {
	e := newChainEnv(t)
	a := e.machine()
	w := &writer{t: t, r: a, m: model{}}
	w.write("state/a", "A")
	connOf(t, a).Fault(func(f *memchain.Faults) { f.RefuseSends = 1 })
	if _, err := a.Push(context.Background(), PushOptions{}); !Offline(err) {
		t.Fatalf("push with the send refused: %v, want offline", err)
	}
	if got := chainHead(t, a).Seq; got != 0 || e.mem.Pending() != 0 {
		t.Fatalf("a refused send reached the chain: head seq %d, %d pending", got, e.mem.Pending())
	}
	if p := stagedPaths(t, a, faultPaths); len(p) != 1 {
		t.Fatalf("staged after the refusal: %v", p)
	}
	a = e.reopen(a)
	flushAll(t, a)
	if got := chainHead(t, a).Seq; got != 1 {
		t.Fatalf("head seq %d, want 1", got)
	}
	if d := diffModels(w.m, restored(t, e, faultPaths)); d != "" {
		t.Fatalf("fresh machine: %s", d)
	}
}

// TestPushUnfundedKey: a send the node refuses because the session key cannot pay leaves
// nothing on the chain, nothing in the push journal and every row staged, with an error that
// says what to fund; once the key is funded the next flush anchors them once.
func TestPushUnfundedKey(t *testing.T) {
	e := newChainEnv(t)
	a := e.machine()
	w := &writer{t: t, r: a, m: model{}}
	w.write("state/a", "A")
	key := crypto.PubkeyToAddress(a.opt.SessionKey.PublicKey)
	e.mem.SetBalance(key, big.NewInt(1000))
	_, err := a.Push(context.Background(), PushOptions{})
	if !errors.Is(err, chain.ErrInsufficientFunds) || !strings.Contains(err.Error(), "fund "+key.Hex()) {
		t.Fatalf("push from a key without funds: %v, want %v naming the key to fund", err, chain.ErrInsufficientFunds)
	}
	if got := chainHead(t, a).Seq; got != 0 || e.mem.Pending() != 0 {
		t.Fatalf("a refused send reached the chain: head seq %d, %d pending", got, e.mem.Pending())
	}
	if pend, err := a.PendingPushes(); err != nil || len(pend) != 0 {
		t.Fatalf("push journal after a refused send: %+v, %v; want empty", pend, err)
	}
	if p := stagedPaths(t, a, faultPaths); len(p) != 1 {
		t.Fatalf("staged after the refusal: %v", p)
	}
	e.mem.SetBalance(key, new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil))
	flushAll(t, a)
	if got := chainHead(t, a).Seq; got != 1 {
		t.Fatalf("head seq %d, want 1", got)
	}
	if d := diffModels(w.m, restored(t, e, faultPaths)); d != "" {
		t.Fatalf("fresh machine: %s", d)
	}
}

// TestPushUnreachable: with the RPC down, a flush says offline and keeps every change; when
// it is back the changes go out.
func TestPushUnreachable(t *testing.T) {
	e := newChainEnv(t)
	a := e.machine()
	w := &writer{t: t, r: a, m: model{}}
	w.write("state/a", "A")
	flushAll(t, a)
	w.write("state/a", "A2")
	w.rm("state/a")
	w.write("state/b", "B")
	conn := connOf(t, a)
	conn.Fault(func(f *memchain.Faults) { f.Down = true })
	if _, err := a.Push(context.Background(), PushOptions{}); !Offline(err) {
		t.Fatalf("push while down: %v, want offline", err)
	}
	w.check("while down", a, faultPaths)
	conn.Fault(func(f *memchain.Faults) { f.Down = false })
	flushAll(t, a)
	if d := diffModels(w.m, restored(t, e, faultPaths)); d != "" {
		t.Fatalf("fresh machine: %s", d)
	}
}

// TestPushReorgedIntoAnotherBlock: a reorg moves an anchored push to a later block. The
// machine that sent it goes on building on it, and a fresh machine restores both epochs.
func TestPushReorgedIntoAnotherBlock(t *testing.T) {
	e := newChainEnv(t)
	a := e.machine()
	w := &writer{t: t, r: a, m: model{}}
	w.write("state/a", "A")
	flushAll(t, a)
	before := chainHead(t, a)
	e.mem.Reorg(2, true) // its block and the confirmation after it
	moved := chainHead(t, a)
	if moved.Digest != before.Digest || moved.Block <= before.Block {
		t.Fatalf("the reorg did not move the epoch: %+v then %+v", before, moved)
	}
	w.write("state/b", "B")
	flushAll(t, a)
	if h := chainHead(t, a); h.Seq != 2 {
		t.Fatalf("head %+v, want seq 2", h)
	}
	if d := diffModels(w.m, restored(t, e, faultPaths)); d != "" {
		t.Fatalf("fresh machine: %s", d)
	}
}

// TestPushRevertedByRace: another machine takes the next seq between this machine's
// prepare and send; the mined transaction reverts, nothing is lost, and after a pull the
// rows go out on top of the other machine's epoch.
func TestPushRevertedByRace(t *testing.T) {
	e := newChainEnv(t)
	a, b := e.machine(), e.machine()
	wa := &writer{t: t, r: a, m: model{}}
	wa.write("state/a", "A")
	a.SetPushHook(func(stage PushStage, _ uint64) error {
		if stage == StageSealed {
			wb := &writer{t: t, r: b, m: model{}}
			wb.write("state/b", "B")
			flushAll(t, b)
		}
		return nil
	})
	_, err := a.Push(context.Background(), PushOptions{})
	a.SetPushHook(nil)
	if err == nil {
		t.Fatal("a push built on a head that moved was anchored")
	}
	if _, err := a.Pull(context.Background(), false); err != nil {
		t.Fatalf("pull: %v", err)
	}
	flushAll(t, a)
	want := model{"state/a": {body: "A"}, "state/b": {body: "B"}}
	if d := diffModels(want, restored(t, e, faultPaths)); d != "" {
		t.Fatalf("fresh machine: %s", d)
	}
	if h := chainHead(t, a); h.Seq != 2 {
		t.Fatalf("head seq %d, want 2", h.Seq)
	}
}

// lyingPull sets up a vault of three epochs written by a, and a fresh machine b whose RPC
// lies as fault says. It returns b, the env and b's pull error.
func lyingPull(t *testing.T, fault func(e *chainEnv, f *memchain.Faults)) (*Replica, *chainEnv, error) {
	e := newChainEnv(t)
	a := e.machine()
	w := &writer{t: t, r: a, m: model{}}
	for _, body := range []string{"1", "2", "3"} {
		w.write("state/a", body)
		flushAll(t, a)
	}
	b := e.machine()
	connOf(t, b).Fault(func(f *memchain.Faults) { fault(e, f) })
	_, err := b.Pull(context.Background(), false)
	return b, e, err
}

// TestPullRefusesLies: each lie an RPC can tell stops the pull with its name, and the
// machine applies nothing it told; told the truth again, the pull completes.
func TestPullRefusesLies(t *testing.T) {
	cases := []struct {
		name  string
		fault func(e *chainEnv, f *memchain.Faults)
		want  string
	}{
		{"withheld event", func(e *chainEnv, f *memchain.Faults) { f.Withhold = map[uint64]bool{2: true} }, "no Epoch event for seq 2"},
		{"altered calldata", func(e *chainEnv, f *memchain.Faults) { f.WrongCalldata = map[uint64]bool{1: true} }, chain.ErrTxMismatch.Error()},
		{"transaction denied", func(e *chainEnv, f *memchain.Faults) { f.NoTx = map[uint64]bool{1: true} }, chain.ErrTxNotFound.Error()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, _, err := lyingPull(t, c.fault)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("pull: %v, want %q", err, c.want)
			}
			if !LyingRPC(err) {
				t.Fatalf("pull: %v is not reported as a lying RPC", err)
			}
			if m, _ := b.MirrorHead(); m.Seq != 0 {
				t.Fatalf("mirror at seq %d after a refused pull", m.Seq)
			}
			connOf(t, b).Fault(func(f *memchain.Faults) { *f = memchain.Faults{} })
			if _, err := b.Pull(context.Background(), false); err != nil {
				t.Fatalf("pull told the truth: %v", err)
			}
			if got := viewOf(t, b, faultPaths); got["state/a"].body != "3" {
				t.Fatalf("after the honest pull: %v", got)
			}
		})
	}
}

// TestPullRefusesAddedEvent: an RPC that adds a second event of a seq the walk asks for is
// refused by name.
func TestPullRefusesAddedEvent(t *testing.T) {
	_, _, err := lyingPull(t, func(e *chainEnv, f *memchain.Faults) {
		c := e.mem.Conn()
		owner, space := e.vaultIDs()
		head, _ := c.Head(context.Background(), owner, space)
		real, err := c.EpochAt(context.Background(), owner, space, head.Block, head.Seq)
		if err != nil {
			t.Fatal(err)
		}
		fake := *real
		fake.Digest, fake.TxHash = common.Hash{1}, common.Hash{2}
		f.Extra = []*chain.EpochEvent{&fake}
	})
	if err == nil || !strings.Contains(err.Error(), "two Epoch events for seq 3") {
		t.Fatalf("pull: %v", err)
	}
}

// TestPullRefusesStaleHead: an RPC that answers with a head older than one this machine has
// seen is refused as stale, and the mirror stays.
func TestPullRefusesStaleHead(t *testing.T) {
	e := newChainEnv(t)
	a, b := e.machine(), e.machine()
	w := &writer{t: t, r: a, m: model{}}
	w.write("state/a", "1")
	flushAll(t, a)
	w.write("state/a", "2")
	flushAll(t, a)
	if _, err := b.Pull(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	connOf(t, b).Fault(func(f *memchain.Faults) { f.StaleBy = 2 })
	if _, err := b.Pull(context.Background(), false); !errors.Is(err, ErrStaleRPC) {
		t.Fatalf("pull from a stale RPC: %v, want %v", err, ErrStaleRPC)
	}
	if m, _ := b.MirrorHead(); m.Seq != 2 {
		t.Fatalf("mirror at seq %d, want 2", m.Seq)
	}
}

// TestPullFork: the chain's epoch at a seq this machine applied is another one (a reorg past
// its confirmations, then another writer): the pull refuses with ErrFork and keeps the mirror.
func TestPullFork(t *testing.T) {
	e := newChainEnv(t)
	a, b, c := e.machine(), e.machine(), e.machine()
	(&writer{t: t, r: a, m: model{}}).write("state/a", "from a")
	flushAll(t, a)
	if _, err := b.Pull(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	e.mem.Reorg(2, false)
	wc := &writer{t: t, r: c, m: model{}}
	wc.write("state/c", "from c")
	flushAll(t, c)
	// at the same seq, the head's other digest is all b can see: a stale or lying RPC
	if _, err := b.Pull(context.Background(), false); !errors.Is(err, ErrStaleRPC) {
		t.Fatalf("pull of another epoch 1: %v, want %v", err, ErrStaleRPC)
	}
	wc.write("state/c", "from c again")
	flushAll(t, c)
	// past it, the walk reaches epoch 1 and finds it is not the one b applied
	_, err := b.Pull(context.Background(), false)
	if !errors.Is(err, ErrFork) {
		t.Fatalf("pull over a fork: %v, want %v", err, ErrFork)
	}
	if got := viewOf(t, b, []string{"state/a", "state/c"}); got["state/a"].body != "from a" || len(got) != 1 {
		t.Fatalf("b after the refused pull: %v", got)
	}
}

// TestPushRequestsOnInstantBlocks pins the requests one push of one row makes.
func TestPushRequestsOnInstantBlocks(t *testing.T) {
	e := newChainEnv(t)
	a := e.machine()
	a.opt.Confirmations = 1
	(&writer{t: t, r: a, m: model{}}).write("state/a", "A")
	before := a.Client().Stats().Calls
	start := time.Now()
	flushAll(t, a)
	calls := a.Client().Stats().Calls - before
	t.Logf("one push: %d requests, %v", calls, time.Since(start))
	if calls > 5 {
		t.Fatalf("one push made %d requests: %v", calls, a.Client().Stats().Methods)
	}
}

func (e *chainEnv) vaultIDs() (common.Address, common.Hash) {
	return crypto.PubkeyToAddress(e.owner.PublicKey), seal.SpaceID(e.tenant)
}

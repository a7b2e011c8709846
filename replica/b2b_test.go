package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kintfs/chain"
	"kintfs/chain/devchain"
	"kintfs/chain/rpcproxy"
	"kintfs/replica/store"
)

// rpcMethods are the calls a push makes, each delayed by the latency proxy.
var rpcMethods = []string{"eth_chainId", "eth_estimateGas", "eth_getBlockByNumber", "eth_maxPriorityFeePerGas",
	"eth_getTransactionCount", "eth_sendRawTransaction", "eth_getTransactionReceipt", "eth_blockNumber",
	"eth_getLogs", "eth_call", "eth_getCode", "eth_getTransactionByHash", "eth_getBlockByHash"}

// newProxiedDevChainEnv is a real dev chain sealing a block every period seconds (0: one per
// burst of transactions), reached through an rpcproxy. make bench has it use a chain it
// started with that period, named in KINT_BENCH_DEVCHAIN_PERIOD_<period>.
func newProxiedDevChainEnv(t *testing.T, period uint64) (*chainEnv, *rpcproxy.Proxy) {
	t.Helper()
	if e := benchChainEnv(t, fmt.Sprintf("KINT_BENCH_DEVCHAIN_PERIOD_%d", period)); e != nil {
		p, err := rpcproxy.Start(e.rpc, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		e.rpc = p.URL
		return e, p
	}
	dc, err := devchain.Start(devchain.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", Period: period})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close() })
	p, err := rpcproxy.Start(dc.Info().RPC, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &chainEnv{t: t, dc: dc, owner: devchain.AccountKey(0), contract: dc.Contract(), rpc: p.URL, tenant: "b2b"}, p
}

// stageNoise writes n rows of 1 KB of noise named prefix-i, which cut to bucket 4096 four to
// an epoch, and returns their paths.
func stageNoise(t *testing.T, w *writer, prefix string, n int) []string {
	t.Helper()
	var paths []string
	for i := range n {
		p := fmt.Sprintf("state/%s-%03d", prefix, i)
		w.write(p, noiseText(uint64(len(prefix)*1000+i), 1024))
		paths = append(paths, p)
	}
	return paths
}

// A push of 30 epochs through a proxy adding 50 ms to every request, on a chain sealing a
// block every 2 s, as Base does: sent back to back, they land in a few blocks, not 30.
func TestPushBackToBackThirtyEpochs(t *testing.T) {
	e, proxy := newProxiedDevChainEnv(t, 2)
	e.dialOpt = chain.Options{BlockTime: 2 * time.Second}
	r := e.machine()
	w := &writer{t: t, r: r, m: model{}}
	stageNoise(t, w, "bulk", 120)
	for _, m := range rpcMethods {
		proxy.SetRule(m, rpcproxy.Rule{Delay: 50 * time.Millisecond})
	}
	var mu sync.Mutex
	var firstSend, lastReceipt time.Time
	r.SetPushHook(func(stage PushStage, seq uint64) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case stage == StageSealed && firstSend.IsZero():
			firstSend = time.Now()
		case stage == StageReceipt:
			lastReceipt = time.Now()
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := r.Push(ctx, PushOptions{Confirmations: 1})
	r.SetPushHook(nil)
	if err != nil {
		t.Fatal(err)
	}
	took := lastReceipt.Sub(firstSend)
	blocks := map[uint64]bool{}
	for _, ep := range rep.Epochs {
		blocks[ep.Block] = true
	}
	t.Logf("%d epochs in %d blocks: %v from the first send to the last receipt (push %.1f s, %d requests)",
		len(rep.Epochs), len(blocks), took.Round(time.Millisecond), rep.Seconds, proxy.Stats().Requests)
	benchLine(t, "bench-b2b", map[string]any{"epochs": len(rep.Epochs), "blocks": len(blocks), "seconds": took.Seconds(),
		"push_seconds": rep.Seconds, "requests": proxy.Stats().Requests, "delay_ms": 50, "period_seconds": 2})
	if len(rep.Epochs) != 30 {
		t.Fatalf("%d epochs, want 30", len(rep.Epochs))
	}
	// One at a time, each epoch waits for its receipt: at least one block each. The wall clock
	// (about 6 s here on a quiet machine) is for make bench; blocks hold under any load.
	if len(blocks) > 15 {
		t.Errorf("30 epochs landed in %d blocks (%v from the first send to the last receipt), want at most 15: one at a time takes 30 or more", len(blocks), took)
	}
	if d := diffModels(w.m, restored(t, e, keysOf(w.m))); d != "" {
		t.Fatalf("fresh machine: %s", d)
	}
}

func keysOf(m model) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// checkTrial checks the epochs a trial's pushes anchored after seq base: contiguous seqs, on
// the chain as in the mirror, and every row of the trial in exactly one of them.
func checkTrial(t *testing.T, r *Replica, base uint64, rows int) uint64 {
	t.Helper()
	eps, err := r.Epochs()
	if err != nil {
		t.Fatal(err)
	}
	n, next := 0, base+1
	for _, ep := range eps {
		if ep.Seq <= base {
			continue
		}
		if ep.Seq != next {
			t.Fatalf("epoch %d after %d", ep.Seq, next-1)
		}
		next++
		n += ep.Rows
	}
	if n != rows {
		t.Fatalf("epochs %d..%d carry %d rows, want each of the %d written once", base+1, next-1, n, rows)
	}
	h := chainHead(t, r)
	m, _ := r.MirrorHead()
	if h.Seq != next-1 || m.Seq != h.Seq || m.Digest != h.Digest {
		t.Fatalf("chain head %d, mirror %d, want %d", h.Seq, m.Seq, next-1)
	}
	if rows, dels, _, err := r.store.CollectStaged(false); err != nil || len(rows)+len(dels) != 0 {
		t.Fatalf("%d rows still staged (%v)", len(rows), err)
	}
	if pend, err := r.PendingPushes(); err != nil || len(pend) != 0 {
		t.Fatalf("%d push journal entries left (%v)", len(pend), err)
	}
	return next - 1
}

var errCrash = errors.New("crash (test)")

// crashPushAt pushes with opts and stops the push at stage of epoch seq (of any epoch when seq
// is 0), as a kill -9 there would; the push must fail with errCrash.
func crashPushAt(t *testing.T, r *Replica, stage PushStage, seq uint64, opts PushOptions) {
	t.Helper()
	r.SetPushHook(func(s PushStage, at uint64) error {
		if s == stage && (seq == 0 || at == seq) {
			return errCrash
		}
		return nil
	})
	defer r.SetPushHook(nil)
	if _, err := r.Push(context.Background(), opts); !errors.Is(err, errCrash) {
		t.Fatalf("the push did not stop at %s of epoch %d: %v", stage, seq, err)
	}
}

// A 10-epoch push sent back to back stops at each epoch in turn, as a kill -9 there would
// (after the send, after the receipt, after the apply: the journal and the store as they
// are, the process gone), or meets a send the RPC refuses; after a restart (or at once, for a
// refusal) the next pushes land every epoch once, in order, and nothing is lost.
func TestPushBackToBackCrashAtEachEpoch(t *testing.T) {
	e, proxy := newProxiedDevChainEnv(t, 0)
	r := e.machine()
	w := &writer{t: t, r: r, m: model{}}
	var base uint64
	trial := 0
	for _, stage := range []PushStage{StageSent, StageReceipt, StageApplied, 0} {
		for k := 1; k <= 10; k++ {
			trial++
			stageNoise(t, w, fmt.Sprintf("t%02d", trial), 40) // ten epochs of four rows
			start := base
			var sends int
			var mu sync.Mutex
			if stage == 0 {
				proxy.SetRefuse(func(method string, _ json.RawMessage) string {
					if method != "eth_sendRawTransaction" {
						return ""
					}
					mu.Lock()
					defer mu.Unlock()
					sends++
					if sends == k {
						return "transaction refused (test)"
					}
					return ""
				})
			} else {
				r.SetPushHook(func(s PushStage, seq uint64) error {
					if s == stage && seq == start+uint64(k) {
						return errCrash
					}
					return nil
				})
			}
			rep, err := r.Push(context.Background(), PushOptions{Confirmations: 1})
			r.SetPushHook(nil)
			proxy.SetRefuse(nil)
			if err == nil {
				t.Fatalf("trial %d (%s at epoch %d): the push did not fail; %d epochs", trial, stage, k, len(rep.Epochs))
			}
			if stage != 0 {
				r = e.reopen(r) // the process is gone: the next one starts from the store
				w.r = r
			}
			flushAll(t, r)
			base = checkTrial(t, r, base, 40)
		}
	}
	if d := diffModels(w.m, restored(t, e, keysOf(w.m))); d != "" {
		t.Fatalf("fresh machine: %s", d)
	}
}

// A push crashes after sending an epoch, and on the restart the node cannot say what its block
// holds: the journal entry stays, the flush fails saying so, and the next flush adopts the
// epoch. Before, an unreadable event counted as another machine's epoch and the entry was
// dropped, so the next push found the chain moved and was refused.
func TestPushJournalKeptWhenTheEventCannotBeRead(t *testing.T) {
	e, proxy := newProxiedDevChainEnv(t, 0)
	r := e.machine()
	w := &writer{t: t, r: r, m: model{}}
	stageNoise(t, w, "k", 12) // three epochs of four rows
	crashPushAt(t, r, StageSent, 2, PushOptions{Confirmations: 1})
	r = e.reopen(r)
	var logs atomic.Int32
	proxy.SetRefuse(func(method string, _ json.RawMessage) string {
		if method != "eth_getLogs" {
			return ""
		}
		logs.Add(1)
		return "logs unavailable (test)"
	})
	_, err := r.Push(context.Background(), PushOptions{Confirmations: 1})
	proxy.SetRefuse(nil)
	if err == nil || !strings.Contains(err.Error(), "its event cannot be read") || !strings.Contains(err.Error(), "it stays in the push journal") {
		t.Fatalf("the flush while the node cannot answer: %v (%d log requests refused)", err, logs.Load())
	}
	pend, err := r.PendingPushes()
	var seqs []uint64
	for _, p := range pend {
		seqs = append(seqs, p.Seq)
	}
	if err != nil || !slices.Contains(seqs, 2) {
		t.Fatalf("the journal after it holds seqs %v (%v), want 2 among them", seqs, err)
	}
	flushAll(t, r)
	checkTrial(t, r, 0, 12)
}

// Another machine takes a seq in the middle of a push sent back to back: the epoch sent for
// that seq, and every one sent after it, revert. Nothing is lost: after a pull, the push
// journal drops them, their rows are still staged, and the next push anchors them once.
func TestPushBackToBackRevertInTheMiddle(t *testing.T) {
	e, _ := newProxiedDevChainEnv(t, 0)
	a, b := e.machine(), e.machine()
	wa := &writer{t: t, r: a, m: model{}}
	stageNoise(t, wa, "a", 40)
	wb := &writer{t: t, r: b, m: model{}}
	wb.write("state/b", "B")
	a.SetPushHook(func(s PushStage, seq uint64) error {
		if s == StageSent && seq == 3 {
			// epochs 1 to 3 are sent; before 4 is, b anchors seq 4 on top of them
			deadline := time.Now().Add(60 * time.Second)
			for chainHead(t, a).Seq < 3 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if _, err := b.Pull(context.Background(), false); err != nil {
				return fmt.Errorf("b pull: %w", err)
			}
			flushAll(t, b)
		}
		return nil
	})
	_, err := a.Push(context.Background(), PushOptions{Confirmations: 1})
	a.SetPushHook(nil)
	// seq 4 reverts because b took it: the push says it lost the race for it
	if !errors.Is(err, ErrChainMoved) || !strings.Contains(err.Error(), "another machine anchored seq 4 first") {
		t.Fatalf("push: %v, want the race for seq 4 lost to another machine", err)
	}
	if _, err := a.Pull(context.Background(), false); err != nil {
		t.Fatalf("pull: %v", err)
	}
	flushAll(t, a)
	if pend, _ := a.PendingPushes(); len(pend) != 0 {
		t.Fatalf("%d push journal entries left", len(pend))
	}
	eps, err := a.Epochs()
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for i, ep := range eps {
		if ep.Seq != uint64(i+1) {
			t.Fatalf("epoch %d at %d", ep.Seq, i)
		}
		rows += ep.Rows
	}
	if rows != 41 {
		t.Fatalf("%d rows anchored, want the 41 written, each once", rows)
	}
	want := model{"state/b": {body: "B"}}
	for k, v := range wa.m {
		want[k] = v
	}
	if d := diffModels(want, restored(t, e, keysOf(want))); d != "" {
		t.Fatalf("fresh machine: %s", d)
	}
}

// Epochs sealed while the ones before them were sent go out together: journaled in one synced
// commit, then sent back to back. A pause at the first epoch's send lets all the others be
// sealed: they go out as one more batch, every entry of it journaled before its first send,
// and every epoch lands.
func TestPushJournalsSealedEpochsTogether(t *testing.T) {
	e := newDevChainEnv(t)
	r := e.machine()
	w := &writer{t: t, r: r, m: model{}}
	paths := stageNoise(t, w, "batch", 40) // ten epochs of four rows
	var unsent []int                       // at each send: the entries journaled after it and not sent yet
	r.SetPushHook(func(stage PushStage, seq uint64) error {
		if stage != StageSent {
			return nil
		}
		pend, err := r.PendingPushes()
		if err != nil {
			return err
		}
		n := 0
		for _, p := range pend {
			if p.Stage == store.JournalSealed && p.Seq > seq {
				n++
			}
		}
		unsent = append(unsent, n)
		if len(unsent) == 1 {
			time.Sleep(500 * time.Millisecond)
		}
		return nil
	})
	defer r.SetPushHook(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := r.Push(ctx, PushOptions{Confirmations: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Epochs) != 10 || len(unsent) != 10 {
		t.Fatalf("%d epochs, %d sends; want 10 and 10", len(rep.Epochs), len(unsent))
	}
	// a batch ends at a send with nothing journaled after it: the one under way at the pause,
	// then the rest together
	var batches []int
	size := 0
	for _, n := range unsent {
		size++
		if n == 0 {
			batches, size = append(batches, size), 0
		}
	}
	if len(batches) > 2 || batches[len(batches)-1] < 2 {
		t.Errorf("batches of %v epochs (entries journaled ahead at each send: %v); want the epochs sealed during the pause in one", batches, unsent)
	}
	if pend, err := r.PendingPushes(); err != nil || len(pend) != 0 {
		t.Fatalf("push journal after the push: %d entries, %v", len(pend), err)
	}
	w.check("after the push", r, paths)
}

// TestPushBackToBackOnPacedDevChain: on the dev chain as kintfs devchain and mount --dev run
// it (a block as soon as a transaction comes, then its confirmations, paced to the wall
// clock), the epochs a push sends back to back share blocks. The chain used to take each
// send only after the blocks of the one before: 20 epochs took 3 blocks each, about a minute.
func TestPushBackToBackOnPacedDevChain(t *testing.T) {
	dc, err := devchain.Start(devchain.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", MaxLead: devchain.DefaultMaxLead})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close() })
	e := &chainEnv{t: t, dc: dc, owner: devchain.AccountKey(0), contract: dc.Contract(), rpc: dc.Info().RPC, tenant: "paced"}
	r := e.machine()
	w := &writer{t: t, r: r, m: model{}}
	stageNoise(t, w, "paced", 80)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	rep, err := r.Push(ctx, PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[uint64]bool{}
	for _, ep := range rep.Epochs {
		blocks[ep.Block] = true
	}
	t.Logf("%d epochs in %d blocks, %v", len(rep.Epochs), len(blocks), time.Since(start).Round(time.Millisecond))
	if len(rep.Epochs) != 20 {
		t.Fatalf("%d epochs, want 20", len(rep.Epochs))
	}
	if len(blocks) > 4 {
		t.Fatalf("20 epochs sent back to back landed in %d blocks, want at most 4 (16 may be in flight at once)", len(blocks))
	}
}

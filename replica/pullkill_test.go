package replica

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/replica/homedir"
)

// Between two of the child's syncs: it syncs after epochs 4 and 8 and is killed once epoch 6
// is applied.
const (
	pullKillSyncEvery = 4
	pullKillAt        = 6
)

// TestPullKilledMidBatchChild is the process TestPullKilledMidBatch kills: it pulls with a
// sync every pullKillSyncEvery epochs and stops dead once epoch pullKillAt is applied, after
// the batch's last sync and before its next one.
func TestPullKilledMidBatchChild(t *testing.T) {
	s, ok := childSetupOf(t)
	if !ok {
		t.Skip("the child half of TestPullKilledMidBatch; it runs only when that test starts it")
	}
	pullSyncEvery = pullKillSyncEvery
	r := openChildMachine(t, s)
	ctx := WithProgress(context.Background(), func(p Progress) {
		if p.Phase == "landed" && p.Seq == pullKillAt {
			fmt.Println("KILL ME")
			time.Sleep(time.Hour)
		}
	})
	r.Pull(ctx, false)
	t.Fatal("the pull was not stopped")
}

// TestPullKilledMidBatch: a pull killed with SIGKILL between two syncs of its applied epochs
// leaves a store that reopens at the boundary of an epoch it applied, holding exactly the rows
// of the epochs up to it, and a pull after completes it.
func TestPullKilledMidBatch(t *testing.T) {
	e := newDevChainEnv(t)
	a := e.machine()
	w := &writer{t: t, r: a, m: model{}}
	const epochs = 10
	// 2.5 KB of noise: one row to a 4096 epoch, so the push cuts one epoch per row
	for n := range epochs {
		w.write(fmt.Sprintf("state/r%02d", n), noiseText(uint64(n), 2500))
	}
	if got := flushAll(t, a); got != epochs {
		t.Fatalf("the push made %d epochs, want %d", got, epochs)
	}

	// a fresh machine, set up by init; the child opens it and pulls
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	home := homedir.Home{Dir: t.TempDir()}
	pass := chainEnvPassphrase
	if _, err := Init(ctx, InitOptions{Home: home, Owner: crypto.PubkeyToAddress(e.owner.PublicKey), Tenant: e.tenant,
		RPC: e.rpc, Contract: e.contract, Client: e.conn(), Passphrase: &pass, KEK: e.kek()}); err != nil {
		t.Fatal(err)
	}
	setup := childSetup{Home: home.Dir, RPC: e.rpc, Contract: e.contract.Hex()}
	killChild(t, "TestPullKilledMidBatchChild", setup, fmt.Sprintf("epoch %d was applied", pullKillAt))

	r := openChildMachine(t, setup)
	defer r.Close()
	head, err := r.MirrorHead()
	if err != nil {
		t.Fatal(err)
	}
	// the last sync covered epoch pullKillAt-2; a kill keeps what was committed after it too
	if head.Seq < pullKillAt-2 || head.Seq > pullKillAt {
		t.Fatalf("the mirror reopened at seq %d, want between %d and %d", head.Seq, pullKillAt-2, pullKillAt)
	}
	want := model{}
	for n := 0; n < int(head.Seq); n++ {
		p := fmt.Sprintf("state/r%02d", n)
		want[p] = w.m[p]
	}
	if d := diffModels(want, viewOf(t, r, keysOf(w.m))); d != "" {
		t.Fatalf("after the restart, at seq %d: %s", head.Seq, d)
	}
	rep, err := r.Pull(ctx, false)
	if err != nil {
		t.Fatalf("the pull after the restart: %v", err)
	}
	if rep.Mirror.Seq != epochs || rep.Applied != epochs-int(head.Seq) {
		t.Fatalf("the pull after the restart reached seq %d with %d applied; want %d and %d", rep.Mirror.Seq, rep.Applied, epochs, epochs-int(head.Seq))
	}
	if d := diffModels(w.m, viewOf(t, r, keysOf(w.m))); d != "" {
		t.Fatalf("after the pull: %s", d)
	}
}

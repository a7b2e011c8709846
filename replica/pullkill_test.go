package replica

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
)

const pullKillEnv = "KINT_TEST_PULL_KILL"

// pullKillSetup is what the killed child needs to pull: the fresh machine's home and the chain.
type pullKillSetup struct {
	Home     string `json:"home"`
	RPC      string `json:"rpc"`
	Contract string `json:"contract"`
}

// Between two of the child's syncs: it syncs after epochs 4 and 8 and is killed once epoch 6
// is applied.
const (
	pullKillSyncEvery = 4
	pullKillAt        = 6
)

// openPullKill opens the fresh machine's replica in home on the chain at rpc.
func openPullKill(t *testing.T, s pullKillSetup) *Replica {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := chain.Dial(ctx, s.RPC, common.HexToAddress(s.Contract), chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	home := homedir.Home{Dir: s.Home}
	v, err := home.LoadVault()
	if err != nil {
		t.Fatal(err)
	}
	dek, err := home.LoadDEK(v.Space)
	if err != nil {
		t.Fatal(err)
	}
	v.Model = vault.ModelFull
	r, err := Open(Options{Home: home, Vault: v, DEK: dek, Client: c, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPullKilledMidBatchChild is the process TestPullKilledMidBatch kills: it pulls with a
// sync every pullKillSyncEvery epochs and stops dead once epoch pullKillAt is applied, after
// the batch's last sync and before its next one.
func TestPullKilledMidBatchChild(t *testing.T) {
	env := os.Getenv(pullKillEnv)
	if env == "" {
		t.Skip("the child half of TestPullKilledMidBatch; it runs only when that test starts it")
	}
	var s pullKillSetup
	if err := json.Unmarshal([]byte(env), &s); err != nil {
		t.Fatal(err)
	}
	pullSyncEvery = pullKillSyncEvery
	r := openPullKill(t, s)
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
	setup := pullKillSetup{Home: home.Dir, RPC: e.rpc, Contract: e.contract.Hex()}
	env, _ := json.Marshal(setup)
	child := exec.Command(os.Args[0], "-test.run=^TestPullKilledMidBatchChild$", "-test.count=1")
	child.Env = append(os.Environ(), pullKillEnv+"="+string(env))
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "KILL ME") {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			child.Wait()
			t.Fatalf("the child ended before epoch %d was applied", pullKillAt)
		}
	case <-time.After(5 * time.Minute):
		child.Process.Kill()
		t.Fatalf("the child never applied epoch %d", pullKillAt)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()

	r := openPullKill(t, setup)
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

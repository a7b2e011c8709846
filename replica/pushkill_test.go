package replica

import (
	"bufio"
	"context"
	"encoding/hex"
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

const pushKillEnv = "KINT_TEST_PUSH_KILL"

// pushKillSetup is what the killed child needs to push: the machine's home, its session key
// (a dev chain's throwaway key) and the chain.
type pushKillSetup struct {
	Home       string `json:"home"`
	SessionKey string `json:"session_key"`
	RPC        string `json:"rpc"`
	Contract   string `json:"contract"`
}

// The child is killed once epoch pushKillAt is applied: before the push has made any of its
// epochs' cache files durable (it does every ownCacheEvery epochs and at its end).
const (
	pushKillEpochs = 10
	pushKillAt     = 6
)

// openPushKill opens the machine's replica in the setup's home, able to push.
func openPushKill(t *testing.T, s pushKillSetup) *Replica {
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
	key, err := crypto.HexToECDSA(s.SessionKey)
	if err != nil {
		t.Fatal(err)
	}
	v.Model = vault.ModelFull
	r, err := Open(Options{Home: home, Vault: v, DEK: dek, Client: c, SessionKey: key, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPushKilledBeforeCacheChild is the process TestPushKilledBeforeCache kills: it pushes the
// staged rows and stops dead once epoch pushKillAt is applied.
func TestPushKilledBeforeCacheChild(t *testing.T) {
	env := os.Getenv(pushKillEnv)
	if env == "" {
		t.Skip("the child half of TestPushKilledBeforeCache; it runs only when that test starts it")
	}
	var s pushKillSetup
	if err := json.Unmarshal([]byte(env), &s); err != nil {
		t.Fatal(err)
	}
	r := openPushKill(t, s)
	r.SetPushHook(func(stage PushStage, seq uint64) error {
		if stage == StageApplied && seq == pushKillAt {
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
	e := newDevChainEnv(t)
	a := e.machine()
	w := &writer{t: t, r: a, m: model{}}
	// 2.5 KB of noise: one row to a 4096 epoch, so the push cuts one epoch per row
	for n := range pushKillEpochs {
		w.write(fmt.Sprintf("state/r%02d", n), noiseText(uint64(n), 2500))
	}
	opt := a.opt
	a.Close()

	setup := pushKillSetup{Home: opt.Home.Dir, SessionKey: hex.EncodeToString(crypto.FromECDSA(opt.SessionKey)),
		RPC: e.rpc, Contract: e.contract.Hex()}
	env, _ := json.Marshal(setup)
	child := exec.Command(os.Args[0], "-test.run=^TestPushKilledBeforeCacheChild$", "-test.count=1")
	child.Env = append(os.Environ(), pushKillEnv+"="+string(env))
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
			t.Fatalf("the child ended before epoch %d was applied", pushKillAt)
		}
	case <-time.After(5 * time.Minute):
		child.Process.Kill()
		t.Fatalf("the child never applied epoch %d", pushKillAt)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()

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
	if head.Seq != pushKillAt || len(pend) < pushKillAt {
		t.Fatalf("after the kill: mirror at seq %d with %d journal entries; want seq %d and every entry up to it kept", head.Seq, len(pend), pushKillAt)
	}
	if _, err := r.cache.Meta(pushKillAt); err == nil {
		t.Fatalf("epoch %d's cache files are in place although the push never made them durable", pushKillAt)
	}

	// the epochs the child sent after the one it was killed at are adopted, the rest pushed
	flushAll(t, r)
	if head, err := r.MirrorHead(); err != nil || head.Seq != pushKillEpochs {
		t.Fatalf("after the flush: mirror at seq %d (%v), want %d", head.Seq, err, pushKillEpochs)
	}
	if pend, err := r.PendingPushes(); err != nil || len(pend) != 0 {
		t.Fatalf("journal after the flush: %d entries, %v", len(pend), err)
	}
	for seq := uint64(1); seq <= pushKillEpochs; seq++ {
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

package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/chain/devchain"
	"kintfs/fs"
	"kintfs/replica"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// TestLostRaceTwoMachines: two machines (two KINT_HOMEs) on one real dev chain. While A's
// push of several epochs is in flight, B anchors the seq A's second epoch was signed for (a
// push hook makes the order certain). A's epoch reverts on chain: A's push is refused with
// ESTALE and exit 4, naming the seq; the warn line says the rows go out with the next flush;
// and the next flush (what a ctl flush runs) anchors every row of A exactly once.
func TestLostRaceTwoMachines(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dc := startDevchain(t)
	ownerKey := devchain.AccountKey(0)
	owner := crypto.PubkeyToAddress(ownerKey.PublicKey)
	pass := "lost race passphrase"
	type logged struct {
		mu    sync.Mutex
		lines []string
	}
	var space common.Hash
	machine := func(name string, log *logged) (*replica.Replica, *chain.Client) {
		t.Helper()
		r, c, sp := devMachine(t, ctx, dc, "race", pass, func(f string, a ...any) {
			line := fmt.Sprintf(f, a...)
			t.Logf("%s: %s", name, line)
			log.mu.Lock()
			log.lines = append(log.lines, line)
			log.mu.Unlock()
		})
		space = sp
		return r, c
	}
	write := func(r *replica.Replica, k, body string) {
		t.Helper()
		if _, err := r.Write(vault.Key{Tier: seal.TierState, Key: k}, []byte(body), time.Now()); err != nil {
			t.Fatal(err)
		}
	}

	var logA, logB logged
	a, c := machine("A", &logA)
	write(a, "seed", "the first epoch, so that B adopts the vault's key")
	if _, err := a.Push(ctx, replica.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	b, _ := machine("B", &logB)
	st, err := a.Status()
	if err != nil {
		t.Fatal(err)
	}
	seq := st.Mirror.Seq // A's push takes seq+1 on, B takes seq+2 from under it

	rows := noiseRows(t, a, "a", 40) // several epochs' worth at the vault's bucket
	write(b, "b", "B's row")
	var hookErr error
	a.SetPushHook(func(s replica.PushStage, at uint64) error {
		if s != replica.StageSent || at != seq+1 {
			return nil
		}
		// A's first epoch is sent; before its second is, B anchors the seq it is signed for
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			h, err := c.Head(ctx, owner, space)
			if err == nil && h.Seq >= seq+1 {
				break
			}
			if time.Now().After(deadline) {
				hookErr = fmt.Errorf("A's first epoch never landed (%v)", err)
				return hookErr
			}
		}
		if _, err := b.Pull(ctx, false); err != nil {
			hookErr = fmt.Errorf("B pull: %w", err)
			return hookErr
		}
		if _, err := b.Push(ctx, replica.PushOptions{}); err != nil {
			hookErr = fmt.Errorf("B push: %w", err)
			return hookErr
		}
		return nil
	})
	_, err = a.Push(ctx, replica.PushOptions{})
	a.SetPushHook(nil)
	if hookErr != nil {
		t.Fatal(hookErr)
	}
	if !errors.Is(err, replica.ErrChainMoved) {
		t.Fatalf("A's push: %v, want the lost race (ErrChainMoved)", err)
	}
	if en := fs.ErrnoOf(err); en != syscall.ESTALE {
		t.Errorf("A's push: errno %v, want ESTALE", en)
	}
	if code := exitCode(err); code != exitMoved {
		t.Errorf("A's push: exit %d, want %d", code, exitMoved)
	}
	for _, want := range []string{fmt.Sprintf("another machine anchored seq %d first", seq+2), "go out with the next flush"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("A's push: %q does not say %q", err, want)
		}
	}
	warned := false
	logA.mu.Lock()
	for _, l := range logA.lines {
		warned = warned || (strings.HasPrefix(l, "warn: ") && strings.Contains(l, fmt.Sprintf("lost the race for seq %d", seq+2)) &&
			strings.Contains(l, "go out with the next flush"))
	}
	logA.mu.Unlock()
	if !warned {
		t.Errorf("no warn line for the lost race in A's log")
	}

	// the next flush pulls B's epoch and anchors the rest of A's rows, once
	if err := a.Flush(ctx); err != nil {
		t.Fatalf("A's next flush: %v", err)
	}
	if p, err := a.PendingPushes(); err != nil || len(p) != 0 {
		t.Errorf("push journal after the flush: %d entries (%v)", len(p), err)
	}
	st, err = a.Status()
	if err != nil {
		t.Fatal(err)
	}
	if st.StagedRows != 0 {
		t.Errorf("after the flush: %d rows staged", st.StagedRows)
	}
	eps, err := a.Epochs()
	if err != nil {
		t.Fatal(err)
	}
	carried := 0
	for i, ep := range eps {
		if ep.Seq != uint64(i+1) {
			t.Fatalf("epoch %d at index %d", ep.Seq, i)
		}
		if ep.Seq > seq {
			carried += ep.Rows
		}
	}
	if carried != len(rows)+1 {
		t.Errorf("%d rows anchored after the seed, want the %d written (A's %d and B's one), each once", carried, len(rows)+1, len(rows))
	}
	if _, err := b.Pull(ctx, false); err != nil {
		t.Fatal(err)
	}
	for k, body := range rows {
		got, err := b.Content(vault.Key{Tier: seal.TierState, Key: k})
		if err != nil || string(got) != body {
			t.Errorf("B reads %s: %d bytes, %v", k, len(got), err)
		}
	}
}

// startDevchain starts a dev chain of the test's own, closed when the test ends.
func startDevchain(t *testing.T) *devchain.DevChain {
	t.Helper()
	dc, err := devchain.Start(devchain.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close() })
	return dc
}

// devMachine is a machine of its own (a KINT_HOME in a temporary directory) connected to the
// vault of the dev chain's owner with tenant, with a funded, authorized session key: the
// engine as a mount runs it, without the mount.
func devMachine(t *testing.T, ctx context.Context, dc *devchain.DevChain, tenant, pass string, logf func(string, ...any)) (*replica.Replica, *chain.Client, common.Hash) {
	t.Helper()
	ownerKey := devchain.AccountKey(0)
	c, err := chain.Dial(ctx, dc.Info().RPC, dc.Contract(), chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	home := homedir.Home{Dir: t.TempDir()}
	res, err := replica.Init(ctx, replica.InitOptions{Home: home, Owner: crypto.PubkeyToAddress(ownerKey.PublicKey), Tenant: tenant,
		RPC: dc.Info().RPC, Contract: dc.Contract(), Client: c, Passphrase: &pass, NewVault: true})
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	addr := crypto.PubkeyToAddress(key.PublicKey)
	if err := c.Fund(ctx, ownerKey, addr, new(big.Int).Exp(big.NewInt(10), big.NewInt(19), nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetSessionKey(ctx, ownerKey, addr, uint64(time.Now().Add(24*time.Hour).Unix())); err != nil {
		t.Fatal(err)
	}
	dek, err := home.LoadDEK(res.Vault.Space)
	if err != nil {
		t.Fatal(err)
	}
	r, err := replica.Open(replica.Options{Home: home, Vault: res.Vault, DEK: dek, Client: c, SessionKey: key, Confirmations: 1, Log: newLineLog(func(l string) { logf("%s", l) }, slog.LevelDebug, "")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, c, res.Vault.Space
}

// noiseRows writes n rows of incompressible text (about 1 KB each) named prefix-NN into r's
// state tier, four or so to an epoch, and returns them.
func noiseRows(t *testing.T, r *replica.Replica, prefix string, n int) map[string]string {
	t.Helper()
	rows := map[string]string{}
	for i := range n {
		buf := make([]byte, 768)
		if _, err := rand.Read(buf); err != nil {
			t.Fatal(err)
		}
		k := fmt.Sprintf("%s-%02d", prefix, i)
		rows[k] = base64.StdEncoding.EncodeToString(buf)
		if _, err := r.Write(vault.Key{Tier: seal.TierState, Key: k}, []byte(rows[k]), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return rows
}

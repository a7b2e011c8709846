package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"kintfs/replica/vault"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain/devchain"
	"kintfs/chain/rpcproxy"
	"kintfs/replica/homedir"
)

// BenchmarkColdRestore: a vault of KINT_BENCH_EPOCHS (2,000) one-row epochs on a real dev
// chain, pushed back to back, is restored by a fresh machine (init, then pull) through a proxy
// adding KINT_BENCH_DELAY_MS (50) to every request, as a hosted RPC would. The data key is
// derived once beforehand, so init's scrypt run is not in the time. It logs a bench-restore
// line (make bench's restore step keeps it). Run it with -benchtime=1x: each round builds its
// own vault.
func BenchmarkColdRestore(b *testing.B) {
	epochs := int(envInt("KINT_BENCH_EPOCHS", 2000))
	delay := time.Duration(envInt("KINT_BENCH_DELAY_MS", 50)) * time.Millisecond
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dc, err := devchain.Start(devchain.Config{DataDir: b.TempDir(), HTTPAddr: "127.0.0.1:0"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { dc.Close() })
		proxy, err := rpcproxy.Start(dc.Info().RPC, "")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(proxy.Close)
		e := &chainEnv{t: b, dc: dc, owner: devchain.AccountKey(0), contract: dc.Contract(), rpc: proxy.URL, tenant: "restore"}
		a := e.machineWith(func(string, ...any) {}) // 2,000 lines of epochs anchored say nothing here
		w := &writer{t: b, r: a, m: model{}}
		// 2.5 KB of noise: one row to a 4096 epoch, so the push cuts one epoch per row
		for n := range epochs {
			w.write(fmt.Sprintf("state/r%05d", n), noiseText(uint64(n), 2500))
		}
		t0 := time.Now()
		if got := flushAll(b, a); got != epochs {
			b.Fatalf("the push made %d epochs, want %d", got, epochs)
		}
		b.Logf("%d epochs pushed in %s", epochs, time.Since(t0).Round(time.Millisecond))
		for _, m := range rpcMethods {
			proxy.SetRule(m, rpcproxy.Rule{Delay: delay})
		}
		kek := e.kek()
		proxy.ResetStats()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		b.StartTimer()
		start := time.Now()
		fresh := restoreInit(b, ctx, e, kek)
		initSecs := time.Since(start).Seconds()
		rep, err := fresh.Pull(ctx, false)
		total := time.Since(start).Seconds()
		b.StopTimer()
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if rep.Mirror.Seq != uint64(epochs) || rep.Applied != epochs {
			b.Fatalf("pulled to seq %d, %d applied; want %d", rep.Mirror.Seq, rep.Applied, epochs)
		}
		if d := diffModels(w.m, viewOf(b, fresh, keysOf(w.m))); d != "" {
			b.Fatalf("restored: %s", d)
		}
		b.ReportMetric(total, "s/restore")
		b.ReportMetric(initSecs, "s/init")
		line, _ := json.Marshal(map[string]any{"epochs": epochs, "delay_ms": delay.Milliseconds(), "seconds": total,
			"init_seconds": initSecs, "pull_seconds": total - initSecs, "requests": proxy.Stats().Requests,
			"cpus": runtime.NumCPU()})
		b.Logf("bench-restore: %s", line)
	}
}

// restoreInit is init of a fresh machine on e's vault, opened for reading: what a cold
// restore does before its pull.
func restoreInit(b *testing.B, ctx context.Context, e *chainEnv, kek *[32]byte) *Replica {
	b.Helper()
	c := e.conn()
	home := homedir.Home{Dir: b.TempDir()}
	pass := chainEnvPassphrase
	res, err := Init(ctx, InitOptions{Home: home, Owner: crypto.PubkeyToAddress(e.owner.PublicKey), Tenant: e.tenant,
		RPC: e.rpc, Contract: e.contract, Client: c, Passphrase: &pass, KEK: kek})
	if err != nil {
		b.Fatal(err)
	}
	dek, err := home.LoadDEK(res.Vault.Space)
	if err != nil {
		b.Fatal(err)
	}
	res.Vault.Model = vault.ModelFull
	r, err := Open(Options{Home: home, Vault: res.Vault, DEK: dek, Client: c, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

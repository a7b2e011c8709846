package integration

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"kintfs/chain/rpcproxy"
	"kintfs/fs"
	"kintfs/replica"
)

// TestRPCThatNeverAnswers: an RPC that takes requests and never answers (a black hole, as a
// dead load balancer is) under a running mount. A ctl flush is given up on within 10 s with
// EHOSTUNREACH (not ENOTCONN, which says the mount died), push and pull exit 5 naming the RPC
// and status answers, each within 10 s; the mount answers reads and writes throughout, and
// once the RPC answers again the staged rows are anchored.
func TestRPCThatNeverAnswers(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "blackhole")
	a.connect("pw")
	proxy := startRPCProxy(t, dc.info.RPC)
	a.useRPC(proxy.URL)
	mt := a.mount()
	writeFile(t, mt.path("state/before"), "anchored")
	mt.mustCtl("flush")

	for _, m := range latencyMethods {
		proxy.SetRule(m, rpcproxy.Rule{Hold: true})
	}
	// reads and writes on the mount go on while the chain hangs
	var ops, slow atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s := time.Now()
			p := mt.path(fmt.Sprintf("state/during%d", i%5))
			if err := os.WriteFile(p, []byte(fmt.Sprint(i)), 0o644); err != nil {
				t.Errorf("write during the black hole: %v", err)
				return
			}
			if b, err := os.ReadFile(mt.path("state/before")); err != nil || string(b) != "anchored" {
				t.Errorf("read during the black hole: %q %v", b, err)
				return
			}
			if time.Since(s) > 5*time.Second {
				slow.Add(1)
			}
			ops.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
	}()

	start := time.Now()
	err := mt.ctl("flush")
	took := time.Since(start)
	if errnoOf(err) != syscall.EHOSTUNREACH || took > 10*time.Second {
		t.Errorf("ctl flush into a black hole: %v after %v, want EHOSTUNREACH within 10s", err, took)
	} else {
		t.Logf("ctl flush into a black hole: %v after %v", err, took.Round(time.Millisecond))
	}
	for _, args := range [][]string{{"push"}, {"pull"}, {"status"}} {
		start := time.Now()
		_, errs, code := a.run("", args...)
		took := time.Since(start)
		want := 5
		if args[0] == "status" {
			want = 0
		}
		if code != want || took > 10*time.Second {
			t.Errorf("kintfs %s into a black hole: exit %d after %v, want %d within 10s: %q", args[0], code, took, want, errs)
		} else {
			t.Logf("kintfs %s into a black hole: exit %d in %v: %s", args[0], code, took.Round(time.Millisecond), strings.TrimSpace(errs))
		}
		if want == 5 && !strings.Contains(errs, "cannot reach the RPC "+proxy.URL) {
			t.Errorf("kintfs %s does not name the RPC: %q", args[0], errs)
		}
	}
	close(stop)
	<-done
	t.Logf("%d reads and writes on the mount while the chain hung, %d slower than 5s", ops.Load(), slow.Load())
	if ops.Load() < 10 || slow.Load() > 0 {
		t.Errorf("the mount did not go on answering: %d operations, %d slower than 5s", ops.Load(), slow.Load())
	}
	if strings.Contains(mt.log.String(), "transport endpoint") {
		t.Errorf("the log speaks of a dead mount:\n%s", mt.log.String())
	}

	proxy.ClearRules()
	proxy.Release(false)
	eventually(t, 60*time.Second, "a flush once the RPC answers", func() error { return mt.ctl("flush") })
	if st := mt.status(); st["staged_rows"].(float64) != 0 {
		t.Fatalf("after the RPC came back: %v staged", st["staged_rows"])
	}
}

// TestUnfundedSessionKey: a session key that is authorized but holds no ETH. The ctl flush
// fails with EKEYREJECTED and the log, and kintfs push (exit 3, never 1), name the address to
// fund and the amount short; the row stays staged.
func TestUnfundedSessionKey(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "unfunded")
	a.mustRun("pw\n", "init", "--owner", a.owner(), "--new-vault", "--passphrase-stdin")
	out := a.mustRun("", "session-key", "create")
	addr := strings.Fields(out)[2]
	a.extra = append(a.extra, "KINT_OWNER_KEY="+dc.ownerKeyHex())
	a.mustRun("", "authorize")
	a.extra = a.extra[:len(a.extra)-1]
	mt := a.mount()
	writeFile(t, mt.path("state/x"), "waits for funds")
	err := mt.ctl("flush")
	if en := errnoOf(err); !fs.IsKeyErrno(en) || en != fs.ErrnoOf(replica.ErrNotAuthorized) {
		t.Errorf("ctl flush with an unfunded key: %v, want EKEYREJECTED\n%s", err, mt.log.String())
	}
	mt.waitLog("the address to fund and the amount short", "fund "+addr, "ETH short")
	_, errs, code := a.run("", "push")
	if code != 3 || !strings.Contains(errs, "fund "+addr) || !strings.Contains(errs, "ETH short") {
		t.Errorf("kintfs push with an unfunded key: exit %d, %q; want 3 naming the address and the amount", code, errs)
	} else {
		t.Logf("kintfs push with an unfunded key: exit %d: %s", code, strings.TrimSpace(errs))
	}
	if st := mt.status(); st["staged_rows"].(float64) != 1 {
		t.Errorf("the row is not staged any more: %v", st["staged_rows"])
	}
}

// TestGasPriceOverCap: with KINT_MAX_GAS_PRICE_GWEI below the dev chain's price, a ctl flush
// is refused with ERANGE and kintfs push exits 5, both naming the price, the cap and how to
// raise it; nothing is sent (the chain's head stays), and the row stays staged until a mount
// without the cap anchors it.
func TestGasPriceOverCap(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "gascap")
	a.connect("pw")
	a.extra = append(a.extra, "KINT_MAX_GAS_PRICE_GWEI=0.000000001") // 1 wei per gas
	mt := a.mount()
	seq := mt.mirrorSeq()
	writeFile(t, mt.path("state/x"), "waits for a cheaper block")
	err := mt.ctl("flush")
	if errnoOf(err) != syscall.ERANGE {
		t.Errorf("ctl flush over the cap: %v, want ERANGE\n%s", err, mt.log.String())
	}
	mt.waitLog("the cap and how to raise it", "the cap 0.000000001 gwei", "KINT_MAX_GAS_PRICE_GWEI")
	_, errs, code := a.run("", "push")
	if code != 5 || !strings.Contains(errs, "the chain's gas price is ") || !strings.Contains(errs, "the cap 0.000000001 gwei") ||
		!strings.Contains(errs, "raise the cap (KINT_MAX_GAS_PRICE_GWEI") {
		t.Errorf("kintfs push over the cap: exit %d, %q; want 5 naming the price, the cap and the way out", code, errs)
	} else {
		t.Logf("kintfs push over the cap: exit %d: %s", code, strings.TrimSpace(errs))
	}
	mt.mustCtl("pull") // nothing was anchored: the chain holds what it held
	if st, now := mt.status(), mt.mirrorSeq(); st["staged_rows"].(float64) != 1 || now != seq {
		t.Errorf("after the refusals: %v staged, seq %d (was %d)", st["staged_rows"], now, seq)
	}
	mt.kill() // its unmount flush would be refused too
	a.extra = a.extra[:len(a.extra)-1]
	mt = a.mount()
	eventually(t, 60*time.Second, "a flush without the cap", func() error { return mt.ctl("flush") })
	if st := mt.status(); st["staged_rows"].(float64) != 0 {
		t.Errorf("without the cap: %v staged", st["staged_rows"])
	}
}

package integration

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"kintfs/chain/rpcproxy"
)

// latencyMethods are the RPC methods a mount, pull or push calls.
var latencyMethods = []string{"eth_chainId", "eth_call", "eth_getLogs", "eth_getTransactionByHash", "eth_getBlockByNumber",
	"eth_blockNumber", "eth_getTransactionReceipt", "eth_estimateGas", "eth_maxPriorityFeePerGas", "eth_gasPrice",
	"eth_getTransactionCount", "eth_sendRawTransaction", "eth_getBalance", "eth_getCode", "net_version", "eth_getBlockByHash"}

// startLatencyProxy is a proxy to the dev chain that answers every call delay late.
func startLatencyProxy(t *testing.T, dc *devChain, delay time.Duration) *rpcproxy.Proxy {
	t.Helper()
	p := startRPCProxy(t, dc.info.RPC)
	for _, m := range latencyMethods {
		p.SetRule(m, rpcproxy.Rule{Delay: delay})
	}
	return p
}

// pushEpochs anchors n epochs of one row each through the mount, the rows entity/things/tNNNN.
func pushEpochs(t *testing.T, mt *mounted, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		writeFile(t, mt.path(fmt.Sprintf("entity/things/t%04d", i)), fmt.Sprintf(`{"n":%d}`, i))
		mt.mustCtl("flush")
	}
}

// TestReadyMeansCurrent: a fresh machine mounting a 50-epoch vault through a proxy that adds
// 50 ms to each request says it is ready (the --daemon return, the log line) only once every
// row is there, and a stat issued while the first pull runs finds its row instead of ENOENT.
// With the RPC down the mount is ready at once and says it is offline.
func TestReadyMeansCurrent(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "ready")
	a.connect("ready passphrase")
	ma := a.mount()
	const epochs = 50
	pushEpochs(t, ma, 1, epochs)
	ma.unmount()
	proxy := startLatencyProxy(t, dc, 50*time.Millisecond)

	// --daemon: when it returns, every row reads
	b := newMachine(t, dc, "ready")
	b.useRPC(proxy.URL)
	b.mustRun("ready passphrase\n", "init", "--owner", a.owner(), "--passphrase-stdin")
	dir := filepath.Join(t.TempDir(), "mnt")
	os.MkdirAll(dir, 0o755)
	logFile := filepath.Join(t.TempDir(), "log")
	start := time.Now()
	out := b.mustRun("", "mount", "--daemon", "--log-file", logFile, dir)
	t.Cleanup(func() { exec.Command("fusermount3", "-u", dir).Run() })
	t.Logf("--daemon returned after %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
	if !strings.Contains(out, "ready, current: at seq 50") {
		t.Errorf("--daemon output does not say the mount is current at seq 50: %q", out)
	}
	missing := 0
	for i := 1; i <= epochs; i++ {
		if got, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("entity/things/t%04d", i))); err != nil || string(got) != fmt.Sprintf(`{"n":%d}`, i) {
			missing++
			t.Errorf("row %d right after --daemon returned: %q %v", i, got, err)
		}
	}
	if missing == 0 {
		t.Logf("all %d rows read right after --daemon returned", epochs)
	}
	b.mustRun("", "unmount", dir)
	log, _ := os.ReadFile(logFile)
	if !strings.Contains(string(log), "ready, current: at seq 50") {
		t.Errorf("the log has no ready line naming seq 50:\n%s", log)
	}

	// a stat while the first pull runs waits for the row: the pull is held at its first
	// calldata fetch until the stat has been issued
	c := newMachine(t, dc, "ready")
	c.useRPC(proxy.URL)
	c.mustRun("ready passphrase\n", "init", "--owner", a.owner(), "--passphrase-stdin")
	proxy.SetRule("eth_getTransactionByHash", rpcproxy.Rule{Delay: 50 * time.Millisecond, Hold: true})
	dir2 := filepath.Join(t.TempDir(), "mnt")
	os.MkdirAll(dir2, 0o755)
	mt := &mounted{t: t, dir: dir2, log: &syncBuffer{}}
	mt.cmd = exec.Command(kintfsBin, "mount", "--poll", "1s", dir2)
	mt.cmd.Env = c.env()
	mt.cmd.Stdout, mt.cmd.Stderr = mt.log, mt.log
	if err := mt.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mt.unmount)
	eventually(t, 60*time.Second, "the mount answers", func() error {
		if !strings.Contains(mt.log.String(), "serving "+dir2) {
			return fmt.Errorf("not serving yet")
		}
		_, err := os.Stat(mt.path(".kint/status"))
		return err
	})
	if strings.Contains(mt.log.String(), "ready,") {
		t.Fatalf("ready before the held pull went on:\n%s", mt.log.String())
	}
	type result struct {
		err  error
		took time.Duration
	}
	statted := make(chan result, 1)
	tid := make(chan int, 1)
	go func() {
		runtime.LockOSThread() // the thread the signals below go to
		defer runtime.UnlockOSThread()
		tid <- threadID()
		s := time.Now()
		_, err := os.Stat(mt.path(fmt.Sprintf("entity/things/t%04d", epochs)))
		statted <- result{err, time.Since(s)}
	}()
	// signals to the waiting thread (handled, restarting the call) make the kernel interrupt
	// its lookup: the stat must still wait for the row, not answer that it does not exist
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGUSR1)
	defer signal.Stop(sigs)
	waiter := <-tid
	for i := 0; i < 5; i++ {
		time.Sleep(200 * time.Millisecond)
		if err := interruptThread(waiter); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case r := <-statted:
		t.Fatalf("the stat returned (%v) while the pull was held, before the row could be there:\n%s", r.err, mt.log.String())
	case <-time.After(200 * time.Millisecond):
	}
	proxy.SetRule("eth_getTransactionByHash", rpcproxy.Rule{Delay: 50 * time.Millisecond})
	proxy.Release(true)
	select {
	case r := <-statted:
		if r.err != nil {
			t.Errorf("stat during the first pull: %v after %v, want the row", r.err, r.took)
		} else {
			t.Logf("stat issued during the first pull found the row after %v", r.took.Round(time.Millisecond))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the stat did not return:\n%s", mt.log.String())
	}
	eventually(t, 60*time.Second, "the ready line", func() error {
		if !strings.Contains(mt.log.String(), "ready, current: at seq 50") {
			return fmt.Errorf("no ready line")
		}
		return nil
	})
	mt.unmount()

	// the RPC down: ready at once, offline said
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadURL := "http://" + dead.Addr().String()
	dead.Close()
	b.useRPC(deadURL)
	start = time.Now()
	out = b.mustRun("", "mount", "--daemon", "--log-file", logFile, dir)
	took := time.Since(start)
	if !strings.Contains(out, "ready, offline: cannot reach the RPC "+deadURL) || took > 20*time.Second {
		t.Errorf("--daemon with the RPC down: %q after %v, want offline said", out, took)
	} else {
		t.Logf("--daemon with the RPC down returned after %v: %s", took.Round(time.Millisecond), strings.TrimSpace(out))
	}
	if got := readFile(t, filepath.Join(dir, "entity/things/t0001")); got != `{"n":1}` {
		t.Errorf("offline mount serves %q", got)
	}
	b.run("", "unmount", dir) // its flush finds the RPC down: exit 5, unmounted all the same
}

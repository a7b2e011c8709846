package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"kintfs/chain/rpcproxy"
)

// TestRestoreLatencyBench measures a cold restore (init and pull on a fresh machine) of a
// vault of KINT_BENCH_RESTORE epochs through a proxy that adds KINT_BENCH_DELAY_MS (default
// 50) to every HTTP request, as a hosted RPC would. KINT_BENCH_BEFORE names another kintfs
// binary to measure the same way, for a before/after; KINT_BENCH_PROFILE a directory for a CPU
// profile of each pull. Skipped unless KINT_BENCH_RESTORE is set.
func TestRestoreLatencyBench(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KINT_BENCH_RESTORE"))
	if n <= 0 {
		t.Skip("KINT_BENCH_RESTORE is not set: the restore benchmark did not run")
	}
	requireFUSE(t)
	delay := 50 * time.Millisecond
	if ms, err := strconv.Atoi(os.Getenv("KINT_BENCH_DELAY_MS")); err == nil {
		delay = time.Duration(ms) * time.Millisecond
	}
	dc := startDevchain(t)
	c := dc.client(t)
	a := newMachine(t, dc, "bench-restore")
	a.connect("bench restore passphrase")
	ma := a.mount()
	start := time.Now()
	for i := 1; i <= n; i++ {
		writeFile(t, ma.path(fmt.Sprintf("entity/things/t%04d", i)), fmt.Sprintf(`{"n":%d}`, i))
		ma.mustCtl("flush")
	}
	t.Logf("%d epochs pushed in %s", n, time.Since(start).Round(time.Millisecond))
	if h := chainHead(t, c, a); h.Seq != uint64(n) {
		t.Fatalf("head at seq %d, want %d", h.Seq, n)
	}
	proxy := startRPCProxy(t, dc.info.RPC)
	for _, m := range []string{"eth_chainId", "eth_call", "eth_getLogs", "eth_getTransactionByHash", "eth_getBlockByNumber",
		"eth_blockNumber", "eth_getTransactionReceipt", "eth_estimateGas", "eth_maxPriorityFeePerGas",
		"eth_getTransactionCount", "eth_sendRawTransaction", "eth_getBalance", "eth_getCode", "net_version"} {
		proxy.SetRule(m, rpcproxy.Rule{Delay: delay})
	}
	bins := []struct{ name, path string }{{"this build", kintfsBin}}
	if p := os.Getenv("KINT_BENCH_BEFORE"); p != "" {
		bins = append([]struct{ name, path string }{{"before", p}}, bins...)
	}
	saved := kintfsBin
	defer func() { kintfsBin = saved }()
	for _, bin := range bins {
		kintfsBin = bin.path
		b := newMachine(t, dc, "bench-restore")
		b.useRPC(proxy.URL)
		if dir := os.Getenv("KINT_BENCH_PROFILE"); dir != "" {
			b.extra = append(b.extra, "KINTFS_CPUPROFILE="+filepath.Join(dir, strings.ReplaceAll(bin.name, " ", "-")+".pprof"))
		}
		proxy.ResetStats()
		start := time.Now()
		b.mustRun("bench restore passphrase\n", "init", "--owner", a.owner(), "--passphrase-stdin")
		initTime := time.Since(start)
		initReqs := proxy.Stats().Requests
		out := b.mustRun("", "pull", "--json")
		total := time.Since(start)
		st := proxy.Stats()
		var rep pullReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Mirror.Seq != uint64(n) {
			t.Fatalf("%s: pull: %s (%v)", bin.name, out, err)
		}
		methods, _ := json.Marshal(st.Methods)
		t.Logf("%s: cold restore of %d epochs at %s per request: %.2f s (init %.2f s, %d requests), %d requests (%.3f per epoch), %d calls; %s",
			bin.name, n, delay, total.Seconds(), initTime.Seconds(), initReqs, st.Requests, float64(st.Requests)/float64(n), st.Calls, methods)
		recordFigure(t, "cold restore, "+bin.name, "%d epochs at %s/request: %.2f s, %d requests (%.3f per epoch)",
			n, delay, total.Seconds(), st.Requests, float64(st.Requests)/float64(n))
	}
}

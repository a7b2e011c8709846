package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// noiseText is n characters of seeded noise from 64 letters: text that barely compresses.
func noiseText(seed uint64, n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ."
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

// pushOf writes rows and pushes them, failing the test on an error.
func pushOf(t *testing.T, r *Replica, rows map[string]string) *PushReport {
	t.Helper()
	for k, body := range rows {
		if _, err := r.Write(vault.Key{Tier: seal.TierState, Key: k}, []byte(body), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := r.Push(ctx, PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rep.Epochs {
		// the gas each push is charged is the EIP-7623 floor: what a dry run reports
		if e.GasUsed != e.FloorGas {
			t.Errorf("epoch %d: gas used %d, floor %d", e.Seq, e.GasUsed, e.FloorGas)
		}
	}
	return rep
}

func buckets(rep *PushReport) []int {
	var out []int
	for _, e := range rep.Epochs {
		out = append(out, e.Bucket)
	}
	return out
}

func maxBucket(rep *PushReport) int {
	b := 0
	for _, e := range rep.Epochs {
		b = max(b, e.Bucket)
	}
	return b
}

// benchLine logs what a test measured as one line, "name: {json}", which make bench
// (scripts/benchtool) reads from the output of go test -v.
func benchLine(t *testing.T, name string, v map[string]any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s", name, data)
}

// The numbers of issue 30, from receipts on a real dev chain: after a bulk import of 200 rows
// of 1 KB of text, a one-line edit costs what it costs in a vault that never had the import
// (kint's ratchet made it about 20x), and the import costs about what kint's 90 KB epochs do.
func TestBucketPolicyLowKeepsEditsCheap(t *testing.T) {
	// make bench runs this on the dev chain it started
	dev, prefix := benchChainEnv(t, "KINT_BENCH_DEVCHAIN"), ""
	if dev != nil {
		prefix = dev.tenant + "-"
	} else {
		dev = newDevChainEnv(t)
	}
	newVault := func(tenant, policy string) *Replica {
		e := *dev
		e.tenant = prefix + tenant
		r := e.machine()
		if policy != "" {
			if err := r.SetBucketPolicy(policy); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	var fresh, low, kint *Replica
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); fresh = newVault("cost-fresh", "") }()
	go func() { defer wg.Done(); low = newVault("cost-low", PolicyLow) }()
	go func() { defer wg.Done(); kint = newVault("cost-kint", PolicyKint) }()
	wg.Wait()
	if t.Failed() {
		return
	}

	imp := map[string]string{}
	for i := range 200 {
		imp[fmt.Sprintf("import-%03d", i)] = noiseText(uint64(i), 1024)
	}
	edited := strings.Replace(imp["import-007"], imp["import-007"][:40], "one line changed by hand, nothing else..", 1)
	edit := map[string]string{"import-007": edited}

	// a dry run says beforehand what the import will take
	for k, body := range imp {
		if _, err := low.Write(vault.Key{Tier: seal.TierState, Key: k}, []byte(body), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plan, err := low.Push(ctx, PushOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if plan.GasPrice == "" || plan.CostETH == "" || plan.CostETH == "0" || !strings.Contains(plan.L1Note, "no GasPriceOracle") {
		t.Errorf("dry run: gas price %q, cost %q ETH, L1 note %q", plan.GasPrice, plan.CostETH, plan.L1Note)
	}

	lowImport := pushOf(t, low, imp)
	kintImport := pushOf(t, kint, imp)
	g0 := pushOf(t, fresh, edit)
	lowEdit := pushOf(t, low, edit)
	kintEdit := pushOf(t, kint, edit)

	if len(plan.Plan) != len(lowImport.Epochs) || plan.Gas < lowImport.Gas*99/100 || plan.Gas > lowImport.Gas*101/100 {
		t.Errorf("dry run planned %d epochs, gas %d; the push took %d epochs, gas %d", len(plan.Plan), plan.Gas, len(lowImport.Epochs), lowImport.Gas)
	}
	for _, b := range buckets(lowImport) {
		if b != 4096 {
			t.Fatalf("policy low: import buckets %v, want 4096 each", buckets(lowImport))
		}
	}
	if len(lowImport.Raised) != 0 {
		t.Errorf("policy low raised the bucket: %+v", lowImport.Raised)
	}
	if bs := buckets(kintImport); bs[0] != 98304 || len(kintImport.Raised) != 1 {
		t.Errorf("policy kint: import buckets %v, raised %+v", bs, kintImport.Raised)
	}
	editRatio := float64(lowEdit.Gas) / float64(g0.Gas)
	kintRatio := float64(kintEdit.Gas) / float64(g0.Gas)
	importRatio := float64(lowImport.Gas) / float64(kintImport.Gas)
	t.Logf("fresh edit: gas %d (%s ETH); after the import, policy low: gas %d (%.2fx), policy kint: gas %d (%.1fx)",
		g0.Gas, g0.CostETH, lowEdit.Gas, editRatio, kintEdit.Gas, kintRatio)
	t.Logf("import of 200 rows of 1 KB: policy low %d epochs, gas %d (%s ETH); policy kint %d epochs, gas %d (%s ETH): %.3fx",
		len(lowImport.Epochs), lowImport.Gas, lowImport.CostETH, len(kintImport.Epochs), kintImport.Gas, kintImport.CostETH, importRatio)
	// the line make bench reads (scripts/benchtool, step bucket)
	benchLine(t, "bench-bucket", map[string]any{
		"low_import_epochs": len(lowImport.Epochs), "low_import_bucket": maxBucket(lowImport), "low_import_gas": lowImport.Gas,
		"kint_import_epochs": len(kintImport.Epochs), "kint_import_bucket": maxBucket(kintImport), "kint_import_gas": kintImport.Gas,
		"fresh_edit_bucket": maxBucket(g0), "fresh_edit_gas": g0.Gas, "low_edit_bucket": maxBucket(lowEdit), "low_edit_gas": lowEdit.Gas,
		"kint_edit_bucket": maxBucket(kintEdit), "kint_edit_gas": kintEdit.Gas,
		"edit_ratio": editRatio, "kint_edit_ratio": kintRatio, "import_ratio": importRatio})
	if editRatio > 1.1 {
		t.Errorf("a one-line edit after the import costs %.2fx a fresh vault's, want at most 1.1x", editRatio)
	}
	if importRatio > 1.25 {
		t.Errorf("the import costs %.3fx kint's 90 KB epochs, want at most 1.25x", importRatio)
	}
	if kintRatio < 5 {
		t.Errorf("policy kint: an edit after the import costs only %.1fx: the ratchet should show", kintRatio)
	}
	if lowEdit.CostETH == "" || lowEdit.CostWei == "0" || lowEdit.Epochs[0].CostETH == "" {
		t.Errorf("push report without ETH: %+v", lowEdit)
	}
}

// A row too large for the vault's bucket raises it only as far as the row needs, and says so in
// the log and the push report; the bucket then stays there.
func TestBucketPolicyLowRaisesForALargeRow(t *testing.T) {
	e := newDevChainEnv(t)
	var mu sync.Mutex
	var logs []string
	r := e.machineWith(func(f string, a ...any) {
		mu.Lock()
		logs = append(logs, fmt.Sprintf(f, a...))
		mu.Unlock()
	})
	pushOf(t, r, map[string]string{"small": "one line"})
	rep := pushOf(t, r, map[string]string{"large": noiseText(1, 11000)})
	if len(rep.Raised) != 1 || rep.Raised[0].From != 4096 || rep.Raised[0].To != 16384 || !strings.Contains(rep.Raised[0].Why, "row state large does not fit") {
		t.Fatalf("raised: %+v", rep.Raised)
	}
	mu.Lock()
	found := false
	for _, l := range logs {
		found = found || strings.Contains(l, "raises the vault's bucket from 4096 to 16384 for good (row state large")
	}
	mu.Unlock()
	if !found {
		t.Errorf("no log line for the raise: %q", logs)
	}
	after := pushOf(t, r, map[string]string{"small": "another line"})
	if b := buckets(after); len(b) != 1 || b[0] != 16384 || len(after.Raised) != 0 {
		t.Errorf("after the raise: buckets %v, raised %+v", b, after.Raised)
	}
}

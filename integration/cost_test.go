package integration

import (
	"encoding/json"
	"strings"
	"testing"
)

// Cost is seen before and after: push --dry-run, ctl flush dry-run, status and doctor say what
// the next flush would take and cost in ETH; a push reports what it cost; the bucket policy is
// a per-vault setting, and a bad one is refused.
func TestCostBeforeAndAfter(t *testing.T) {
	dc := startDevchain(t)
	m := newMachine(t, dc, "cost")
	m.connect("cost passphrase")
	mt := m.mount()
	defer mt.unmount()

	writeFile(t, mt.path("state/a"), "one line\n")
	writeFile(t, mt.path("state/b"), "another line\n")

	out := m.mustRun("", "push", "--dry-run")
	for _, want := range []string{"would anchor 2 rows and 0 deletions in 1 epoch(s); nothing sent",
		"epoch 1: 2 rows, 0 deleted, bucket 4096, ", " calldata bytes, gas ", " ETH", "total: 1 epoch(s), gas ",
		"gas price: ", "(bucket policy low)", "no L1 data fee reported: no GasPriceOracle at 0x420000000000000000000000000000000000000F"} {
		if !strings.Contains(out, want) {
			t.Errorf("push --dry-run: no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, " wei") {
		t.Errorf("push --dry-run prints wei:\n%s", out)
	}

	mt.mustCtl("flush dry-run")
	st := mt.status()
	ld, _ := st["last_dry_run"].(map[string]any)
	rep, _ := ld["report"].(map[string]any)
	plan, _ := rep["plan"].([]any)
	if len(plan) != 1 || rep["cost_eth"] == "" || rep["cost_wei"] == "" || rep["dry_run"] != true {
		t.Fatalf("last_dry_run after ctl flush dry-run: %v", st["last_dry_run"])
	}
	if st["staged_rows"].(float64) != 2 || st["last_push"] != nil {
		t.Fatalf("a dry run anchored something: %v", st)
	}

	out = m.mustRun("", "status")
	if !strings.Contains(out, "next flush would cost: 1 epoch(s), bucket 4096, gas ") || !strings.Contains(out, " ETH at the current gas price") {
		t.Errorf("status does not say what the next flush costs:\n%s", out)
	}
	out, _, _ = m.run("", "doctor")
	if !strings.Contains(out, "next flush") || !strings.Contains(out, "ETH at the current gas price") {
		t.Errorf("doctor does not say what the next flush costs:\n%s", out)
	}

	out, errs, code := m.run("", "bucket-policy", "cheap")
	if code != 2 || !strings.Contains(errs, `bucket-policy "cheap": one of low, kint`) {
		t.Errorf("bucket-policy cheap: exit %d, %q %q", code, out, errs)
	}
	if out := m.mustRun("", "bucket-policy"); !strings.Contains(out, "bucket policy low") {
		t.Errorf("bucket-policy: %q", out)
	}

	out = m.mustRun("", "push")
	if !strings.Contains(out, "anchored 2 rows and 0 deletions in 1 epoch(s), seq 1 to 1") || !strings.Contains(out, " ETH") || !strings.Contains(out, "total: 1 epoch(s), gas ") || strings.Contains(out, " wei") {
		t.Errorf("push report:\n%s", out)
	}
	st = mt.status()
	lp, _ := st["last_push"].(map[string]any)
	b, _ := json.Marshal(lp["report"])
	var pr struct {
		Gas      uint64 `json:"gas"`
		CostWei  string `json:"cost_wei"`
		CostETH  string `json:"cost_eth"`
		Anchored []struct {
			GasUsed uint64 `json:"gas_used"`
			CostWei string `json:"cost_wei"`
			CostETH string `json:"cost_eth"`
		} `json:"anchored"`
	}
	if err := json.Unmarshal(b, &pr); err != nil || len(pr.Anchored) != 1 || pr.Gas == 0 || pr.Gas != pr.Anchored[0].GasUsed ||
		pr.CostETH == "" || pr.CostWei == "0" || pr.Anchored[0].CostETH == "" {
		t.Fatalf("last_push report: %s (%v)", b, err)
	}

	// the policy is the vault's, kept in vault.json, and the mount follows it at once
	m.mustRun("", "bucket-policy", "kint")
	if st := mt.status(); st["bucket_policy"] != "kint" {
		t.Errorf("status bucket_policy %v after bucket-policy kint", st["bucket_policy"])
	}
	if out := m.mustRun("", "bucket-policy"); !strings.Contains(out, "bucket policy kint") {
		t.Errorf("bucket-policy: %q", out)
	}
}

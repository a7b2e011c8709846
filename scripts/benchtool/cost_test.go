package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The lines the replica tests log are found in go test -v output, and a missing one is named.
func TestBenchLine(t *testing.T) {
	out := "=== RUN   TestX\n    cost_test.go:161: bench-bucket: {\"edit_ratio\":1.01,\"import_ratio\":1.3}\n--- PASS: TestX (6.07s)\n"
	m, err := benchLine(out, "bench-bucket")
	if err != nil || num(m, "edit_ratio") != 1.01 || num(m, "import_ratio") != 1.3 {
		t.Fatalf("%v, %v", m, err)
	}
	if _, err := benchLine(out, "bench-b2b"); err == nil || !strings.Contains(err.Error(), "no bench-b2b line") {
		t.Fatalf("missing line: %v", err)
	}
	if _, err := benchLine("    x.go:1: bench-b2b: {not json\n", "bench-b2b"); err == nil || !strings.Contains(err.Error(), "the bench-b2b line") {
		t.Fatalf("bad line: %v", err)
	}
}

// The report renders both sections from a run's results, each target with its verdict.
func TestCostSections(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"params.json": `{"quick":true,"rows":10,"cats":1,"row_bytes":1024}`,
		"bucket.json": `{"edit_ratio":1.004,"import_ratio":1.3,"kint_edit_ratio":20.4,"low_import_epochs":50,"low_import_bucket":4096,` +
			`"low_import_gas":9732230,"kint_import_epochs":2,"kint_import_bucket":98304,"kint_import_gas":7902510,"low_edit_bucket":4096,` +
			`"low_edit_gas":194500,"kint_edit_bucket":98304,"kint_edit_gas":3952800,"fresh_edit_bucket":4096,"fresh_edit_gas":193930}`,
		"b2b.json": `{"epochs":30,"blocks":3,"seconds":5.9,"push_seconds":6.0,"requests":79,"delay_ms":50,"period_seconds":2}`,
	}
	writeResults(t, dir, files)
	out := filepath.Join(dir, "report.md")
	if err := renderReport(dir, out); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{
		"| one-line edit after a 200 x 1 KB import (bucket policy `low`) / the same edit in a vault without the import, gas | 1.00x | <= 1.1x | met |",
		"| that import under `low` / the same import under `kintfs bucket-policy kint`, gas | 1.30x | <= 1.25x | **missed** |",
		"first send to last receipt | 5.9 s | < 10 s | met |",
		"## Bucket policy (gas from receipts)",
		"| import of 200 rows of 1 KB | 50 epochs of bucket 4096, 9,732,230 gas | 2 epochs of bucket 98304, 7,902,510 gas | |",
		"| **import / kint's import** (target <= 1.25x: missed) | **1.30x** | 1 | |",
		"## Back-to-back sends",
		"**5.9 s from the first send to the last receipt** (target < 10 s: met), in 3 blocks",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the report has no %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "## Targets") > strings.Index(text, "## Bucket policy") {
		t.Errorf("the sections come before the targets table")
	}
}

// writeResults writes a run's result files, by name, into dir.
func writeResults(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 9732230: "9,732,230", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

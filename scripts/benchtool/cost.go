package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// costTests are the replica tests that measure issue 30's numbers with real pushes, gas as
// the receipts give it, run on the run's dev chains: SKIP name, test, the line it logs.
var costTests = []struct{ skip, test, line string }{
	// a 200-row x 1 KB import of noise text, then a one-line edit, under each bucket policy and
	// in a vault without the import
	{"bucket", "TestBucketPolicyLowKeepsEditsCheap", "bench-bucket"},
	// a 30-epoch push through a proxy adding 50 ms per request, on a chain sealing every 2 s
	{"b2b", "TestPushBackToBackThirtyEpochs", "bench-b2b"},
}

// bucket runs the replica tests behind the bucket-policy and back-to-back numbers and keeps
// what they logged (bucket.json, b2b.json). A test that misses its target fails; its numbers
// are kept all the same, and the report says missed.
func (b *bench) bucket() error {
	var names []string
	for _, ct := range costTests {
		if !b.cfg.skip[ct.skip] {
			names = append(names, ct.test)
		}
	}
	if len(names) == 0 {
		return nil
	}
	say("bucket policy and back-to-back sends: %s on the run's dev chains, gas from receipts", strings.Join(names, ", "))
	// the tests take their vaults on the run's dev chain, and on one sealing a block every 2 s
	// started for them
	env := append(os.Environ(), "KINT_BENCH_DEVCHAIN="+filepath.Join(b.h1, "devchain", "devchain.json"))
	if !b.cfg.skip["b2b"] {
		home := filepath.Join(b.work, "home-b2b")
		p, rpc, err := b.startChain(home, "devchain-2s", "--period", "2")
		if err != nil {
			return err
		}
		b.chain2s = p
		defer func() { stopChain(p); b.chain2s = nil }()
		note("dev chain sealing every 2 s at %s (pid %d)", rpc, p.cmd.Process.Pid)
		env = append(env, "KINT_BENCH_DEVCHAIN_PERIOD_2="+filepath.Join(home, "devchain", "devchain.json"))
	}
	cmd := exec.Command("go", "test", "-count=1", "-v", "-timeout", "20m", "-run", "^("+strings.Join(names, "|")+")$", "./replica/")
	cmd.Env = env
	out, runErr := cmd.CombinedOutput()
	outPath := filepath.Join(b.res, "bucket.out")
	os.WriteFile(outPath, out, 0o644)
	for _, ct := range costTests {
		if b.cfg.skip[ct.skip] {
			continue
		}
		m, err := benchLine(string(out), ct.line)
		if err != nil {
			if runErr != nil {
				return fmt.Errorf("%s: %v: %s", ct.test, runErr, tail(outPath, 15))
			}
			return fmt.Errorf("%s: %w", ct.test, err)
		}
		if err := b.keep(ct.skip, m); err != nil {
			return err
		}
	}
	if runErr != nil {
		note("go test: %v (a target missed: see %s)", runErr, outPath)
	}
	return nil
}

// benchLine is the JSON object a test logged as "name: {...}" in go test -v output.
func benchLine(out, name string) (map[string]any, error) {
	for _, l := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(l, " "+name+": ")
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(rest)), &m); err != nil {
			return nil, fmt.Errorf("the %s line: %w", name, err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("no %s line in the output of go test", name)
}

// costSections are the report's sections on the bucket policy and back-to-back sends, with
// their targets added to the verdicts.
func (rp *report) costSections(r results) []string {
	var out []string
	w := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if g := r.json("bucket.json"); g != nil {
		edit, imp := num(g, "edit_ratio"), num(g, "import_ratio")
		ev, iv := met(edit <= 1.1), met(imp <= 1.25)
		rp.verdicts = append(rp.verdicts,
			verdictRow{"one-line edit after a 200 x 1 KB import (bucket policy `low`) / the same edit in a vault without the import, gas", ev, fmt.Sprintf("%.2fx", edit), "<= 1.1x"},
			verdictRow{"that import under `low` / the same import under `kintfs bucket-policy kint`, gas", iv, fmt.Sprintf("%.2fx", imp), "<= 1.25x"})
		ep := func(n, bucket, gas int) string {
			s := "s"
			if n == 1 {
				s = ""
			}
			return fmt.Sprintf("%d epoch%s of bucket %d, %s gas", n, s, bucket, thousands(gas))
		}
		w("## Bucket policy (gas from receipts)")
		w("")
		w("Step `bucket` (`go test ./replica -run TestBucketPolicyLowKeepsEditsCheap` with `KINT_BENCH_DEVCHAIN`): three vaults")
		w("on the run's dev chain, one confirmation, gas as the receipts give it (the EIP-7623 floor for every push). The import is 200 rows of")
		w("1 KB of seeded noise text (64 letters), one push; the edit replaces the first 40 characters of one of those rows, one push.")
		w("")
		w("| | bucket policy `low` (default) | bucket policy `kint` | vault without the import |")
		w("|---|---|---|---|")
		w("| import of 200 rows of 1 KB | %s | %s | |", ep(integer(g, "low_import_epochs"), integer(g, "low_import_bucket"), integer(g, "low_import_gas")),
			ep(integer(g, "kint_import_epochs"), integer(g, "kint_import_bucket"), integer(g, "kint_import_gas")))
		w("| one-line edit after it | %s | %s | %s |", ep(1, integer(g, "low_edit_bucket"), integer(g, "low_edit_gas")),
			ep(1, integer(g, "kint_edit_bucket"), integer(g, "kint_edit_gas")), ep(1, integer(g, "fresh_edit_bucket"), integer(g, "fresh_edit_gas")))
		w("| **edit / fresh-vault edit** (target <= 1.1x: %s) | **%.2fx** | %.1fx | 1 |", strings.ReplaceAll(ev, "*", ""), edit, num(g, "kint_edit_ratio"))
		w("| **import / kint's import** (target <= 1.25x: %s) | **%.2fx** | 1 | |", strings.ReplaceAll(iv, "*", ""), imp)
		w("")
	}
	if g := r.json("b2b.json"); g != nil {
		secs := num(g, "seconds")
		v := met(secs < 10)
		rp.verdicts = append(rp.verdicts, verdictRow{fmt.Sprintf("a push of %d epochs through a proxy adding %d ms per request, a block every %d s: first send to last receipt",
			integer(g, "epochs"), integer(g, "delay_ms"), integer(g, "period_seconds")), v, fmt.Sprintf("%.1f s", secs), "< 10 s"})
		w("## Back-to-back sends")
		w("")
		w("Step `b2b` (`go test ./replica -run TestPushBackToBackThirtyEpochs` with `KINT_BENCH_DEVCHAIN_PERIOD_2`): a push of %d"+
			" epochs (120 rows of 1 KB, bucket 4096) through `chain/rpcproxy` adding %d ms to every request, on a dev chain the run"+
			" starts for it sealing a block every %d s (`kintfs devchain --period 2`),"+
			" one confirmation: **%.1f s from the first send to the last receipt** (target < 10 s: %s), in %d blocks (push %.1f s, %d"+
			" requests). Waiting for each receipt before sending the next needs a block per epoch: about %d s.",
			integer(g, "epochs"), integer(g, "delay_ms"), integer(g, "period_seconds"), secs, strings.ReplaceAll(v, "*", ""),
			integer(g, "blocks"), num(g, "push_seconds"), integer(g, "requests"), integer(g, "epochs")*integer(g, "period_seconds"))
		w("")
	}
	return out
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kintfs/replica/homedir"
)

// anchoredSeq is the seq user.kint.anchored names for path on r.
func anchoredSeq(t *testing.T, r *Replica, path string) uint64 {
	t.Helper()
	v, err := r.Get(pathKey(path))
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	if v.Anchor == nil {
		t.Fatalf("%s has no anchor", path)
	}
	return v.Anchor.Seq
}

// versionSeqs lists the seqs of the versions history shows of path on r.
func versionSeqs(t *testing.T, r *Replica, path string) string {
	t.Helper()
	vs, err := r.Versions(pathKey(path))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprint(v.Anchor.Seq))
	}
	return strings.Join(out, " ")
}

// TestProvenanceAfterSnapshotBackfill, on a real dev chain: a machine that restored from a
// snapshot names the snapshot for every row until the history under it is held; once the
// backfill recorded it, user.kint.anchored, history and verify name the epoch where each
// row's leaf last changed, as on the writer and as kint's anchored_version does, and a
// reopen keeps it.
func TestProvenanceAfterSnapshotBackfill(t *testing.T) {
	e := newDevChainEnv(t)
	a, _ := historyWriter(t, e)
	// epoch 1: first, x; epoch 2: first, second; epoch 3 (snapshot): first deleted, y; epoch 4: x
	want := map[string]uint64{"entity/person/second": 2, "state/y": 3, "state/x": 4}
	for p, seq := range want {
		if got := anchoredSeq(t, a, p); got != seq {
			t.Fatalf("the writer anchors %s at seq %d, want %d", p, got, seq)
		}
	}
	b := e.machine()
	if _, err := b.Pull(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if got := anchoredSeq(t, b, "entity/person/second"); got != 3 {
		t.Fatalf("before the backfill the restored machine names seq %d for a row the snapshot carried, want the snapshot 3", got)
	}
	if _, err := b.Backfill(context.Background(), BackfillOptions{}); err != nil {
		t.Fatal(err)
	}
	check := func(r *Replica, when string) {
		t.Helper()
		for p, seq := range want {
			if got := anchoredSeq(t, r, p); got != seq {
				t.Errorf("%s: %s anchored at seq %d, want %d (where its leaf last changed)", when, p, got, seq)
			}
			if w, g := versionSeqs(t, a, p), versionSeqs(t, r, p); w != g {
				t.Errorf("%s: history of %s lists seqs %q, the writer %q", when, p, g, w)
			}
		}
		if body, err := r.Content(pathKey("entity/person/second")); err != nil || string(body) != `{"v":"s"}` {
			t.Errorf("%s: content %q, %v", when, body, err)
		}
		proof, err := r.Prove(pathKey("entity/person/second"))
		if err != nil {
			t.Fatal(err)
		}
		if proof.Anchored == nil || proof.Anchored.Seq != 2 || proof.Epoch.Seq != 4 {
			t.Errorf("%s: verify proves against epoch %d and names %+v, want the head 4 and the change at 2", when, proof.Epoch.Seq, proof.Anchored)
		}
	}
	check(b, "after the backfill")
	check(e.reopen(b), "after a reopen")
}

// TestEpochCacheInKintForm, on a real dev chain: every .meta.json a push, a pull and a
// backfill write has exactly kint's keys in kint's order, bare hex hashes, prev_block equal to
// the block of the epoch before, and snapshot only on the snapshot; the plaintext beside it
// is the epoch's.
func TestEpochCacheInKintForm(t *testing.T) {
	e := newDevChainEnv(t)
	a, blocks := historyWriter(t, e)
	b := e.machine()
	if _, err := b.Pull(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Replica{a, b} {
		dir := r.opt.Home.Path("epochs", r.vault.Space16())
		for seq := uint64(1); seq <= 4; seq++ {
			raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%08d.meta.json", seq)))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			keys := `{"seq": %d, "digest": "`
			if !strings.HasPrefix(string(raw), fmt.Sprintf(keys, seq)) {
				t.Errorf("seq %d: %s is not in kint's json.dumps form", seq, raw)
			}
			var order []string
			dec := json.NewDecoder(strings.NewReader(string(raw)))
			dec.Token()
			for dec.More() {
				k, _ := dec.Token()
				order = append(order, k.(string))
				var skip any
				dec.Decode(&skip)
			}
			wantKeys := "seq digest prev prev_block block tx bucket rows_root writer"
			if seq == 3 {
				wantKeys += " snapshot"
			}
			if got := strings.Join(order, " "); got != wantKeys {
				t.Errorf("seq %d: keys %q, want kint's %q", seq, got, wantKeys)
			}
			for _, f := range []string{"digest", "prev", "rows_root", "tx"} {
				s, _ := m[f].(string)
				if len(s) != 64 || strings.ToLower(s) != s || strings.HasPrefix(s, "0x") {
					t.Errorf("seq %d: %s %q is not 64 bare lower-case hex digits", seq, f, s)
				}
			}
			if w, _ := m["writer"].(string); !strings.HasPrefix(w, "0x") || len(w) != 42 {
				t.Errorf("seq %d: writer %q", seq, w)
			}
			wantPrev := uint64(0)
			if seq > 1 {
				wantPrev = blocks[seq-2]
			}
			if got := uint64(m["prev_block"].(float64)); got != wantPrev || uint64(m["block"].(float64)) != blocks[seq-1] {
				t.Errorf("seq %d: prev_block %d block %v, want %d and %d", seq, got, m["block"], wantPrev, blocks[seq-1])
			}
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%08d.json", seq))); err != nil {
				t.Errorf("seq %d: no plaintext beside the meta: %v", seq, err)
			}
			meta, err := homedir.NewEpochCache(r.opt.Home, r.vault.Space16()).Meta(seq)
			if err != nil || meta.Seq != seq || meta.Snapshot != (seq == 3) {
				t.Errorf("seq %d: read back %+v, %v", seq, meta, err)
			}
		}
	}
}

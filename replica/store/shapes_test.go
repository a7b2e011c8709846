package store

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// anchorRows applies one epoch carrying rows, as a pull or a push's settle would.
func anchorRows(t *testing.T, r *testStore, rows ...seal.Row) {
	t.Helper()
	if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 1, Block: 100, Digest: common.Hash{1}},
		plaintextFor(map[string]seal.Row{}, 1, rows, nil), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
}

// nothingStaged fails when anything is staged.
func nothingStaged(t *testing.T, r *testStore, after string) {
	t.Helper()
	sum, err := r.Summary()
	if err != nil || sum.StagedRows+sum.StagedDels != 0 {
		t.Fatalf("after %s: %d rows and %d deletions staged (%v), want none", after, sum.StagedRows, sum.StagedDels, err)
	}
}

func TestAttrShapes(t *testing.T) {
	r := newTestStore(t)
	ent, st, ref := vault.Key{Tier: "entity", Key: "e"}, vault.Key{Tier: "state", Key: "s"}, vault.Key{Tier: "reference", Key: "r"}
	anchorRows(t, r, seal.Row{Tier: "entity", Key: "e", Body: seal.BodyString(`"x"`)}, seal.Row{Tier: "state", Key: "s", Body: seal.BodyString("x")},
		seal.Row{Tier: "reference", Key: "r", Body: seal.BodyString("x")})
	refused := []struct {
		k          vault.Key
		name, want string
	}{
		{st, "status", "status is kept on entity rows only"},
		{ref, "status", "status is kept on entity rows only"},
		{ent, "meta", "meta is kept on reference rows only"},
		{st, "meta", "meta is kept on reference rows only"},
	}
	for _, c := range refused {
		value := `"v"`
		err := r.SetAttr(c.k, c.name, &value)
		if !errors.Is(err, vault.ErrNotPermitted) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "vault-model full") ||
			strings.Contains(err.Error(), `"v"`) {
			t.Errorf("%s on %s: %v; want ErrNotPermitted naming the rule and the way out, not the value", c.name, keyString(c.k), err)
		}
	}
	nothingStaged(t, r, "the refused attributes")
	// clearing is always allowed: it mends a row kint cannot hold
	if err := r.SetAttr(st, "status", nil); err != nil {
		t.Errorf("clearing status on a state row: %v", err)
	}
	if err := r.SetAttr(ent, "status", cat("active")); err != nil {
		t.Errorf("status on an entity: %v", err)
	}
	if err := r.SetAttr(ref, "meta", cat(`{"a":1}`)); err != nil {
		t.Errorf("meta on a reference: %v", err)
	}
	for _, name := range []string{"status", "meta"} {
		k := map[string]vault.Key{"status": ent, "meta": ref}[name]
		if err := r.SetAttr(k, name, cat("\"\xff\xfe\"")); !errors.Is(err, vault.ErrInvalid) || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("%s that is not UTF-8: %v; want ErrInvalid naming UTF-8", name, err)
		}
	}
	r.SetModel(vault.ModelFull)
	if r.Model() != vault.ModelFull {
		t.Fatalf("model %q", r.Model())
	}
	for _, c := range refused {
		if err := r.SetAttr(c.k, c.name, cat(`"v"`)); err != nil {
			t.Errorf("full model: %s on %s: %v", c.name, keyString(c.k), err)
		}
	}
	got := r.KintIncompatible()
	if len(got) != 0 {
		t.Errorf("only staged so far, yet incompatible: %+v", got)
	}
}

func TestIncompatibleAnchored(t *testing.T) {
	r := newTestStore(t)
	anchorRows(t, r, seal.Row{Tier: "state", Key: "s", Body: seal.BodyString("x"), Status: cat("open")},
		seal.Row{Tier: "entity", Category: cat("c"), Key: "e", Body: seal.BodyString(`1`), Status: cat("ok"), Meta: cat(`{}`)},
		seal.Row{Tier: "reference", Key: "fine", Body: seal.BodyString("x"), Meta: cat(`{}`)})
	got := r.KintIncompatible()
	if len(got) != 2 || got[0].Tier != "entity" || got[0].Reason != "meta on a entity row" || got[1].Key != "s" || got[1].Reason != "status on a state row" {
		t.Fatalf("incompatible: %+v", got)
	}
	if err := r.SetAttr(vault.Key{Tier: "state", Key: "s"}, "status", nil); err != nil {
		t.Fatal(err)
	}
	if got := r.KintIncompatible(); len(got) != 2 {
		t.Fatalf("a staged fix is not anchored yet: %+v", got)
	}
}

func TestDeleteShapes(t *testing.T) {
	r := newTestStore(t)
	st, ref, ent := vault.Key{Tier: "state", Key: "s"}, vault.Key{Tier: "reference", Key: "r"}, vault.Key{Tier: "entity", Key: "e"}
	anchorRows(t, r, seal.Row{Tier: "state", Key: "s", Body: seal.BodyString("x")}, seal.Row{Tier: "reference", Key: "r", Body: seal.BodyString("x")},
		seal.Row{Tier: "entity", Key: "e", Body: seal.BodyString(`1`)})
	for _, k := range []vault.Key{st, ref} {
		if err := r.Remove(k); !errors.Is(err, vault.ErrNotPermitted) || !strings.Contains(err.Error(), "would bring it back") {
			t.Errorf("remove anchored %s: %v", keyString(k), err)
		}
		if err := r.Rename(k, vault.Key{Tier: k.Tier, Key: "moved"}); !errors.Is(err, vault.ErrNotPermitted) || !strings.Contains(err.Error(), "renamed away") {
			t.Errorf("rename anchored %s: %v", keyString(k), err)
		}
		if err := r.Rename(k, vault.Key{Tier: k.Tier, Key: ".hidden", Local: true}); !errors.Is(err, vault.ErrNotPermitted) {
			t.Errorf("rename anchored %s to a local name: %v", keyString(k), err)
		}
		if _, err := r.Get(k); err != nil {
			t.Errorf("%s is gone after a refusal: %v", keyString(k), err)
		}
	}
	nothingStaged(t, r, "the refused deletions")
	// staged only: removed and renamed freely
	tmp := vault.Key{Tier: "state", Key: "sedXYZ"}
	mustWrite(t, r.Store, tmp, "new")
	if err := r.Rename(tmp, st); err != nil {
		t.Fatalf("a staged temporary saved over an anchored row: %v", err)
	}
	mustWrite(t, r.Store, tmp, "new")
	if err := r.Rename(tmp, vault.Key{Tier: "state", Key: "other"}); err != nil {
		t.Fatalf("rename a staged row: %v", err)
	}
	if err := r.Remove(vault.Key{Tier: "state", Key: "other"}); err != nil {
		t.Fatalf("remove a staged row: %v", err)
	}
	// a local file saved over an anchored row is a write of it
	swp := vault.Key{Tier: "reference", Key: ".r.swp", Local: true}
	mustWrite(t, r.Store, swp, "saved")
	if err := r.Rename(swp, ref); err != nil {
		t.Fatalf("an editor's save over an anchored reference: %v", err)
	}
	if err := r.Remove(ent); err != nil {
		t.Fatalf("remove an anchored entity: %v", err)
	}
	r.SetModel(vault.ModelFull)
	if err := r.Remove(st); err != nil {
		t.Fatalf("full model: remove an anchored state row: %v", err)
	}
	if err := r.Rename(ref, vault.Key{Tier: "reference", Key: "moved"}); err != nil {
		t.Fatalf("full model: rename an anchored reference row: %v", err)
	}
}

func TestNewRowsSettle(t *testing.T) {
	r := newTestStore(t)
	anchorRows(t, r, seal.Row{Tier: "state", Key: "old", Body: seal.BodyString("x")})
	now := time.Now()
	r.now = func() time.Time { return now }
	mustWrite(t, r.Store, vault.Key{Tier: "state", Key: "old"}, "changed")
	mustWrite(t, r.Store, vault.Key{Tier: "state", Key: "new"}, "fresh")
	mustWrite(t, r.Store, vault.Key{Tier: "reference", Key: "open"}, "writing")
	mustWrite(t, r.Store, vault.Key{Tier: "entity", Key: "e"}, `1`)
	r.OpenedForWrite(vault.Key{Tier: "reference", Key: "open"})
	keys := func(at time.Duration) string {
		t.Helper()
		now = now.Add(at)
		rows, _, _, err := r.CollectSettled(false)
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, row := range rows {
			ks = append(ks, row.Key)
		}
		sort.Strings(ks)
		return strings.Join(ks, " ")
	}
	if w := r.SettleWait(); w != settleOpen {
		t.Errorf("settle wait %v, want %v", w, settleOpen)
	}
	if got := keys(0); got != "e old" {
		t.Errorf("at once: %q, want the entity and the anchored row only", got)
	}
	if got := keys(settleQuiet); got != "e new old" {
		t.Errorf("after the quiet time: %q", got)
	}
	if got := keys(settleOpen); got != "e new old open" {
		t.Errorf("after the bound for an open file: %q", got)
	}
	r.ClosedForWrite(vault.Key{Tier: "reference", Key: "open"})
	if r.openForWrite(seal.CanonicalID("reference", nil, "open")) {
		t.Error("still open after its close")
	}
	if rows, _, _, _ := r.CollectStaged(false); len(rows) != 4 {
		t.Errorf("CollectStaged (a snapshot's) leaves out %d rows", 4-len(rows))
	}
}

func TestInvalidJournalKept(t *testing.T) {
	r := newTestStore(t)
	_, err := r.Write(vault.Key{Tier: "journal", Key: "x"}, []byte("garbage"), time.Now())
	if !errors.Is(err, vault.ErrKeptInvalid) || !errors.Is(err, vault.ErrInvalid) || !strings.Contains(err.Error(), "kept as journal/.x.invalid") ||
		strings.Contains(err.Error(), "garbage") {
		t.Fatalf("a write that is not an event: %v", err)
	}
	kept := vault.Key{Tier: "journal", Key: ".x.invalid", Local: true}
	if b, err := r.Content(kept); err != nil || string(b) != "garbage" {
		t.Fatalf("kept: %q %v", b, err)
	}
	sum, err := r.Summary()
	if err != nil || len(sum.Held) != 1 || sum.Held[0].Key != ".x.invalid" || !strings.Contains(sum.Held[0].Reason, "not a journal event") {
		t.Fatalf("held: %+v %v", sum.Held, err)
	}
	if err := r.Remove(kept); err != nil {
		t.Fatal(err)
	}
	if sum, _ := r.Summary(); len(sum.Held) != 0 {
		t.Fatalf("held after rm: %+v", sum.Held)
	}
}

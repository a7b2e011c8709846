package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// errCrash stands for a crash between two steps of a policy: stepHook returns it, and the
// transaction is abandoned there.
var errCrash = errors.New("crash between steps")

// crashAt makes the store's next transaction stop at step, as a crash there would.
func crashAt(s *Store, step string) {
	s.stepHook = func(name string) error {
		if name == step {
			return errCrash
		}
		return nil
	}
}

// wantRow fails t unless k reads body with meta (nil: null), after a reopen as before.
func wantRow(t *testing.T, s *Store, k vault.Key, body string, meta *string) {
	t.Helper()
	v, err := s.Get(k)
	if err != nil {
		t.Fatalf("%s: %v", keyString(k), err)
	}
	if got, err := s.Content(k); err != nil || string(got) != body {
		t.Fatalf("%s reads %q, %v; want %q", keyString(k), got, err, body)
	}
	if !eqStrp(v.Row.Meta, meta) {
		t.Fatalf("%s has meta %v, want %v", keyString(k), strOr(v.Row.Meta), strOr(meta))
	}
}

func strOr(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

func wantGone(t *testing.T, s *Store, k vault.Key) {
	t.Helper()
	if _, err := s.Get(k); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("%s: %v, want it gone", keyString(k), err)
	}
}

// TestRenameKeepingAttrsIsOneStep: a fresh row renamed onto a row with meta takes that meta
// in the step that moves it; a crash in that step leaves both rows as they were, never the
// content moved without its meta.
func TestRenameKeepingAttrsIsOneStep(t *testing.T) {
	r := newTestStore(t)
	plan, tmp := vault.Key{Tier: seal.TierReference, Key: "plan"}, vault.Key{Tier: seal.TierReference, Key: "plan.tmp"}
	meta := `{"source":"notes"}`
	mustWrite(t, r.Store, plan, "old")
	if err := r.SetAttr(plan, "meta", &meta); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, r.Store, tmp, "new")

	crashAt(r.Store, "rename")
	if err := r.RenameKeepingAttrs(tmp, plan); !errors.Is(err, errCrash) {
		t.Fatalf("rename with a crash mid-way: %v", err)
	}
	r = reopenTestStore(t, r)
	wantRow(t, r.Store, plan, "old", &meta)
	wantRow(t, r.Store, tmp, "new", nil)

	if err := r.RenameKeepingAttrs(tmp, plan); err != nil {
		t.Fatal(err)
	}
	r = reopenTestStore(t, r)
	wantRow(t, r.Store, plan, "new", &meta)
	wantGone(t, r.Store, tmp)

	// A row with meta of its own keeps it, and plain Rename keeps only the moved row's.
	other := `{"source":"other"}`
	mustWrite(t, r.Store, tmp, "newer")
	if err := r.SetAttr(tmp, "meta", &other); err != nil {
		t.Fatal(err)
	}
	if err := r.RenameKeepingAttrs(tmp, plan); err != nil {
		t.Fatal(err)
	}
	wantRow(t, r.Store, plan, "newer", &other)
	mustWrite(t, r.Store, tmp, "plain")
	if err := r.Rename(tmp, plan); err != nil {
		t.Fatal(err)
	}
	wantRow(t, r.Store, plan, "plain", nil)
}

// TestCreateRestoresMovedAttrs: a row renamed to a free name leaves its meta for a row
// created under the name it left within movedWindow, given in the create's own step; a crash
// in that step creates nothing, and past the window a new row starts bare.
func TestCreateRestoresMovedAttrs(t *testing.T) {
	r := newTestStore(t)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	plan, backup := vault.Key{Tier: seal.TierReference, Key: "plan"}, vault.Key{Tier: seal.TierReference, Key: "plan~"}
	meta := `{"source":"notes"}`
	mustWrite(t, r.Store, plan, "v1")
	if err := r.SetAttr(plan, "meta", &meta); err != nil {
		t.Fatal(err)
	}
	if err := r.RenameKeepingAttrs(plan, backup); err != nil {
		t.Fatal(err)
	}
	wantRow(t, r.Store, backup, "v1", &meta)

	crashAt(r.Store, "create")
	if _, err := r.Create(plan, 0o644, now); !errors.Is(err, errCrash) {
		t.Fatalf("create with a crash mid-way: %v", err)
	}
	wantGone(t, r.Store, plan)
	r.stepHook = nil
	now = now.Add(movedWindow)
	if _, err := r.Create(plan, 0o644, now); err != nil {
		t.Fatal(err)
	}
	r = reopenTestStore(t, r)
	wantRow(t, r.Store, plan, "", &meta)
	v, err := r.Get(plan)
	if err != nil || !v.HasPerm || v.Perm != 0o644 {
		t.Fatalf("the created row: %+v %v; want mode 644", v, err)
	}

	// The note is taken once, and it does not outlive the window.
	now = time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	if err := r.Remove(plan); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(plan, 0o644, now); err != nil {
		t.Fatal(err)
	}
	wantRow(t, r.Store, plan, "", nil)
	if err := r.RenameKeepingAttrs(backup, vault.Key{Tier: seal.TierReference, Key: "plan.old"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(movedWindow + time.Second)
	if _, err := r.Create(backup, 0o644, now); err != nil {
		t.Fatal(err)
	}
	wantRow(t, r.Store, backup, "", nil)
}

// TestJournalAppendByRename: a local file of the journal renamed to an event's name is
// appended and removed in one step: a crash in it leaves the file and no event, never both;
// content that is no event is refused and the file stays.
func TestJournalAppendByRename(t *testing.T) {
	r := newTestStore(t)
	tmp := vault.Key{Tier: seal.TierJournal, Key: ".tmp", Local: true}
	event := `{"ts":"2026-02-02T00:00:00Z"}`
	mustWrite(t, r.Store, tmp, event)
	to := vault.Key{Tier: seal.TierJournal, Key: "moved"}

	crashAt(r.Store, "journal")
	if err := r.Rename(tmp, to); !errors.Is(err, errCrash) {
		t.Fatalf("append with a crash mid-way: %v", err)
	}
	r = reopenTestStore(t, r)
	if got := journalNames(t, r.Store); got != ".tmp" {
		t.Fatalf("after a crash mid-way the journal lists %q, want the file alone", got)
	}

	if err := r.RenameKeepingAttrs(tmp, to); err != nil {
		t.Fatal(err)
	}
	r = reopenTestStore(t, r)
	names := journalNames(t, r.Store)
	if strings.Contains(names, ".tmp") || strings.Count(names, " ") != 0 || names == "" {
		t.Fatalf("after the append the journal lists %q, want one event", names)
	}
	if got, err := r.Content(vault.Key{Tier: seal.TierJournal, Key: names}); err != nil || !strings.Contains(string(got), "2026-02-02T00:00:00Z") {
		t.Fatalf("the event reads %q, %v", got, err)
	}

	bad := vault.Key{Tier: seal.TierJournal, Key: ".bad", Local: true}
	mustWrite(t, r.Store, bad, "not json")
	err := r.RenameKeepingAttrs(bad, to)
	if !errors.Is(err, vault.ErrInvalid) || !strings.Contains(err.Error(), "left where it was") {
		t.Fatalf("moving a file that is no event in: %v", err)
	}
	if got, err := r.Content(bad); err != nil || string(got) != "not json" {
		t.Fatalf("the refused file reads %q, %v", got, err)
	}
}

func journalNames(t *testing.T, s *Store) string {
	t.Helper()
	ds, err := s.List(seal.TierJournal, nil)
	if err != nil {
		t.Fatal(err)
	}
	return names(ds)
}

// putEpochRecords records epochs by seq and block, as applied ones are, for the history checks,
// a few hundred to a transaction (a transaction holds a part of a memtable).
func putEpochRecords(t testing.TB, s *Store, infos ...vault.EpochInfo) {
	t.Helper()
	for len(infos) > 0 {
		batch := infos[:min(len(infos), 500)]
		infos = infos[len(batch):]
		err := s.db.Update(func(txn *badger.Txn) error {
			for _, in := range batch {
				if err := setJSON(txn, epochKey(in.Seq), &in); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	s.holes.forget()
}

// TestHistoryViewRefusesHoles: the engine's history view refuses a block in a hole itself,
// naming the way out, and serves it once the hole is filled; fs keeps nothing of the decision.
func TestHistoryViewRefusesHoles(t *testing.T) {
	r := newTestStore(t)
	putEpochRecords(t, r.Store, vault.EpochInfo{Seq: 1, Block: 10}, vault.EpochInfo{Seq: 3, Block: 30, Snapshot: true})
	for _, block := range []uint64{5, 10, 30, 99} {
		if _, err := r.HistoryView(block); err != nil {
			t.Fatalf("@%d: %v", block, err)
		}
	}
	for _, block := range []uint64{11, 29} {
		_, err := r.HistoryView(block)
		if !errors.Is(err, vault.ErrHistoryIncomplete) || !strings.Contains(err.Error(), "kintfs pull --full") {
			t.Fatalf("@%d in the hole: %v", block, err)
		}
	}
	if err := r.RecordHistory(&vault.EpochInfo{Seq: 2, Block: 20}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.HistoryView(11); err != nil {
		t.Fatalf("@11 after the hole is filled: %v", err)
	}
}

// BenchmarkHistoryView times the check of a history view on a vault of 2,000 epochs with a
// hole: each lookup of @<block> makes it, and fs keeps no cache of its answer.
func BenchmarkHistoryView(b *testing.B) {
	r := newTestStore(b)
	var infos []vault.EpochInfo
	for seq := uint64(1); seq <= 2000; seq++ {
		if seq != 1000 {
			infos = append(infos, vault.EpochInfo{Seq: seq, Block: 10 * seq, CreatedAt: fmt.Sprint(seq)})
		}
	}
	putEpochRecords(b, r.Store, infos...)
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.HistoryView(15000); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("after an epoch", func(b *testing.B) {
		for b.Loop() {
			r.holes.forget()
			if _, err := r.HistoryView(15000); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

func cat(s string) *string { return &s }

func mustWrite(t *testing.T, s *Store, k vault.Key, body string) *vault.Version {
	t.Helper()
	v, err := s.Write(k, []byte(body), time.Now())
	if err != nil {
		t.Fatalf("write %s: %v", keyString(k), err)
	}
	return v
}

func names(ds []vault.Dirent) string {
	var out []string
	for _, d := range ds {
		n := d.Name
		if d.Dir {
			n += "/"
		}
		out = append(out, n)
	}
	return strings.Join(out, ",")
}

func TestWriteListContent(t *testing.T) {
	r := newTestStore(t)
	mustWrite(t, r.Store, vault.Key{Tier: "entity", Category: "person", HasCategory: true, Key: "zeta"}, `{"name":"zeta"}`)
	mustWrite(t, r.Store, vault.Key{Tier: "entity", Key: "café ünïcode"}, `{}`)
	v := mustWrite(t, r.Store, vault.Key{Tier: "entity", Category: "person", HasCategory: true, Key: "bad"}, `not json`)
	if !v.Staged || !strings.Contains(v.Held, "not a JSON value") {
		t.Fatalf("a non-JSON entity body must be staged and held: %+v", v)
	}
	mustWrite(t, r.Store, vault.Key{Tier: "state", Key: "goal"}, "plain text is fine here")
	if v := mustWrite(t, r.Store, vault.Key{Tier: "state", Key: "bin"}, "\xff\xfe"); !strings.Contains(v.Held, "UTF-8") {
		t.Fatalf("invalid UTF-8 must be held: %+v", v)
	}
	ls, _ := r.List("entity", nil)
	if got := names(ls); got != "café ünïcode,person/" {
		t.Fatalf("entity/ = %s", got)
	}
	ls, _ = r.List("entity", cat("person"))
	if got := names(ls); got != "bad,zeta" {
		t.Fatalf("entity/person/ = %s", got)
	}
	body, err := r.Content(vault.Key{Tier: "state", Key: "goal"})
	if err != nil || string(body) != "plain text is fine here" {
		t.Fatalf("content = %q, %v", body, err)
	}
	if _, err := r.Get(vault.Key{Tier: "state", Key: "nope"}); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("get of a missing row: %v", err)
	}
	if _, err := r.Write(vault.Key{Tier: "bogus", Key: "x"}, nil, time.Now()); !errors.Is(err, vault.ErrInvalid) {
		t.Fatalf("unknown tier: %v", err)
	}
	if _, err := r.Write(vault.Key{Tier: "state", Category: "c", HasCategory: true, Key: "x"}, nil, time.Now()); !errors.Is(err, vault.ErrInvalid) {
		t.Fatalf("a category outside entity: %v", err)
	}
}

func TestRenameCategoriesAndRemove(t *testing.T) {
	r := newTestStore(t)
	from := vault.Key{Tier: "entity", Category: "a", HasCategory: true, Key: "x"}
	mustWrite(t, r.Store, from, `{"x":1}`)
	if err := r.SetAttr(from, "status", cat("active")); err != nil {
		t.Fatal(err)
	}
	to := vault.Key{Tier: "entity", Category: "b", HasCategory: true, Key: "y"}
	if err := r.Rename(from, to); err != nil {
		t.Fatal(err)
	}
	v, err := r.Get(to)
	if err != nil || v.Row.Status == nil || *v.Row.Status != "active" {
		t.Fatalf("a renamed row keeps its status: %+v %v", v, err)
	}
	if _, err := r.Get(from); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("the old name remains: %v", err)
	}
	if r.HasCategory("a") {
		t.Fatal("category a has no rows left and was never made: it must be gone")
	}
	if err := r.Rename(to, vault.Key{Tier: "state", Key: "y"}); !errors.Is(err, vault.ErrCrossTier) {
		t.Fatalf("rename across tiers: %v", err)
	}
	if err := r.Mkdir("empty"); err != nil {
		t.Fatal(err)
	}
	if err := r.Mkdir("empty"); !errors.Is(err, vault.ErrExists) {
		t.Fatalf("mkdir twice: %v", err)
	}
	if err := r.Rmdir("b"); !errors.Is(err, vault.ErrNotEmpty) {
		t.Fatalf("rmdir of a category with rows: %v", err)
	}
	if err := r.Rmdir("empty"); err != nil {
		t.Fatal(err)
	}
	if err := r.Rmdir("empty"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("rmdir twice: %v", err)
	}
	if err := r.Remove(to); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(to); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("remove twice: %v", err)
	}
	// a row created and removed before anything was anchored leaves nothing to push
	if rows, dels, _, err := r.CollectStaged(false); err != nil || len(rows)+len(dels) != 0 {
		t.Fatalf("staged after create+remove: %v %v %v", rows, dels, err)
	}
}

func TestSetAttrRefusals(t *testing.T) {
	r := newTestStore(t)
	k := vault.Key{Tier: "entity", Key: "s"}
	mustWrite(t, r.Store, k, `"body"`)
	if err := r.SetAttr(k, "meta", cat("{not json")); !errors.Is(err, vault.ErrInvalid) || !strings.Contains(err.Error(), "JSON") {
		t.Fatalf("non-JSON meta: %v", err)
	}
	if err := r.SetAttr(k, "status", cat("archived")); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Get(k); v.Row.Status == nil || *v.Row.Status != "archived" {
		t.Fatalf("status not set: %+v", v.Row)
	}
	if err := r.SetAttr(k, "color", cat("red")); !errors.Is(err, vault.ErrInvalid) {
		t.Fatalf("unknown attribute: %v", err)
	}
}

func TestJournalAppend(t *testing.T) {
	r := newTestStore(t)
	ev := `{"ts":"2026-09-09T21:15:00Z","evaluated":"checked the deadlift plan against the recovery score","acted":"wrote the session back as an entity","forward":null,"extra":"{\"tool\":\"kint\",\"source\":\"journal\"}"}`
	v1, err := r.Write(vault.Key{Tier: "journal", Key: "whatever"}, []byte(ev), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// the vectors' journal key
	if v1.Key.Key != "8a493da4f0c14a229feb1ebac7c7fb559a87cb7f451dad91ba87626cda4a096a" {
		t.Fatalf("journal key = %s", v1.Key.Key)
	}
	v2, err := r.Write(vault.Key{Tier: "journal", Key: "again"}, []byte(ev), time.Now())
	if err != nil || v2.Key.Key != v1.Key.Key+":1" {
		t.Fatalf("a second identical event: %+v %v", v2, err)
	}
	body, _ := r.Content(v1.Key)
	if string(body) != ev {
		t.Fatalf("journal content = %s", body)
	}
	if _, err := r.Write(vault.Key{Tier: "journal", Key: "x"}, []byte(`{"ts":1}`), time.Now()); !errors.Is(err, vault.ErrInvalid) {
		t.Fatalf("a non-string field: %v", err)
	}
	if _, err := r.Write(vault.Key{Tier: "journal", Key: "x"}, []byte(`{"mood":"ok"}`), time.Now()); !errors.Is(err, vault.ErrInvalid) {
		t.Fatalf("an unknown field: %v", err)
	}
	if err := r.Rename(v1.Key, vault.Key{Tier: "journal", Key: "y"}); !errors.Is(err, vault.ErrNotPermitted) {
		t.Fatalf("rename a journal event: %v", err)
	}
	if err := r.SetAttr(v1.Key, "status", nil); !errors.Is(err, vault.ErrNotPermitted) {
		t.Fatalf("set an attribute on a journal event: %v", err)
	}
	if err := r.Remove(v1.Key); !errors.Is(err, vault.ErrNotPermitted) || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("remove a journal event: %v", err)
	}
}

func TestLocalFileBecomesRow(t *testing.T) {
	r := newTestStore(t)
	row := vault.Key{Tier: "state", Key: "doc"}
	mustWrite(t, r.Store, row, "old")
	tmp := vault.Key{Tier: "state", Key: ".doc.swp", Local: true}
	mustWrite(t, r.Store, tmp, "new")
	ls, _ := r.List("state", nil)
	if len(ls) != 2 || !ls[0].Local {
		t.Fatalf("listing with a local file: %+v", ls)
	}
	if err := r.Rename(tmp, row); err != nil {
		t.Fatal(err)
	}
	if body, _ := r.Content(row); string(body) != "new" {
		t.Fatalf("after the atomic save: %q", body)
	}
	if _, err := r.Get(tmp); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("the temp file remains: %v", err)
	}
	rows, _, _, _ := r.CollectStaged(false)
	if len(rows) != 1 || rows[0].Key != "doc" {
		t.Fatalf("local files must never be staged for anchoring: %+v", rows)
	}
}

func TestDurableAcrossReopenAndStableInodes(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := vault.Key{Tier: "reference", Key: "doc/readme"}
	v := mustWrite(t, s, k, "see the docs")
	ino := v.Ino
	ls, _ := s.List("reference", nil)
	if ls[0].Ino != ino {
		t.Fatalf("readdir ino %d, lookup ino %d", ls[0].Ino, ino)
	}
	s.Close()
	s, err = OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err = s.Get(k)
	if err != nil || !v.Staged || v.Ino != ino {
		t.Fatalf("after reopen: %+v %v (ino was %d)", v, err, ino)
	}
	if body, _ := s.Content(k); string(body) != "see the docs" {
		t.Fatalf("after reopen: %q", body)
	}
	v2 := mustWrite(t, s, vault.Key{Tier: "reference", Key: "other"}, "x")
	if v2.Ino == ino {
		t.Fatal("two rows share an inode number")
	}
}

func TestStagingCap(t *testing.T) {
	r := newTestStore(t)
	r.StagingCap = 100
	mustWrite(t, r.Store, vault.Key{Tier: "state", Key: "a"}, strings.Repeat("x", 60))
	_, err := r.Write(vault.Key{Tier: "state", Key: "b"}, []byte(strings.Repeat("x", 60)), time.Now())
	if !errors.Is(err, vault.ErrStagingFull) {
		t.Fatalf("past the cap: %v", err)
	}
	if _, err := r.Get(vault.Key{Tier: "state", Key: "b"}); !errors.Is(err, vault.ErrNotFound) {
		t.Fatal("a refused write must leave nothing behind")
	}
	// replacing a staged row by a smaller one is always possible
	mustWrite(t, r.Store, vault.Key{Tier: "state", Key: "a"}, "small")
	mustWrite(t, r.Store, vault.Key{Tier: "state", Key: "b"}, strings.Repeat("x", 60))
}

// plaintextFor builds the plaintext of an epoch that puts rows and deletes dels on top of
// state, with the right rows_root.
func plaintextFor(state map[string]seal.Row, seq uint64, rows []seal.Row, dels []seal.Deleted) *seal.Plaintext {
	for _, d := range dels {
		delete(state, d.ID())
	}
	for _, row := range rows {
		state[row.ID()] = row
	}
	var all []seal.Row
	for _, row := range state {
		all = append(all, row)
	}
	return &seal.Plaintext{Tenant: "test", Seq: seq, Rows: rows, Deleted: dels, RowsRoot: seal.StateRoot(all),
		NRows: len(all), CreatedAt: "2026-12-01T10:00:00Z"}
}

func TestApplyEpochHistoryAndConflicts(t *testing.T) {
	r := newTestStore(t)
	state := map[string]seal.Row{}
	goal := seal.Row{Tier: "state", Key: "goal", Body: seal.BodyString("v1")}
	other := seal.Row{Tier: "state", Key: "other", Body: seal.BodyString("o1")}
	p1 := plaintextFor(state, 1, []seal.Row{goal, other}, nil)
	if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 1, Block: 100, Digest: common.Hash{1}}, p1, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	// a local edit of goal, then a remote epoch changes goal too and deletes other
	mustWrite(t, r.Store, vault.Key{Tier: "state", Key: "goal"}, "mine")
	goal2 := seal.Row{Tier: "state", Key: "goal", Body: seal.BodyString("v2")}
	p2 := plaintextFor(state, 2, []seal.Row{goal2}, []seal.Deleted{{Tier: "state", Key: "other"}})
	changed, conflicts, err := r.ApplyEpoch(vault.EpochInfo{Seq: 2, Block: 200, Digest: common.Hash{2}}, p2, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) == 0 || len(conflicts) != 1 || conflicts[0].Copy != ".goal.conflict-2" {
		t.Fatalf("changed %v, conflicts %+v", changed, conflicts)
	}
	if body, _ := r.Content(vault.Key{Tier: "state", Key: "goal"}); string(body) != "v2" {
		t.Fatalf("the chain's version must stand: %q", body)
	}
	if body, _ := r.Content(vault.Key{Tier: "state", Key: ".goal.conflict-2", Local: true}); string(body) != "mine" {
		t.Fatalf("the local version must be kept: %q", body)
	}
	// history answers any block with the newest version at or before it
	for block, want := range map[uint64]string{100: "v1", 150: "v1", 200: "v2", 1 << 40: "v2"} {
		body, err := r.At(block).Content(vault.Key{Tier: "state", Key: "goal"})
		if err != nil || string(body) != want {
			t.Fatalf("goal at %d = %q, %v; want %q", block, body, err, want)
		}
	}
	if _, err := r.At(99).Get(vault.Key{Tier: "state", Key: "goal"}); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("before the first epoch: %v", err)
	}
	if _, err := r.At(200).Get(vault.Key{Tier: "state", Key: "other"}); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("a deleted row at the deleting block: %v", err)
	}
	if ls, _ := r.At(150).List("state", nil); names(ls) != "goal,other" {
		t.Fatalf("state at 150: %s", names(ls))
	}
	// an epoch whose rows_root does not match is refused whole
	bad := plaintextFor(state, 3, []seal.Row{{Tier: "state", Key: "x", Body: seal.BodyString("x")}}, nil)
	bad.RowsRoot[0] ^= 1
	if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: 3, Block: 300}, bad, ApplyOptions{}); !errors.Is(err, ErrRootMismatch) {
		t.Fatalf("a wrong rows_root: %v", err)
	}
	if _, err := r.Get(vault.Key{Tier: "state", Key: "x"}); !errors.Is(err, vault.ErrNotFound) {
		t.Fatal("a refused epoch must apply nothing")
	}
	if h, _ := r.MirrorHead(); h.Seq != 2 {
		t.Fatalf("mirror moved to %d", h.Seq)
	}
}

// TestInodesAcrossReopenManyNames checks the inode numbers a reopened store reads back (the
// packed names of inoTable, many blocks of them) against those it handed out: every row and
// category keeps its number, a renamed row takes its number along, a removed row's name keeps
// its number for the next file of that name, and a new name gets a number of its own.
func TestInodesAcrossReopenManyNames(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	inos := map[vault.Key]uint64{}
	for i := 0; i < 200; i++ {
		k := vault.Key{Tier: seal.TierEntity, Key: fmt.Sprintf("row-%03d.json", i)}.InCategory(cat(fmt.Sprintf("cat%d", i%7)))
		inos[k] = mustWrite(t, s, k, `{"n":1}`).Ino
	}
	catIno := s.DirIno(seal.TierEntity, cat("cat3"))
	moved := vault.Key{Tier: seal.TierEntity, Key: "row-010.json"}.InCategory(cat("cat3"))
	movedTo := vault.Key{Tier: seal.TierEntity, Key: "moved.json"}.InCategory(cat("cat3"))
	gone := vault.Key{Tier: seal.TierEntity, Key: "row-011.json"}.InCategory(cat("cat4"))
	if err := s.Rename(moved, movedTo); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(gone); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = OpenStore(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for k, ino := range inos {
		switch k {
		case moved:
			if v, err := s.Get(movedTo); err != nil || v.Ino != ino {
				t.Fatalf("renamed row after reopen: %+v %v, its number was %d", v, err, ino)
			}
		case gone:
			if v := mustWrite(t, s, k, `{"n":2}`); v.Ino != ino {
				t.Fatalf("a file made again under a removed row's name got %d, the name had %d", v.Ino, ino)
			}
		default:
			if v, err := s.Get(k); err != nil || v.Ino != ino {
				t.Fatalf("%v after reopen: %+v %v, its number was %d", k, v, err, ino)
			}
		}
	}
	if got := s.DirIno(seal.TierEntity, cat("cat3")); got != catIno {
		t.Fatalf("category number after reopen %d, was %d", got, catIno)
	}
	fresh := mustWrite(t, s, moved, `{"n":3}`).Ino
	for k, ino := range inos {
		if ino == fresh && k != moved {
			t.Fatalf("the name a rename left got %d, the number of %v", fresh, k)
		}
	}
}

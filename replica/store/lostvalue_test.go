package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// TestLostValueReadsAsError: a body whose bytes in the value log never reached the disk (a
// power cut after badger wrote a table pointing at them, its pages read back as zeros) reads as
// an error naming the cause and the way out, never as empty or other content, and a push
// reading it for an epoch fails instead of anchoring what it read.
func TestLostValueReadsAsError(t *testing.T) {
	r := newTestStore(t)
	k := vault.Key{Tier: "state", Key: "large"}
	body := []byte(strings.Repeat("lost-body-marker ", maxPiecedBody/17+1)) // in the value log
	if _, err := r.Write(k, body, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	loseValuePages(t, r.dir, []byte("lost-body-marker"), allPages)
	r.open(t)
	got, err := r.Content(k)
	if err == nil {
		t.Fatalf("a body whose bytes were lost reads %d bytes (%.20q) and no error", len(got), got)
	}
	if !errors.Is(err, errValueLost) || !strings.Contains(err.Error(), "power cut") || !strings.Contains(err.Error(), "write it again") {
		t.Errorf("the error does not name the cause and the way out: %v", err)
	}
	r.now = func() time.Time { return time.Now().Add(time.Hour) } // settled: a push takes it
	p, err := r.CollectForPush(func(*seal.Row) string { return "" })
	if err == nil {
		defer p.Close()
		var row seal.Row
		for i := range p.Rows {
			if row, err = p.Row(i); err != nil {
				break
			}
		}
		if err == nil {
			t.Fatalf("a push collects %d rows and reads them all (the last %d bytes); want the lost body refused", len(p.Rows), row.Body.Len())
		}
	}
	if !errors.Is(err, errValueLost) || !strings.Contains(err.Error(), "staged row state large") {
		t.Fatalf("a push reading the lost body: %v, want it refused naming the row", err)
	}
}

// pagesLost says which of the pages holding a marker loseValuePages zeroes.
type pagesLost int

const (
	allPages    pagesLost = iota
	middlePages           // those between the first and the last: the entry's header and checksum are kept
	lastPage              // the last in the value logs: of the last value written that holds the marker
)

// loseValuePages zeroes the pages of the value logs in dir that hold part of marker (which
// ones: lost), as a power cut loses pages that were never synced.
func loseValuePages(t *testing.T, dir string, marker []byte, lost pagesLost) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no value log under %s (%v)", dir, err)
	}
	const page = 4096
	held := make([][]int, len(logs)) // by log, the offsets of the pages holding the marker
	for i, name := range logs {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(b); off += page {
			if bytes.Contains(b[off:min(off+page, len(b))], marker[:6]) {
				held[i] = append(held[i], off)
			}
		}
		switch {
		case lost == middlePages && len(held[i]) > 2:
			held[i] = held[i][1 : len(held[i])-1]
		case lost == middlePages:
			held[i] = nil
		}
	}
	if lost == lastPage {
		for i := range held {
			if n := len(held[i]); n > 0 {
				for j := range held[:i] {
					held[j] = nil
				}
				held[i] = held[i][n-1:]
			}
		}
	}
	zeroed := 0
	for i, name := range logs {
		if len(held[i]) == 0 {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, off := range held[i] {
			clear(b[off:min(off+page, len(b))])
			zeroed++
		}
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if zeroed == 0 {
		t.Fatalf("%q is in no value log", marker)
	}
}

// TestLostMirrorValueReadsAsError: the same for an anchored row's body in the mirror.
func TestLostMirrorValueReadsAsError(t *testing.T) {
	r := newTestStore(t)
	body := strings.Repeat("gone-mirror-marker ", 300)
	anchorRows(t, r, seal.Row{Tier: "reference", Key: "anchored", Body: seal.BodyString(body)})
	k := vault.Key{Tier: "reference", Key: "anchored"}
	if got, err := r.Content(k); err != nil || string(got) != body {
		t.Fatalf("before the cut: %d bytes, %v", len(got), err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	loseValuePages(t, r.dir, []byte("gone-mirror-marker"), allPages)
	r.open(t)
	if got, err := r.Content(k); !errors.Is(err, errValueLost) {
		t.Fatalf("an anchored body whose bytes were lost reads %d bytes, %v; want errValueLost", len(got), err)
	}
}

// TestDamagedValueReadsAsError: a body of which only pages in the middle were lost (its entry's
// header and checksum kept), in a value log badger has moved on from (it checks only the newest
// one when it opens), fails its checksum and reads as an error, not as the body with a hole of
// zeros.
func TestDamagedValueReadsAsError(t *testing.T) {
	r := newTestStore(t)
	k := vault.Key{Tier: "state", Key: "long"}
	body := []byte(strings.Repeat("damaged-body-marker ", 1000)) // 20 KB: five pages
	if _, err := r.Write(k, body, time.Now()); err != nil {
		t.Fatal(err)
	}
	filler := bytes.Repeat([]byte("f"), 1<<20)
	for i := 0; i*len(filler) <= valueLogFileSize; i++ { // the next value log
		filler[0] = byte('a' + i%26)
		if _, err := r.Write(vault.Key{Tier: "state", Key: fmt.Sprint("filler", i)}, filler, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if logs, _ := filepath.Glob(filepath.Join(r.dir, "*.vlog")); len(logs) < 2 {
		t.Fatalf("value logs %v: the writes did not fill the first", logs)
	}
	loseValuePages(t, r.dir, []byte("damaged-body-marker"), middlePages)
	r.open(t)
	if got, err := r.Content(k); !errors.Is(err, errValueLost) {
		t.Fatalf("a body with a lost page in its middle reads %d bytes (%d zeros), %v; want errValueLost", len(got), bytes.Count(got, []byte{0}), err)
	}
}

// anchoredDoc anchors the reference row doc, with a body of 5-6 KB (a value log's) made of
// marker repeated.
func anchoredDoc(t *testing.T, r *testStore, marker string) (seal.Row, vault.Key) {
	t.Helper()
	row := seal.Row{Tier: "reference", Key: "doc", Body: seal.BodyString(strings.Repeat(marker+" ", 400))}
	anchorRows(t, r, row)
	return row, vault.Key{Tier: "reference", Key: "doc"}
}

// TestRepairBodiesOnlyAsAnchored: RepairBodies puts a lost mirror body back only from a row
// whose leaf is the anchored one: a copy with other content is refused and the row stays an
// error; the anchored copy is put back, and a second pass finds nothing to do.
func TestRepairBodiesOnlyAsAnchored(t *testing.T) {
	r := newTestStore(t)
	row, k := anchoredDoc(t, r, "repair-marker")
	body := string(row.Body.Bytes())
	v, err := r.Get(k)
	if err != nil || v.Anchor == nil {
		t.Fatalf("the anchored row: %+v, %v", v, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	loseValuePages(t, r.dir, []byte("repair-marker"), allPages)
	r.open(t)
	asked := 0
	other := row
	other.Body = seal.BodyString(strings.Repeat("something else ", 400))
	n, unrepaired, err := r.RepairBodies(func(info *vault.EpochInfo, _ *PendingPush) ([]seal.Row, error) {
		asked++
		if info.Seq != v.Anchor.Seq || info.Block != v.Anchor.Block {
			t.Errorf("asked for epoch %d (block %d), the row was anchored in %d (block %d)", info.Seq, info.Block, v.Anchor.Seq, v.Anchor.Block)
		}
		return []seal.Row{other}, nil
	})
	if err != nil || n != 0 || len(unrepaired) != 1 || unrepaired[0] != "reference doc" || asked != 1 {
		t.Fatalf("a copy with other content: put back %d, not %v, %v (asked %d times)", n, unrepaired, err, asked)
	}
	if _, err := r.Content(k); !errors.Is(err, errValueLost) {
		t.Fatalf("after refusing the other copy: %v, want errValueLost", err)
	}
	n, unrepaired, err = r.RepairBodies(func(*vault.EpochInfo, *PendingPush) ([]seal.Row, error) { return []seal.Row{row}, nil })
	if err != nil || n != 1 || len(unrepaired) != 0 {
		t.Fatalf("the anchored copy: put back %d, not %v, %v", n, unrepaired, err)
	}
	if got, err := r.Content(k); err != nil || string(got) != body {
		t.Fatalf("after the anchored copy was put back: %d bytes, %v", len(got), err)
	}
	n, unrepaired, err = r.RepairBodies(func(*vault.EpochInfo, *PendingPush) ([]seal.Row, error) {
		t.Fatal("asked for a row with nothing lost")
		return nil, nil
	})
	if err != nil || n != 0 || len(unrepaired) != 0 {
		t.Fatalf("a second pass: put back %d, not %v, %v", n, unrepaired, err)
	}
}

// TestUncleanStartDropsLostChanges: after a run that ended without closing the store, a staged
// change whose body a power cut lost is dropped before the tree loads: a new file is gone, a
// changed row shows its anchored version, a change whose body survived stays, and a push then
// reads every staged row.
func TestUncleanStartDropsLostChanges(t *testing.T) {
	r := newTestStore(t)
	anchored := strings.Repeat("anchored version ", 20) // in the tables: no page it shares with a lost one
	anchorRows(t, r, seal.Row{Tier: "reference", Key: "doc", Body: seal.BodyString(anchored)})
	write := func(tier, key, body string) vault.Key {
		k := vault.Key{Tier: tier, Key: key}
		if _, err := r.Write(k, []byte(body), time.Now()); err != nil {
			t.Fatal(err)
		}
		return k
	}
	doc := write("reference", "doc", strings.Repeat("changed-lost ", 500))
	fresh := write("state", "fresh", strings.Repeat("fresh-lost ", 500))
	kept := write("state", "kept", strings.Repeat("kept body ", 100)) // in pieces, in the memtable log
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	loseValuePages(t, r.dir, []byte("changed-lost"), allPages)
	loseValuePages(t, r.dir, []byte("fresh-lost"), allPages)
	// the power cut: the store was never closed
	if err := os.WriteFile(filepath.Join(r.dir, runningMarker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r.open(t)
	if rp := r.UncleanStart(); !rp.Unclean || rp.LostChanges != 2 {
		t.Fatalf("UncleanStart: %v, %d changes dropped; want true, 2", rp.Unclean, rp.LostChanges)
	}
	if got, err := r.Content(doc); err != nil || string(got) != anchored {
		t.Fatalf("the changed row: %.30q, %v; want its anchored version", got, err)
	}
	if _, err := r.Get(fresh); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("the new file: %v; want it gone", err)
	}
	if got, err := r.Content(kept); err != nil || string(got) != strings.Repeat("kept body ", 100) {
		t.Fatalf("the change whose body survived: %.30q, %v", got, err)
	}
	r.now = func() time.Time { return time.Now().Add(time.Hour) }
	p, err := r.CollectForPush(func(*seal.Row) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if len(p.Rows) != 1 || p.Rows[0].Key != "kept" {
		t.Fatalf("a push after the start collects %d rows", len(p.Rows))
	}
	if _, err := p.Row(0); err != nil {
		t.Fatal(err)
	}
}

// TestUncleanStartGoesBackToEarlierChange: a lost staged change that overwrote an earlier one
// (acknowledged, its body whole in badger) gives way to that one, not to the anchored version:
// whether the earlier body is in pieces or whole in the value log.
func TestUncleanStartGoesBackToEarlierChange(t *testing.T) {
	r := newTestStore(t)
	write := func(key, body string) {
		if _, err := r.Write(vault.Key{Tier: "state", Key: key}, []byte(body), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	piecesFirst := strings.Repeat("a first ", 250) // 2 KB: in pieces
	wholeFirst := strings.Repeat("b first ", 1000) // 8 KB: in the value log
	write("a", piecesFirst)
	write("b", wholeFirst)
	write("between", strings.Repeat("filler ", 1200)) // keeps b's first body off the pages lost below
	write("a", strings.Repeat("a-second-lost ", 500))
	write("b", strings.Repeat("b-second-lost ", 700))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	loseValuePages(t, r.dir, []byte("a-second-lost"), allPages)
	loseValuePages(t, r.dir, []byte("b-second-lost"), allPages)
	if err := os.WriteFile(filepath.Join(r.dir, runningMarker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r.open(t)
	if rp := r.UncleanStart(); !rp.Unclean || rp.LostChanges < 2 {
		t.Fatalf("UncleanStart: %v, %d changes undone; want true, 2 or more", rp.Unclean, rp.LostChanges)
	}
	for key, want := range map[string]string{"a": piecesFirst, "b": wholeFirst} {
		if got, err := r.Content(vault.Key{Tier: "state", Key: key}); err != nil || string(got) != want {
			t.Errorf("%s after the power cut: %.30q (%d bytes), %v; want its first version", key, got, len(got), err)
		}
	}
}

// TestUncleanStartLostRecord: a staged record large enough for the value log (its meta) whose
// bytes a power cut lost is undone like a lost body: the file goes back to the change before it,
// and the store opens.
func TestUncleanStartLostRecord(t *testing.T) {
	r := newTestStore(t)
	k := vault.Key{Tier: "reference", Key: "noted"}
	body := strings.Repeat("noted body ", 100) // in pieces
	if _, err := r.Write(k, []byte(body), time.Now()); err != nil {
		t.Fatal(err)
	}
	meta := `{"note":"` + strings.Repeat("meta-lost ", 120) + `"}`
	if err := r.SetAttr(k, "meta", &meta); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	loseValuePages(t, r.dir, []byte("meta-lost"), allPages)
	if err := os.WriteFile(filepath.Join(r.dir, runningMarker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r.open(t)
	if lost := r.UncleanStart().LostChanges; lost != 1 {
		t.Fatalf("%d changes undone, want 1", lost)
	}
	v, err := r.Get(k)
	if err != nil || v.Row.Meta != nil {
		t.Fatalf("after the power cut: %+v, %v; want the change before the meta", v, err)
	}
	if got, err := r.Content(k); err != nil || string(got) != body {
		t.Fatalf("after the power cut: %.30q, %v", got, err)
	}
}

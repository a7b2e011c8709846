package store

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// anchoredTwice anchors the reference row noted twice, in epoch 1 (block 100) and epoch 2
// (block 200), each version with a meta of metaBytes (a kilobyte or more) that carries its
// marker: its mirror record and its history records are large enough for a value log. It
// returns the plaintexts of the two epochs by seq.
func anchoredTwice(t *testing.T, r *testStore, metaBytes int, marker1, marker2 string) map[uint64]*seal.Plaintext {
	t.Helper()
	version := func(marker, body string) seal.Row {
		meta := `{"note":"` + strings.Repeat(marker+" ", metaBytes/(len(marker)+1)) + `"}`
		return seal.Row{Tier: "reference", Key: "noted", Body: seal.BodyString(body), Meta: &meta}
	}
	state := map[string]seal.Row{}
	epochs := map[uint64]*seal.Plaintext{}
	rows := []seal.Row{version(marker1, "first body"), version(marker2, "second body")}
	for i, row := range rows {
		seq := uint64(i + 1)
		p := plaintextFor(state, seq, []seal.Row{row}, nil)
		if _, _, err := r.ApplyEpoch(vault.EpochInfo{Seq: seq, Block: 100 * seq, Digest: common.Hash{byte(seq)}, Tx: "0x01",
			CreatedAt: p.CreatedAt}, p, ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
		epochs[seq] = p
	}
	return epochs
}

// cutPower closes r, loses the value-log pages holding each marker (which ones: lost), and
// leaves the store's running marker behind, as a power cut after those values were written but
// never synced would.
func cutPower(t *testing.T, r *testStore, lost pagesLost, markers ...string) {
	t.Helper()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, m := range markers {
		loseValuePages(t, r.dir, []byte(m), lost)
	}
	if err := os.WriteFile(filepath.Join(r.dir, runningMarker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestUncleanStartRebuildsLostRecords: a power cut took the bytes of an anchored row's mirror
// record and of both versions in its history (each with a meta large enough for a value log).
// The next open rebuilds all three from the epochs that anchored them, asking for each epoch
// once, and the row and its history read as anchored, meta and body. Without the rebuild the
// store refuses to open.
func TestUncleanStartRebuildsLostRecords(t *testing.T) {
	r := newTestStore(t)
	epochs := anchoredTwice(t, r, 1200, "meta-one-lost", "meta-two-lost")
	k := vault.Key{Tier: "reference", Key: "noted"}
	cutPower(t, r, allPages, "meta-one-lost", "meta-two-lost")

	asked := map[uint64]int{}
	s, err := OpenStoreWith(r.dir, func(info *vault.EpochInfo, _ *PendingPush) ([]seal.Row, error) {
		asked[info.Seq]++
		if info.Block != 100*info.Seq || info.Digest != (common.Hash{byte(info.Seq)}) {
			t.Errorf("asked for epoch %d with block %d and digest %x: not the recorded ones", info.Seq, info.Block, info.Digest)
		}
		return epochs[info.Seq].Rows, nil
	})
	if err != nil {
		t.Fatalf("open after the power cut: %v", err)
	}
	r.Store = s
	t.Cleanup(func() { s.Close() })
	rp := s.UncleanStart()
	if !rp.Unclean || rp.Records != 3 || rp.RecordsLeft != 0 || asked[1] != 1 || asked[2] != 1 {
		t.Fatalf("repair %+v, epochs asked for %v; want 3 records rebuilt, each epoch asked for once", rp, asked)
	}
	for _, c := range []struct {
		block uint64
		seq   uint64
	}{{100, 1}, {150, 1}, {200, 2}, {0, 2}} {
		want := epochs[c.seq].Rows[0]
		var (
			v    *vault.Version
			body []byte
			err  error
		)
		if c.block == 0 {
			if v, err = s.Get(k); err == nil {
				body, err = s.Content(k)
			}
		} else {
			v, body, err = s.At(c.block).Read(k)
		}
		if err != nil {
			t.Fatalf("at block %d: %v", c.block, err)
		}
		if v.Row.Meta == nil || *v.Row.Meta != *want.Meta || string(body) != string(want.Body.Bytes()) || v.Anchor == nil || v.Anchor.Seq != c.seq {
			t.Errorf("at block %d: anchor %+v, body %q; want epoch %d's version", c.block, v.Anchor, body, c.seq)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := OpenStoreWith(r.dir, func(*vault.EpochInfo, *PendingPush) ([]seal.Row, error) {
		t.Error("a clean open asked for an epoch")
		return nil, nil
	})
	if err != nil {
		t.Fatalf("the clean open after the rebuild: %v", err)
	}
	r.Store = again
	if got, err := again.Content(k); err != nil || string(got) != "second body" {
		t.Fatalf("after a clean restart: %q, %v", got, err)
	}
}

// TestUncleanStartRefusesUnrebuildableRecord: when the epoch that anchored a lost mirror record
// cannot be had (not in the cache, or not carrying the row), the open fails naming the cause and
// the way out, and loses nothing: the next open that has the epoch rebuilds the record.
func TestUncleanStartRefusesUnrebuildableRecord(t *testing.T) {
	r := newTestStore(t)
	epochs := anchoredTwice(t, r, 1200, "meta-kept", "meta-gone")
	cutPower(t, r, allPages, "meta-gone")
	for name, rows := range map[string]EpochRows{
		"no epochs at hand": nil,
		"not in the cache": func(info *vault.EpochInfo, _ *PendingPush) ([]seal.Row, error) {
			return nil, errors.New("epoch 2 is not in the epoch cache")
		},
		"another row": func(*vault.EpochInfo, *PendingPush) ([]seal.Row, error) {
			return []seal.Row{{Tier: "reference", Key: "other"}}, nil
		},
	} {
		s, err := OpenStoreWith(r.dir, rows)
		if err == nil {
			s.Close()
			t.Fatalf("%s: the store opened with a lost mirror record", name)
		}
		if !strings.Contains(err.Error(), "1 anchored rows lost their records in a power cut") || !strings.Contains(err.Error(), "move KINT_HOME/db aside") {
			t.Errorf("%s: the refusal does not name the cause and the way out: %v", name, err)
		}
		if strings.Contains(err.Error(), "noted") || strings.Contains(err.Error(), "meta-gone") {
			t.Errorf("%s: the refusal names the row or its meta: %v", name, err)
		}
	}
	// the source is told of every epoch, once and in order, before it is asked for their rows
	var told, asked []uint64
	s, err := OpenStoreFrom(r.dir, func(info *vault.EpochInfo, _ *PendingPush) ([]seal.Row, error) {
		if !slices.Contains(told, info.Seq) {
			t.Errorf("epoch %d asked for without the source told of it first (told %v)", info.Seq, told)
		}
		asked = append(asked, info.Seq)
		return epochs[info.Seq].Rows, nil
	}, func(infos []vault.EpochInfo, journaled []*PendingPush) {
		for i := range infos {
			if journaled[i] != nil {
				t.Errorf("epoch %d told with a journal entry it has not", infos[i].Seq)
			}
			told = append(told, infos[i].Seq)
		}
	})
	if err != nil {
		t.Fatalf("the open with the epoch at hand: %v", err)
	}
	if !slices.IsSorted(told) || len(slices.Compact(slices.Clone(told))) != len(told) || !slices.Equal(told, slices.Compact(slices.Sorted(slices.Values(asked)))) {
		t.Errorf("the source was told of epochs %v and asked for %v; want each asked epoch told once, in order", told, asked)
	}
	r.Store = s
	t.Cleanup(func() { s.Close() })
	if rp := s.UncleanStart(); rp.Records < 2 {
		t.Fatalf("with the epoch at hand: %+v; want the mirror record and its history version rebuilt", rp)
	}
	if got, err := s.Content(vault.Key{Tier: "reference", Key: "noted"}); err != nil || string(got) != "second body" {
		t.Fatalf("with the epoch at hand: %q, %v", got, err)
	}
}

// TestUncleanStartRebuildsMirrorFromHistory: when only the mirror record was lost (written
// again after the epoch, the last value holding the row's 6 KB meta) and the history still
// holds its version whole, the mirror record is rebuilt from that version alone, without
// asking for the epoch.
func TestUncleanStartRebuildsMirrorFromHistory(t *testing.T) {
	r := newTestStore(t)
	epochs := anchoredTwice(t, r, 6000, "meta-first", "meta-mirror-only")
	id := rowID(vault.Key{Tier: "reference", Key: "noted"})
	if _, err := r.db.commit(func(txn *badger.Txn) error {
		m, _, err := getMirror(txn, id, true)
		if err != nil {
			return err
		}
		return putMirror(txn, id, &m)
	}); err != nil {
		t.Fatal(err)
	}
	cutPower(t, r, lastPage, "meta-mirror-only")
	s, err := OpenStoreWith(r.dir, func(info *vault.EpochInfo, _ *PendingPush) ([]seal.Row, error) {
		t.Errorf("asked for epoch %d: the history holds the version whole", info.Seq)
		return nil, nil
	})
	if err != nil {
		t.Fatalf("open after the power cut: %v", err)
	}
	r.Store = s
	t.Cleanup(func() { s.Close() })
	if rp := s.UncleanStart(); rp.Records != 1 || rp.RecordsLeft != 0 {
		t.Fatalf("repair %+v; want the mirror record rebuilt", rp)
	}
	k := vault.Key{Tier: "reference", Key: "noted"}
	v, err := s.Get(k)
	if err != nil || v.Row.Meta == nil || *v.Row.Meta != *epochs[2].Rows[0].Meta || v.Anchor == nil || v.Anchor.Seq != 2 || v.Anchor.Block != 200 {
		t.Fatalf("the row after the rebuild: %+v, %v; want epoch 2's version", v, err)
	}
	if got, err := s.Content(k); err != nil || string(got) != "second body" {
		t.Fatalf("the row's body after the rebuild: %q, %v", got, err)
	}
}

// TestUncleanRepairWaitsForTheEpochs: an open after a power cut that cannot have the epochs (a
// command that does not open the vault's key) puts nothing back and leaves the running marker
// after its clean close; the next open that has them puts the lost body back, and only its
// clean close takes the marker away.
func TestUncleanRepairWaitsForTheEpochs(t *testing.T) {
	r := newTestStore(t)
	row, k := anchoredDoc(t, r, "waits-for-epochs")
	body := string(row.Body.Bytes())
	cutPower(t, r, allPages, "waits-for-epochs")
	marker := filepath.Join(r.dir, runningMarker)
	noKey := func(*vault.EpochInfo, *PendingPush) ([]seal.Row, error) {
		return nil, errors.New("the vault's key is not open in this command")
	}
	for _, rows := range []EpochRows{nil, noKey} {
		s, err := OpenStoreWith(r.dir, rows)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Content(k); !errors.Is(err, errValueLost) {
			t.Fatalf("without the epochs: %v; want errValueLost", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("after a clean close that left the body lost: %v; want the running marker kept", err)
		}
	}
	s, err := OpenStoreWith(r.dir, func(*vault.EpochInfo, *PendingPush) ([]seal.Row, error) { return []seal.Row{row}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if rp := s.UncleanStart(); !rp.Unclean || rp.Bodies != 1 || len(rp.BodiesLeft) != 0 {
		t.Fatalf("with the epochs at hand: %+v; want the body put back", rp)
	}
	if got, err := s.Content(k); err != nil || string(got) != body {
		t.Fatalf("with the epochs at hand: %d bytes, %v", len(got), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after the repair and a clean close: %v; want the running marker gone", err)
	}
}

// TestUncleanStartHandsOverTheJournaledEpoch: the open asks for an epoch's rows with the push
// journal's entry for it when the entry's digest is the one recorded for the epoch (its
// transaction carries the blob), and without it when there is none or its digest differs.
func TestUncleanStartHandsOverTheJournaledEpoch(t *testing.T) {
	for _, c := range []struct {
		name   string
		digest common.Hash // of the journal entry for epoch 2; zero: no entry
		handed bool
	}{
		{"the same digest", common.Hash{2}, true},
		{"another digest", common.Hash{9}, false},
		{"no entry", common.Hash{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newTestStore(t)
			epochs := anchoredTwice(t, r, 1200, "meta-one-kept", "meta-two-journaled")
			if c.digest != (common.Hash{}) {
				if err := r.PutPendingBatch([]PendingPush{{Seq: 2, Digest: c.digest, RawTx: []byte("signed")}}); err != nil {
					t.Fatal(err)
				}
			}
			cutPower(t, r, allPages, "meta-two-journaled")
			var handed *PendingPush
			s, err := OpenStoreWith(r.dir, func(info *vault.EpochInfo, journaled *PendingPush) ([]seal.Row, error) {
				if info.Seq == 2 {
					handed = journaled
				}
				return epochs[info.Seq].Rows, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			r.Store = s
			t.Cleanup(func() { s.Close() })
			if got := handed != nil; got != c.handed {
				t.Fatalf("the journal entry handed over: %v, want %v", got, c.handed)
			}
			if handed != nil && (handed.Seq != 2 || handed.Digest != c.digest || string(handed.RawTx) != "signed") {
				t.Errorf("handed over %+v, not epoch 2's entry", handed)
			}
		})
	}
}

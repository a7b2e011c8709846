package store

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// TestSummaryKeptUntilCommit: the status's reads over the whole store are kept until the next
// commit. A change made behind the store's back (straight into badger) is not seen until one;
// a write, a deletion and the apply of an epoch are seen at once.
func TestSummaryKeptUntilCommit(t *testing.T) {
	s := newTestStore(t)
	staged := func() int {
		t.Helper()
		sum, err := s.Summary()
		if err != nil {
			t.Fatal(err)
		}
		return sum.StagedRows
	}
	a := vault.Key{Tier: "state", Key: "a"}
	if _, err := s.Write(a, []byte("one"), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if n := staged(); n != 1 {
		t.Fatalf("staged %d after a write, want 1", n)
	}
	// a staged record dropped without a commit of the store: the kept answer stands
	if err := s.db.DB.Update(func(txn *badger.Txn) error { return txn.Delete([]byte(pStaged + rowID(a))) }); err != nil {
		t.Fatal(err)
	}
	if n := staged(); n != 1 {
		t.Fatalf("staged %d with no commit since, want the kept 1", n)
	}
	b := vault.Key{Tier: "state", Key: "b"}
	if _, err := s.Write(b, []byte("two"), time.Unix(2, 0)); err != nil {
		t.Fatal(err)
	}
	if n := staged(); n != 1 {
		t.Fatalf("staged %d after the next commit, want 1 (b; a's record is gone)", n)
	}
	// an epoch that anchors b, applied as this machine's own, leaves nothing staged
	row := seal.Row{Tier: "state", Key: "b", Body: seal.BodyString("two")}
	p := plaintextFor(map[string]seal.Row{}, 1, []seal.Row{row}, nil)
	if _, _, err := s.ApplyEpoch(vault.EpochInfo{Seq: 1, Block: 10}, p, ApplyOptions{Own: true}); err != nil {
		t.Fatal(err)
	}
	if n := staged(); n != 0 {
		t.Fatalf("staged %d after its epoch, want 0", n)
	}
	sum, err := s.Summary()
	if err != nil || sum.Mirror.Seq != 1 {
		t.Fatalf("mirror %+v %v, want seq 1", sum.Mirror, err)
	}
	// what a caller does to its copy stays with it
	sum.Held = append(sum.Held, vault.HeldRow{Key: "x"})
	if again, _ := s.Summary(); len(again.Held) != 0 {
		t.Fatalf("a caller's change reached the kept summary: %+v", again.Held)
	}
}

// TestSummaryNeverBehind: status readers running beside writers (seeded) never see fewer
// staged rows than the writes acknowledged before their read began, and once the writers stop
// the kept answers are what a fresh read gives.
func TestSummaryNeverBehind(t *testing.T) {
	s := newTestStore(t)
	var acked atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for i := 0; i < 150; i++ {
				k := vault.Key{Tier: "state", Key: fmt.Sprintf("w%d-%03d", w, i)}
				if _, err := s.Write(k, []byte(fmt.Sprint(rng.Int())), time.Unix(int64(i), 0)); err != nil {
					t.Error(err)
					return
				}
				acked.Add(1)
			}
		}(w)
	}
	done := make(chan struct{})
	var readers sync.WaitGroup
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				before := acked.Load()
				sum, err := s.Summary()
				if err != nil {
					t.Error(err)
					return
				}
				if int64(sum.StagedRows) < before {
					t.Errorf("a summary shows %d staged rows after %d writes were acknowledged", sum.StagedRows, before)
					return
				}
				if inc := s.KintIncompatible(); len(inc) != 0 {
					t.Errorf("incompatible rows in a vault of plain state rows: %+v", inc)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	readers.Wait()
	kept, err := s.Summary()
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := s.readSummary()
	if err != nil {
		t.Fatal(err)
	}
	if kept.StagedRows != 300 || !reflect.DeepEqual(kept, fresh) {
		t.Fatalf("kept %+v\nfresh %+v", kept, fresh)
	}
}

// BenchmarkSummary times the store's part of a read of .kint/status on a vault of 20,000 rows
// anchored by 500 epochs: kept (no commit since the last read) and read again after a commit.
func BenchmarkSummary(b *testing.B) {
	s := newTestStore(b)
	state := map[string]seal.Row{}
	const epochs, perEpoch = 500, 40
	for seq := uint64(1); seq <= epochs; seq++ {
		rows := make([]seal.Row, perEpoch)
		for i := range rows {
			rows[i] = seal.Row{Tier: "entity", Category: cat(fmt.Sprintf("c%03d", seq%100)), Key: fmt.Sprintf("k%05d", int(seq)*perEpoch+i), Body: seal.BodyString(`{"v":1}`)}
		}
		p := plaintextFor(state, seq, rows, nil)
		if _, _, err := s.ApplyEpoch(vault.EpochInfo{Seq: seq, Block: 10 * seq, Digest: common.Hash{byte(seq), byte(seq >> 8)}}, p, ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	read := func(b *testing.B) {
		if _, err := s.Summary(); err != nil {
			b.Fatal(err)
		}
		if len(s.KintIncompatible()) != 0 {
			b.Fatal("incompatible rows")
		}
	}
	b.Run("kept", func(b *testing.B) {
		for b.Loop() {
			read(b)
		}
	})
	k := vault.Key{Tier: "state", Key: "note"}
	b.Run("after a commit", func(b *testing.B) {
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			if _, err := s.Write(k, []byte(fmt.Sprint(i)), time.Unix(int64(i), 0)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			read(b)
		}
	})
}

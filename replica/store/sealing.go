package store

import (
	"errors"
	"fmt"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// What a push reads from the store and writes back: the staged rows it seals (marked as
// sealing until it settles), the held ones, the root after an epoch, and the push journal.

// PendingPush is the durable push journal entry written before a transaction is sent, so a
// crash between send and receipt is adopted on the next start instead of read as a fork.
type PendingPush struct {
	Seq    uint64      `json:"seq"`
	Prev   common.Hash `json:"prev"`
	Digest common.Hash `json:"digest"`
	Tx     common.Hash `json:"tx"`
	RawTx  []byte      `json:"raw_tx"`
	// IDs are the canonical ids of the rows the epoch carries and deletes (JournalIDs): the
	// open marks them sealing until the entry is settled. The epoch's plaintext is had from
	// the blob in RawTx's calldata with the vault's key; an entry written before layout 7
	// kept it in Plaintext instead, more than three times the bytes to sync before a send.
	IDs       []string `json:"ids,omitempty"`
	Plaintext []byte   `json:"plaintext,omitempty"`
	Bucket    int      `json:"bucket"`
	// Stage is how far the push got; Block is where its transaction landed, from
	// JournalReceipt on. An entry written before the stage was kept has none (0).
	Stage JournalStage `json:"stage,omitempty"`
	Block uint64       `json:"block,omitempty"`
}

// JournalStage is how far the push of a journaled epoch got.
type JournalStage uint8

const (
	// JournalUnknown: an entry from before the stage was kept; the chain tells everything.
	JournalUnknown JournalStage = iota
	// JournalSealed: journaled before the send. A crash can come after the node took the
	// transaction and before the stage moved on, so it may have been sent all the same.
	JournalSealed
	// JournalSent: the node took the transaction.
	JournalSent
	// JournalReceipt: its receipt was seen, in Block; the epoch is not applied yet.
	JournalReceipt
)

func (s JournalStage) String() string {
	switch s {
	case JournalSealed:
		return "sealed"
	case JournalSent:
		return "sent"
	case JournalReceipt:
		return "receipt seen"
	}
	return "no stage"
}

// CollectStaged reads the staged rows that can be anchored and the deletions, and lists the
// held ones. With mark set, it marks what it read as sealing in the same instant, so no
// change can slip between the read and the mark.
func (s *Store) CollectStaged(mark bool) (rows []seal.Row, dels []seal.Deleted, held []vault.HeldRow, err error) {
	return s.collectStaged(mark, false)
}

// CollectSettled is CollectStaged leaving out (and not marking) the new state and reference
// rows that have not settled yet (see SettleWait): they stay staged for the next push.
func (s *Store) CollectSettled(mark bool) (rows []seal.Row, dels []seal.Deleted, held []vault.HeldRow, err error) {
	return s.collectStaged(mark, true)
}

func (s *Store) collectStaged(mark, settled bool) (rows []seal.Row, dels []seal.Deleted, held []vault.HeldRow, err error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	err = s.db.View(func(txn *badger.Txn) error {
		return s.scanCollect(txn, mark, settled, &dels, &held, func(st *stagedRec) error {
			rows = append(rows, st.Row)
			return nil
		})
	})
	return
}

// scanCollect reads what a push anchors (see collectStaged) in txn, handing each row's staged
// record to add with its body, and appending the deletions and the
// rows held to dels and held. The caller holds t.mu.
func (s *Store) scanCollect(txn *badger.Txn, mark, settled bool, dels *[]seal.Deleted, held *[]vault.HeldRow, add func(st *stagedRec) error) error {
	now := s.now()
	return scanStaged(txn, true, func(id string, st *stagedRec) error {
		if settled && st.Held == "" {
			if wait, err := s.unsettled(txn, id, st, now); err != nil || wait > 0 {
				return err
			}
		}
		if mark && st.Held == "" {
			s.sealing[id] = true
		}
		switch {
		case st.Del:
			if _, err := txn.Get([]byte(pMirror + id)); errors.Is(err, badger.ErrKeyNotFound) {
				return nil // a row that was never anchored: nothing to delete
			}
			*dels = append(*dels, seal.Deleted{Tier: st.Row.Tier, Category: st.Row.Category, Key: st.Row.Key})
		case st.Held != "":
			*held = append(*held, vault.HeldRow{Tier: st.Row.Tier, Category: st.Row.Category, Key: st.Row.Key, Reason: st.Held})
		default:
			return add(st)
		}
		return nil
	})
}

// PushRows is what a push anchors, read at one instant: the settled staged rows, the
// deletions and the held rows. The rows are kept without their bodies (Row reads each one's
// from a read snapshot of that instant), so a push holds the bodies of the epochs it is
// sealing, not of its whole change set. Close it when done.
type PushRows struct {
	Rows []seal.Row // in canonical id order; a body stored apart is left out (see Row)
	Dels []seal.Deleted
	Held []vault.HeldRow // held before, and held by the collect's check
	// places says where the body of each row is, for Row to read it from the snapshot
	places []bodyPlace
	pieces *pieceReader // reads the bodies in pieces, in the rows' order
	txn    *badger.Txn
	s      *Store
	once   sync.Once
}

// CollectForPush is CollectSettled, marking, for a push that seals the rows one epoch at a
// time: each row check gives a reason for (a row that cannot be anchored) is held, with that
// reason, instead of collected.
func (s *Store) CollectForPush(check func(row *seal.Row) string) (*PushRows, error) {
	s.gcHeld.RLock()
	p := &PushRows{s: s}
	type refusal struct {
		row seal.Row
		why string
	}
	var refused []refusal
	err := func() error {
		s.t.mu.Lock()
		defer s.t.mu.Unlock()
		// the snapshot is taken under the lock a write holds while it commits: the rows it
		// holds are exactly those marked sealing below, and a write after it sees the marks
		p.txn = s.db.NewTransaction(false)
		return s.scanCollect(p.txn, true, true, &p.Dels, &p.Held, func(st *stagedRec) error {
			if why := check(&st.Row); why != "" {
				refused = append(refused, refusal{st.Row, why})
				return nil
			}
			r := st.Row
			if st.RawBody {
				r.Body = seal.Body{}
			}
			p.Rows, p.places = append(p.Rows, r), append(p.places, bodyPlace{apart: st.RawBody, pieces: st.Pieces})
			return nil
		})
	}()
	for i := 0; err == nil && i < len(refused); i++ {
		f := &refused[i]
		if err = s.Hold(f.row, f.why); err == nil {
			p.Held = append(p.Held, vault.HeldRow{Tier: f.row.Tier, Category: f.row.Category, Key: f.row.Key, Reason: f.why})
		}
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Row is row i with its body, as it was when the rows were collected. The collect's copy is
// let go: each row is read once, by the goroutine that splits the change set.
func (p *PushRows) Row(i int) (seal.Row, error) {
	row := p.Rows[i]
	p.Rows[i] = seal.Row{}
	if !p.places[i].apart {
		return row, nil
	}
	rec := stagedRec{Row: row, RawBody: true, Pieces: p.places[i].pieces}
	if rec.Pieces > 0 && p.pieces == nil {
		p.pieces = newPieceReader(p.txn)
	}
	err := stagedBody(p.txn, p.pieces, row.ID(), &rec)
	return rec.Row, stagedRowError(&row, err)
}

// Close ends the snapshot; it may be called more than once.
func (p *PushRows) Close() {
	p.once.Do(func() {
		p.pieces.close()
		p.txn.Discard()
		p.s.gcHeld.RUnlock()
	})
}

// Hold marks a staged row as held with reason, persisted so status and xattrs show it.
func (s *Store) Hold(row seal.Row, reason string) error {
	id := row.ID()
	return s.update(func(txn *badger.Txn, apply *[]func()) error {
		st, found, err := getStaged(txn, id)
		if err != nil || !found {
			return err
		}
		if st.Del || seal.Leaf(&st.Row) != seal.Leaf(&row) {
			return nil // changed since the push read it: the new version gets its own check
		}
		st.Held = reason
		if err := putStaged(txn, id, &st); err != nil {
			return err
		}
		k := rowKey(&st.Row)
		*apply = append(*apply, func() { s.t.setHeld(k, reason) })
		return nil
	})
}

// SealedChanges is what one sealed epoch does to the leaves of rows_root, each leaf hashed
// once: a push seals every epoch on top of the ones before it that are not applied yet, and
// hashing those again for each epoch made a push of n epochs cost n² leaves.
type SealedChanges struct {
	Seq uint64
	ch  []leafChange
}

// ChunkChanges hashes the leaves of chunk, the epoch seq.
func ChunkChanges(seq uint64, chunk seal.Chunk) SealedChanges {
	puts := make(map[string]common.Hash, len(chunk.Rows))
	for i := range chunk.Rows {
		puts[chunk.Rows[i].ID()] = seal.Leaf(&chunk.Rows[i])
	}
	dels := make(map[string]seal.Deleted, len(chunk.Deleted))
	for _, d := range chunk.Deleted {
		dels[d.ID()] = d
	}
	return SealedChanges{Seq: seq, ch: leafChanges(puts, dels)}
}

func pendingKey(seq uint64) string   { return pPending + string(be64(seq)) }
func epochKey(seq uint64) string     { return pEpoch + string(be64(seq)) }
func journalAtKey(seq uint64) string { return pJournalAt + string(be64(seq)) }

// journalAt is how far the push of a journal entry got, kept apart from the entry (the
// plaintext and the signed transaction, tens of KB) so that moving it on writes a few bytes
// instead of decoding and rewriting the entry. It overrides the stage inside the entry, which
// is what an entry written before it was kept has.
type journalAt struct {
	Stage JournalStage `json:"stage"`
	Block uint64       `json:"block,omitempty"`
}

// putPending writes a journal entry and its stage.
func putPending(txn *badger.Txn, p *PendingPush) error {
	if err := setJSON(txn, pendingKey(p.Seq), p); err != nil {
		return err
	}
	return setJSON(txn, journalAtKey(p.Seq), &journalAt{Stage: p.Stage, Block: p.Block})
}

// deletePending clears the journal entry of seq and its stage.
func deletePending(txn *badger.Txn, seq uint64) error {
	if err := txn.Delete([]byte(pendingKey(seq))); err != nil {
		return err
	}
	return txn.Delete([]byte(journalAtKey(seq)))
}

// PutPendingBatch writes the push journal entries of epochs about to be sent, in one synced
// commit.
func (s *Store) PutPendingBatch(ps []PendingPush) error {
	return s.db.Update(func(txn *badger.Txn) error {
		for i := range ps {
			if err := putPending(txn, &ps[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// ClearPending clears the push journal entries of epochs applied here and, when seen is not
// nil, records it as the newest chain head seen, in one commit.
func (s *Store) ClearPending(seqs []uint64, seen *vault.Head) error {
	return s.db.Update(func(txn *badger.Txn) error {
		if seen != nil {
			if err := setJSON(txn, kSeen, seen); err != nil {
				return err
			}
		}
		for _, seq := range seqs {
			if err := deletePending(txn, seq); err != nil {
				return err
			}
		}
		return nil
	})
}

// SetPendingStage moves the push journal entry of seq on to stage, landed in block for
// JournalReceipt. An entry already cleared stays cleared. The change is committed but not
// synced: it shares the sync of the next synced commit (the next epoch's journal entry, or
// ClearPending). A crash before that sync finds the entry at an earlier stage, which a push's
// recovery takes up again from there.
func (s *Store) SetPendingStage(seq uint64, stage JournalStage, block uint64) error {
	return s.db.commitOnly(func(txn *badger.Txn) error {
		if _, err := txn.Get([]byte(pendingKey(seq))); errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		return setJSON(txn, journalAtKey(seq), &journalAt{Stage: stage, Block: block})
	})
}

// DeletePending clears the push journal entry of seq.
func (s *Store) DeletePending(seq uint64) error {
	return s.db.Update(func(txn *badger.Txn) error { return deletePending(txn, seq) })
}

// PendingPushes lists the push journal's entries, oldest first.
func (s *Store) PendingPushes() ([]PendingPush, error) {
	var pend []PendingPush
	err := s.db.View(func(txn *badger.Txn) error {
		return scanPrefix(txn, pPending, func(k, v []byte) error {
			var p PendingPush
			if err := decodeJSON(v, &p); err != nil {
				return err
			}
			var at journalAt
			found, err := getJSON(txn, journalAtKey(p.Seq), &at)
			if err != nil {
				return err
			}
			if found {
				p.Stage, p.Block = at.Stage, at.Block
			}
			pend = append(pend, p)
			return nil
		})
	})
	return pend, err
}

// EndSealing settles the rows a push or a push journal entry marked as sealing, once none
// holds them any more: a staged change that is back to the anchored version is unstaged, and
// a staged deletion of a row that was never anchored is dropped. Rows still in the journal
// (a push whose outcome is unknown) stay marked.
func (s *Store) EndSealing() error {
	keep, err := s.journalIDs()
	if err != nil {
		return err
	}
	return s.update(func(txn *badger.Txn, apply *[]func()) error {
		for id := range s.sealing {
			if keep[id] {
				continue
			}
			if err := s.unstageIfAnchored(txn, apply, id); err != nil {
				return err
			}
		}
		*apply = append(*apply, func() { s.sealing = keep })
		return nil
	})
}

// LoadSealing marks the rows the push journal's entries carry as sealing: an interrupted
// push sent them, and they stay sealing until its entry is settled.
func (s *Store) LoadSealing() error {
	ids, err := s.journalIDs()
	if err != nil {
		return err
	}
	s.t.mu.Lock()
	s.sealing = ids
	s.t.mu.Unlock()
	return nil
}

// unstageIfAnchored drops the staged record of id when it changes nothing the mirror holds. Its
// stored leaf says so; the body stays unread.
func (s *Store) unstageIfAnchored(txn *badger.Txn, apply *[]func(), id string) error {
	st, found, err := getStagedHead(txn, id)
	if err != nil || !found {
		return err
	}
	m, inMirror, err := getMirror(txn, id, false)
	if err != nil {
		return err
	}
	k := rowKey(&st.Row)
	switch {
	case st.Del && !inMirror:
		if err := delStaged(txn, id, &st); err != nil {
			return err
		}
	case !st.Del && inMirror && st.rowLeaf() == m.Leaf && eqStrp(m.Row.Category, st.Row.Category):
		if err := delStaged(txn, id, &st); err != nil {
			return err
		}
		n := s.nodeFromMirror(&m)
		ino, err := s.t.ino(txn, inoName(n.key))
		if err != nil {
			return err
		}
		n.ino = ino
		*apply = append(*apply, func() {
			if old := s.t.get(k); old != nil && old.staged {
				s.stagedBytes -= old.size
			}
			s.t.put(n)
		})
	}
	return nil
}

// JournalIDs are the canonical ids of the rows p carries and deletes, as its push journal
// entry keeps them.
func JournalIDs(p *seal.Plaintext) []string {
	ids := make([]string, 0, len(p.Rows)+len(p.Deleted))
	for i := range p.Rows {
		ids = append(ids, p.Rows[i].ID())
	}
	for _, d := range p.Deleted {
		ids = append(ids, d.ID())
	}
	return ids
}

// journalIDs are the canonical ids of the rows the push journal's entries carry.
func (s *Store) journalIDs() (map[string]bool, error) {
	ids := map[string]bool{}
	err := s.db.View(func(txn *badger.Txn) error {
		return scanPrefix(txn, pPending, func(k, v []byte) error {
			var p PendingPush
			if err := decodeJSON(v, &p); err != nil {
				return err
			}
			entryIDs := p.IDs
			if len(p.Plaintext) > 0 { // written before layout 7
				pt, err := seal.DecodePlaintext(p.Plaintext)
				if err != nil {
					return fmt.Errorf("push journal entry %d: %w", p.Seq, err)
				}
				entryIDs = JournalIDs(pt)
			}
			for _, id := range entryIDs {
				ids[id] = true
			}
			return nil
		})
	})
	return ids, err
}

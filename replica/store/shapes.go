package store

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// The shapes of rows kint's store can hold. kint mirrors a vault into Sibyl's tables:
// entities (category, name, status, body), state documents (key, body), reference documents
// (key, body, metadata) and journal events (the five fields); its restore deletes entities
// only. A row anchored in any other shape is one kint reports as drifted and anchors again
// without what it cannot hold, and a deletion it cannot replay brings the row back at its next
// push. So, unless the vault is marked as one kint never opens (vault.ModelFull), the store refuses
// here, whoever asks, what kint could not hold: status outside entities, meta outside
// references, and the deletion of an anchored state or reference row. The journal is
// append-only in either model.

// ValidModel reports whether m names a vault model ("" is the default, kint).
func ValidModel(m string) bool { return m == "" || m == vault.ModelKint || m == vault.ModelFull }

// SetModel sets the vault model the store enforces ("" is kint).
func (s *Store) SetModel(m string) { s.full.Store(m == vault.ModelFull) }

// Model is the vault model the store enforces.
func (s *Store) Model() string {
	if s.full.Load() {
		return vault.ModelFull
	}
	return vault.ModelKint
}

// wayOut is what a refusal of the kint model tells the user to do instead.
const wayOut = "if kint never opens this vault, kintfs vault-model full allows it"

// checkAttrShape refuses an attribute the model does not allow on k's tier, and a value that
// is not UTF-8 (kint's columns are text).
func (s *Store) checkAttrShape(k vault.Key, name string, value *string) error {
	if value != nil && !utf8.ValidString(*value) {
		return fmt.Errorf("%w: %s must be UTF-8 text", vault.ErrInvalid, name)
	}
	if s.full.Load() || value == nil {
		return nil // clearing is always allowed: it is how a row kint cannot hold is mended
	}
	switch {
	case name == "status" && k.Tier != seal.TierEntity:
		return fmt.Errorf("%w: status is kept on entity rows only (kint's store has no status for %s rows; %s)", vault.ErrNotPermitted, k.Tier, wayOut)
	case name == "meta" && k.Tier != seal.TierReference:
		return fmt.Errorf("%w: meta is kept on reference rows only (kint's store has no meta for %s rows; %s)", vault.ErrNotPermitted, k.Tier, wayOut)
	}
	return nil
}

// checkDelete refuses, inside txn, what would anchor the deletion of the row k: any journal
// event, and in the kint model an anchored state or reference row. A row only staged, never
// anchored, is removed freely: its deletion anchors nothing.
func (s *Store) checkDelete(txn *badger.Txn, k vault.Key, op string) error {
	if k.Local || k.Tier == vault.TrashTier {
		return nil
	}
	if k.Tier == seal.TierJournal {
		return fmt.Errorf("%w: the journal is append-only: its events cannot be %s", vault.ErrNotPermitted, op)
	}
	if s.full.Load() || k.Tier == seal.TierEntity {
		return nil
	}
	_, anchored, err := getMirror(txn, rowID(k), false)
	if err != nil || !anchored {
		return err
	}
	return fmt.Errorf("%w: an anchored %s row cannot be %s: kint's store has no delete for %s rows and would bring it back (empty it or leave it; %s)",
		vault.ErrNotPermitted, k.Tier, op, k.Tier, wayOut)
}

// A new state or reference row (never anchored) is a candidate temporary: sed -i and editors
// write a fresh file and rename it over the one they save, and a temporary anchored before it
// is renamed could never be removed (kint's store cannot delete it). So such a row is not
// sealed while a writer holds it open, nor for settleQuiet after its last change; a writer
// holding it open delays it settleOpen at most.
const (
	settleQuiet = 500 * time.Millisecond
	settleOpen  = 3 * time.Second
)

// writers counts the open writers of rows, by canonical id.
type writers struct {
	mu sync.Mutex
	n  map[string]int
}

// OpenedForWrite notes a writer opening k; ClosedForWrite its close.
func (s *Store) OpenedForWrite(k vault.Key) {
	if k.Local {
		return
	}
	id := rowID(k)
	s.writers.mu.Lock()
	if s.writers.n == nil {
		s.writers.n = map[string]int{}
	}
	s.writers.n[id]++
	s.writers.mu.Unlock()
}

// ClosedForWrite notes the close of a writer OpenedForWrite noted.
func (s *Store) ClosedForWrite(k vault.Key) {
	if k.Local {
		return
	}
	id := rowID(k)
	s.writers.mu.Lock()
	if s.writers.n[id] <= 1 {
		delete(s.writers.n, id)
	} else {
		s.writers.n[id]--
	}
	s.writers.mu.Unlock()
}

func (s *Store) openForWrite(id string) bool {
	s.writers.mu.Lock()
	defer s.writers.mu.Unlock()
	return s.writers.n[id] > 0
}

// unsettled is how long the staged row id (st) must still wait before it may be sealed; 0
// when it may be now. Only a state or reference row not anchored yet waits: the mirror is read,
// to see whether it is, only for such a row still inside its quiet period.
func (s *Store) unsettled(txn *badger.Txn, id string, st *stagedRec, now time.Time) (time.Duration, error) {
	if st.Del || (st.Row.Tier != seal.TierState && st.Row.Tier != seal.TierReference) || s.full.Load() {
		return 0, nil // in the full model an anchored temporary can still be removed
	}
	age := now.Sub(fromNanos(st.At))
	wait := settleQuiet - age
	if s.openForWrite(id) {
		wait = settleOpen - age
	}
	if wait <= 0 {
		return 0, nil
	}
	_, inMirror, err := getMirror(txn, id, false)
	if err != nil || inMirror {
		return 0, err
	}
	return wait, nil
}

// SettleWait is how long the newest of the new state and reference rows staged must still
// wait before a push may seal it (at most settleOpen); 0 when none must.
func (s *Store) SettleWait() time.Duration {
	now := s.now()
	var wait time.Duration
	_ = s.db.View(func(txn *badger.Txn) error {
		return scanStaged(txn, false, func(id string, st *stagedRec) error {
			if st.Held != "" {
				return nil
			}
			w, err := s.unsettled(txn, id, st, now)
			wait = max(wait, w)
			return err
		})
	})
	return wait
}

// invalidJournalKey is the local file a journal write that is not an event is kept in.
func invalidJournalKey(name string) vault.Key {
	return vault.Key{Tier: seal.TierJournal, Key: "." + strings.TrimPrefix(name, ".") + ".invalid", Local: true}
}

// keepInvalidJournal keeps content written to journal/<name> that is not an event as the local
// file journal/.<name>.invalid, so nothing written is lost, and returns why with its name.
func (s *Store) keepInvalidJournal(name string, content []byte, mtime time.Time, why error) error {
	k := invalidJournalKey(name)
	err := s.update(func(txn *badger.Txn, apply *[]func()) error {
		_, err := s.putLocal(txn, apply, k, content, mtime)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w; keeping what was written failed: %v", why, err)
	}
	return fmt.Errorf("%w (%w); what was written is kept as journal/%s: fix it and copy it into journal/ under any name, or rm it", vault.ErrKeptInvalid, why, k.Key)
}

// invalidJournalReason is the held reason shown for a kept invalid journal write.
const invalidJournalReason = "not a journal event (a JSON object of ts, evaluated, acted, forward, extra): fix it and copy it into journal/ under any name, or rm it"

// invalidJournals lists the kept invalid journal writes, as held rows.
func (s *Store) invalidJournals() []vault.HeldRow {
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	var out []vault.HeldRow
	for _, d := range s.t.list(seal.TierJournal, nil) {
		if d.Local && strings.HasSuffix(d.Name, ".invalid") {
			out = append(out, vault.HeldRow{Tier: seal.TierJournal, Key: d.Name, Reason: invalidJournalReason})
		}
	}
	return out
}

// Incompatible is a row anchored in a shape kint's store cannot hold.
type Incompatible struct {
	Tier     string  `json:"tier"`
	Category *string `json:"category"`
	Key      string  `json:"key"`
	Reason   string  `json:"reason"`
}

// KintIncompatible lists the anchored rows in shapes kint's store cannot hold (status outside
// entities, meta outside references), as anchored (a staged change that mends one counts once
// it is anchored), whatever the model.
func (s *Store) KintIncompatible() []Incompatible {
	out, _ := s.incompatible.get(s.commits(), func() ([]Incompatible, error) { return s.readKintIncompatible(), nil })
	return slices.Clone(out)
}

// readKintIncompatible reads KintIncompatible from the tree and the mirror.
func (s *Store) readKintIncompatible() []Incompatible {
	out := []Incompatible{}
	var restaged []string // rows anchored and changed since: their anchored shape is in the mirror
	s.t.mu.RLock()
	for _, files := range s.t.dirs {
		for _, n := range files.rows {
			switch {
			case n.anchor == nil: // never anchored (local files are not among the rows)
			case n.staged:
				restaged = append(restaged, rowID(n.key))
			default:
				row := n.row()
				out = appendIncompatible(out, &row)
			}
		}
	}
	s.t.mu.RUnlock()
	_ = s.db.View(func(txn *badger.Txn) error {
		for _, id := range restaged {
			if m, found, err := getMirror(txn, id, false); err == nil && found {
				out = appendIncompatible(out, &m.Row)
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Tier != b.Tier {
			return a.Tier < b.Tier
		}
		if ca, cb := derefOr(a.Category), derefOr(b.Category); ca != cb {
			return ca < cb
		}
		return a.Key < b.Key
	})
	return out
}

// appendIncompatible appends row when kint's store cannot hold its shape.
func appendIncompatible(out []Incompatible, row *seal.Row) []Incompatible {
	var why []string
	if row.Status != nil && row.Tier != seal.TierEntity {
		why = append(why, "status on a "+row.Tier+" row")
	}
	if row.Meta != nil && row.Tier != seal.TierReference {
		why = append(why, "meta on a "+row.Tier+" row")
	}
	if len(why) == 0 {
		return out
	}
	return append(out, Incompatible{Tier: row.Tier, Category: row.Category, Key: row.Key, Reason: strings.Join(why, ", ")})
}

func derefOr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

package store

import (
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// The mount's multi-step policies, each one transaction: a crash never leaves half of one.

// movedWindow is how long the status and meta of a row renamed away are kept for a new file
// of the same name: an editor renames the file to its backup and writes a fresh one at once.
const movedWindow = 10 * time.Second

// movedAttrs are the status and meta of a row renamed to a free name, and when it was.
type movedAttrs struct {
	status, meta *string
	at           time.Time
}

// RenameKeepingAttrs is Rename as a save through the mount needs it:
//   - a row moved onto a row, without status and meta of its own, takes those of the row it
//     replaces (sed -i and write-then-rename saves go through a fresh temporary row, and
//     saving a file must not drop its attributes);
//   - a row moved to a free name leaves its status and meta behind, in memory, for
//     movedWindow: a row created under the name it left within that time takes them (Create),
//     as Emacs's default save (file becomes file~, and a fresh file is written) needs.
//
// The rename and the attributes it keeps are staged in one transaction.
func (s *Store) RenameKeepingAttrs(from, to vault.Key) error {
	return s.rename(from, to, true)
}

// keepReplacedAttrs gives row, moved from from onto the existing row dst, dst's status and
// meta when the row moved had none: each one the vault model allows on to.
func (s *Store) keepReplacedAttrs(row *seal.Row, from, to vault.Key, src, dst *node) {
	if from.Local || to.Local || dst == nil || dst.ino == src.ino || to.Tier == seal.TierJournal {
		return
	}
	if src.status != nil || src.meta != nil {
		return
	}
	if s.checkAttrShape(to, "status", dst.status) == nil {
		row.Status = dst.status
	}
	if s.checkAttrShape(to, "meta", dst.meta) == nil {
		row.Meta = dst.meta
	}
}

// rememberMove notes, once the rename of src away from from to a free name commits, the
// status and meta it had there, for takeMoved. Callers hold t.mu.
func (s *Store) rememberMove(apply *[]func(), from vault.Key, src *node) {
	if from.Local || from.Tier == seal.TierJournal || src.status == nil && src.meta == nil {
		return
	}
	m := movedAttrs{status: src.status, meta: src.meta}
	*apply = append(*apply, func() {
		m.at = s.now()
		for name, old := range s.moved {
			if m.at.Sub(old.at) > movedWindow {
				delete(s.moved, name)
			}
		}
		s.moved[from] = m
	})
}

// takeMoved is the status and meta of the row renamed away from k within movedWindow (nil
// when none was), for the row created at k; the note is dropped once the create commits.
// Each is kept only where the vault model allows it. Callers hold t.mu.
func (s *Store) takeMoved(apply *[]func(), k vault.Key) (status, meta *string) {
	m, ok := s.moved[k]
	if !ok {
		return nil, nil
	}
	*apply = append(*apply, func() { delete(s.moved, k) })
	if s.now().Sub(m.at) > movedWindow {
		return nil, nil
	}
	if s.checkAttrShape(k, "status", m.status) == nil {
		status = m.status
	}
	if s.checkAttrShape(k, "meta", m.meta) == nil {
		meta = m.meta
	}
	return status, meta
}

// appendByRename appends the local file from of the journal as an event and removes it, in
// one transaction. Content that is no event is refused, the file left as it was.
func (s *Store) appendByRename(from vault.Key) error {
	return s.update(func(txn *badger.Txn, apply *[]func()) error {
		src := s.t.get(from)
		if src == nil {
			return vault.ErrNotFound
		}
		content, err := s.readContent(txn, src)
		if err != nil {
			return err
		}
		row, err := parseJournal(content)
		if err != nil {
			return fmt.Errorf("%w; the file is left where it was: fix it and move it again", err)
		}
		if _, err := s.appendJournalTx(txn, apply, row, src.modTime()); err != nil {
			return err
		}
		if err := s.step("journal"); err != nil {
			return err
		}
		if err := s.dropAttr(txn, apply, src.ino); err != nil {
			return err
		}
		return s.removeTx(txn, apply, from)
	})
}

// HistoryView is the read-only tree as anchored at or before block, refused with
// vault.ErrHistoryIncomplete when this machine does not hold the versions it shows (see
// CheckHistory).
func (s *Store) HistoryView(block uint64) (*History, error) {
	if err := s.CheckHistory(block); err != nil {
		return nil, err
	}
	return s.At(block), nil
}

// step runs stepHook, set by tests, between two steps of one transaction; an error there
// aborts the transaction, as a crash at that point would.
func (s *Store) step(name string) error {
	if s.stepHook == nil {
		return nil
	}
	return s.stepHook(name)
}

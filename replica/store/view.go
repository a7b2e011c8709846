package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"

	"kintfs/seal"
)

// liveNode is the node of k in the live tree. Callers hold t.mu.
func (s *Store) liveNode(k Key) (*node, error) {
	if s.applyErr != nil {
		return nil, s.applyErr
	}
	if n := s.t.get(k); n != nil {
		return n, nil
	}
	return nil, ErrNotFound
}

// Get returns the live version of k.
func (s *Store) Get(k Key) (*Version, error) {
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	n, err := s.liveNode(k)
	if err != nil {
		return nil, err
	}
	return s.dress(n.version()), nil
}

// Content returns the live file content of k.
func (s *Store) Content(k Key) ([]byte, error) {
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	n, err := s.liveNode(k)
	if err != nil {
		return nil, err
	}
	var out []byte
	err = s.db.View(func(txn *badger.Txn) error {
		var err error
		out, err = s.readContent(txn, n)
		return err
	})
	return out, err
}

// List lists one live directory, sorted by name.
func (s *Store) List(tier string, category *string) ([]Dirent, error) {
	if !validTier(tier) {
		return nil, ErrNotFound
	}
	s.t.mu.RLock()
	if err := s.applyErr; err != nil {
		s.t.mu.RUnlock()
		return nil, err
	}
	out := s.t.list(tier, category)
	missing := false
	for _, d := range out {
		if d.Dir && d.Ino == 0 {
			missing = true
		}
	}
	s.t.mu.RUnlock()
	if missing {
		for i := range out {
			if out[i].Dir {
				c := out[i].Name
				out[i].Ino = s.DirIno(tier, &c)
			}
		}
	}
	return out, nil
}

// HasCategory reports whether an entity category exists in the live tree.
func (s *Store) HasCategory(category string) bool {
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	return s.t.hasCategory(category)
}

// CategoryCount is the number of entity categories in the live tree.
func (s *Store) CategoryCount() (int, error) {
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	return s.t.categoryCount(), nil
}

// DirIno is the stable inode number of a tier directory or entity category.
func (s *Store) DirIno(tier string, category *string) uint64 {
	name := dirInoName(tier, category)
	s.t.mu.RLock()
	n, ok := s.t.inos[name]
	s.t.mu.RUnlock()
	if ok {
		return n
	}
	err := s.update(func(txn *badger.Txn, _ *[]func()) error {
		var err error
		n, err = s.t.ino(txn, name)
		return err
	})
	if err != nil {
		return 0
	}
	return n
}

// Write replaces the content of k, creating it, and stages the change durably.
func (s *Store) Write(k Key, content []byte, mtime time.Time) (*Version, error) {
	return s.write(k, content, mtime, nil)
}

// Create makes the file k, empty, with the permission bits perm kept as its local mode, in
// one step; an existing k is emptied and keeps its mode. It does not wait for the disk: the
// new file is durable with the next change or Sync (a close, fsync or rename), and a crash
// before that leaves it whole or not at all.
func (s *Store) Create(k Key, perm uint32, mtime time.Time) (*Version, error) {
	return s.write(k, nil, mtime, &perm)
}

func (s *Store) write(k Key, content []byte, mtime time.Time, perm *uint32) (*Version, error) {
	if err := checkKey(k); err != nil {
		return nil, err
	}
	if len(content) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrFileTooBig, keyString(k), len(content), MaxFileBytes)
	}
	if k.Tier == seal.TierJournal && !k.Local {
		v, err := s.appendJournal(content, mtime)
		if errors.Is(err, ErrInvalid) && len(content) > 0 {
			return nil, s.keepInvalidJournal(k.Key, content, mtime, err)
		}
		return v, err
	}
	var v *Version
	commit := s.update
	if perm != nil {
		commit = func(fn func(txn *badger.Txn, apply *[]func()) error) error {
			_, err := s.updateNoSync(fn)
			return err
		}
	}
	err := commit(func(txn *badger.Txn, apply *[]func()) error {
		old := s.t.get(k)
		var n *node
		var err error
		if k.Local {
			n, err = s.putLocal(txn, apply, k, content, mtime)
		} else {
			row := seal.Row{Tier: k.Tier, Key: k.Key, Category: k.Category}
			if old != nil {
				row = old.row
				row.Category = k.Category
			}
			body := string(content)
			row.Body = &body
			n, err = s.stagePut(txn, apply, row, mtime)
		}
		if err != nil {
			return err
		}
		if err := s.carryTimes(txn, apply, n, old, &mtime); err != nil {
			return err
		}
		if old == nil {
			if err := s.touchDirOf(txn, apply, k); err != nil {
				return err
			}
		}
		if perm != nil && old == nil {
			if err := s.changeAttr(txn, apply, n.ino, n.mtime, n.leaf, AttrChange{Perm: perm, Create: true}); err != nil {
				return err
			}
		}
		*apply = append(*apply, func() { v = s.dress(n.version()) })
		return nil
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// appendJournal stages a new journal event from the JSON object of its fields. Its key is its
// content; a second identical event takes the next free ordinal.
func (s *Store) appendJournal(content []byte, mtime time.Time) (*Version, error) {
	row, err := parseJournal(content)
	if err != nil {
		return nil, err
	}
	var n *node
	err = s.update(func(txn *badger.Txn, apply *[]func()) error {
		rows := []seal.Row{row}
		seal.AssignJournalKeys(rows, func(key string) bool {
			if s.t.get(Key{Tier: seal.TierJournal, Key: key}) != nil {
				return true
			}
			// a staged deletion hides the mirror row, but the key stays taken until anchored
			_, err := txn.Get([]byte(pMirror + seal.CanonicalID(seal.TierJournal, nil, key)))
			return err == nil
		})
		var err error
		if n, err = s.stagePut(txn, apply, rows[0], mtime); err != nil {
			return err
		}
		return s.touchDir(txn, apply, seal.TierJournal, nil)
	})
	if err != nil {
		return nil, err
	}
	return n.version(), nil
}

// Remove stages the deletion of a row, or deletes a local file. Its local attributes go with
// it: a file made again under its name starts with the default mode and its own times.
func (s *Store) Remove(k Key) error {
	return s.update(func(txn *badger.Txn, apply *[]func()) error {
		if n := s.t.get(k); n != nil {
			if err := s.dropAttr(txn, apply, n.ino); err != nil {
				return err
			}
		}
		if err := s.checkDelete(txn, k, "removed"); err != nil {
			return err
		}
		if err := s.dropTrashRow(txn, k); err != nil {
			return err
		}
		return s.removeTx(txn, apply, k)
	})
}

func (s *Store) removeTx(txn *badger.Txn, apply *[]func(), k Key) error {
	if s.t.get(k) == nil {
		return ErrNotFound
	}
	if err := s.touchDirOf(txn, apply, k); err != nil {
		return err
	}
	if k.Local {
		if err := delLocalRec(txn, localID(k)); err != nil {
			return err
		}
		*apply = append(*apply, func() { s.t.remove(k) })
		return nil
	}
	return s.stageDelete(txn, apply, k)
}

// Rename moves from to to within one tier, replacing to. A row keeps its status and meta; a
// local file renamed onto a row's name becomes that row's new body (an editor's atomic save).
// The file keeps its inode number and local attributes; the name it left has no number until
// a new file takes it, and the file it replaced is gone with its attributes. A row moved into
// the trash (TrashTier) is deleted from the vault and kept here with its status and meta,
// which it takes back when it is moved out again.
func (s *Store) Rename(from, to Key) error {
	if from.Tier != to.Tier && !trashMove(from, to) {
		return ErrCrossTier
	}
	if err := checkKey(to); err != nil {
		return err
	}
	if (from.Tier == seal.TierJournal || to.Tier == seal.TierJournal) && !(from.Local && to.Local) {
		return fmt.Errorf("%w: the journal is append-only: its events cannot be renamed", ErrNotPermitted)
	}
	return s.update(func(txn *badger.Txn, apply *[]func()) error { return s.renameTx(txn, apply, from, to) })
}

// renameTx is Rename inside its transaction.
func (s *Store) renameTx(txn *badger.Txn, apply *[]func(), from, to Key) error {
	src := s.t.get(from)
	if src == nil {
		return ErrNotFound
	}
	if from == to || from.Equal(to) {
		return nil
	}
	if !from.Local && (to.Local || seal.CanonicalID(from.Tier, from.Category, from.Key) != seal.CanonicalID(to.Tier, to.Category, to.Key)) {
		op := "renamed away"
		if to.Tier == TrashTier {
			op = "moved to the trash"
		}
		if err := s.checkDelete(txn, from, op); err != nil {
			return err
		}
	}
	content, err := s.readContent(txn, src)
	if err != nil {
		return err
	}
	dst := s.t.get(to)
	if dst != nil && dst.ino != src.ino {
		if err := s.dropAttr(txn, apply, dst.ino); err != nil {
			return err
		}
	}
	if _, _, err := s.t.moveIno(txn, inoName(from), inoName(to)); err != nil {
		return err
	}
	trashed, err := s.moveTrashRow(txn, src, from, to)
	if err != nil {
		return err
	}
	var n *node
	if to.Local {
		n, err = s.putLocalAttrs(txn, apply, to, content, src.mtime, src.row.Status, src.row.Meta)
	} else {
		n, err = s.stagePut(txn, apply, renamedRow(from, to, src, dst, trashed, content), src.mtime)
	}
	if err != nil {
		return err
	}
	if err := s.carryTimes(txn, apply, n, src, nil); err != nil {
		return err
	}
	if err := s.touchDirOf(txn, apply, to); err != nil {
		return err
	}
	if !from.Local && !to.Local && seal.CanonicalID(from.Tier, from.Category, from.Key) ==
		seal.CanonicalID(to.Tier, to.Category, to.Key) {
		// entity/x and entity/%/x are one row: moving between them is a category change
		*apply = append(*apply, func() { s.t.remove(from) })
		return nil
	}
	return s.removeTx(txn, apply, from)
}

// renamedRow is the row a rename onto the row to stages: the row moved (a row keeps its
// status and meta), the one it takes back out of the trash, or the content of a local file
// saved over dst (which keeps dst's status and meta unless the local file was given its own).
func renamedRow(from, to Key, src, dst *node, trashed *seal.Row, content []byte) seal.Row {
	row := seal.Row{Tier: to.Tier, Key: to.Key, Category: to.Category}
	switch {
	case !from.Local:
		row = src.row
		row.Key, row.Category = to.Key, to.Category
	case trashed != nil:
		row.Status, row.Meta = trashed.Status, trashed.Meta
	case src.row.Status != nil || src.row.Meta != nil:
		row.Status, row.Meta = src.row.Status, src.row.Meta // set on the file before the rename
	case dst != nil:
		row = dst.row
		row.Category = to.Category
	}
	body := string(content)
	row.Body = &body
	return row
}

// Mkdir makes an empty entity category.
func (s *Store) Mkdir(category string) error {
	return s.update(func(txn *badger.Txn, apply *[]func()) error {
		if s.t.hasCategory(category) {
			return ErrExists
		}
		if err := txn.Set([]byte(pCategory+category), nil); err != nil {
			return err
		}
		if err := s.touchDir(txn, apply, seal.TierEntity, nil); err != nil {
			return err
		}
		*apply = append(*apply, func() { s.t.madeCat[category] = true })
		return nil
	})
}

// Rmdir removes an empty entity category.
func (s *Store) Rmdir(category string) error {
	return s.update(func(txn *badger.Txn, apply *[]func()) error {
		if s.t.cats[category] > 0 {
			return ErrNotEmpty
		}
		if !s.t.madeCat[category] {
			return ErrNotFound
		}
		if err := txn.Delete([]byte(pCategory + category)); err != nil {
			return err
		}
		if err := s.touchDir(txn, apply, seal.TierEntity, nil); err != nil {
			return err
		}
		*apply = append(*apply, func() { delete(s.t.madeCat, category) })
		return nil
	})
}

// SetAttr sets a row's status or meta; nil is null. meta must be a JSON value.
func (s *Store) SetAttr(k Key, name string, value *string) error {
	if k.Tier == seal.TierJournal {
		return fmt.Errorf("%w: the journal is append-only: its events have no status or meta to change", ErrNotPermitted)
	}
	switch name {
	case "status":
	case "meta":
		if value != nil && utf8.ValidString(*value) && !json.Valid([]byte(*value)) {
			return fmt.Errorf("%w: meta must be a JSON value", ErrInvalid)
		}
	default:
		return fmt.Errorf("%w: no attribute %q", ErrInvalid, name)
	}
	if err := s.checkAttrShape(k, name, value); err != nil {
		return err
	}
	if k.Local {
		return s.setLocalAttr(k, name, value)
	}
	return s.update(func(txn *badger.Txn, apply *[]func()) error {
		n := s.t.get(k)
		if n == nil {
			return ErrNotFound
		}
		row, err := s.fullRow(txn, n)
		if err != nil {
			return err
		}
		if name == "status" {
			row.Status = value
		} else {
			row.Meta = value
		}
		nn, err := s.stagePut(txn, apply, row, n.mtime)
		if err != nil {
			return err
		}
		return s.carryTimes(txn, apply, nn, n, nil)
	})
}

// Subscribe registers fn to be told which keys a pull changed.
func (s *Store) Subscribe(fn func(changed []Key)) {
	s.subMu.Lock()
	s.subs = append(s.subs, fn)
	s.subMu.Unlock()
}

func (s *Store) notify(changed []Key) {
	if len(changed) == 0 {
		return
	}
	s.subMu.Lock()
	subs := append([]func([]Key){}, s.subs...)
	s.subMu.Unlock()
	for _, fn := range subs {
		fn(changed)
	}
}

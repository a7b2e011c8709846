package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// liveNode is the node of k in the live tree. Callers hold t.mu.
func (s *Store) liveNode(k vault.Key) (*node, error) {
	if s.applyErr != nil {
		return nil, s.applyErr
	}
	if n := s.t.get(k); n != nil {
		return n, nil
	}
	return nil, vault.ErrNotFound
}

// Get returns the live version of k.
func (s *Store) Get(k vault.Key) (*vault.Version, error) {
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	n, err := s.liveNode(k)
	if err != nil {
		return nil, err
	}
	return s.dress(n.version()), nil
}

// Content returns the live file content of k.
func (s *Store) Content(k vault.Key) ([]byte, error) {
	_, out, err := s.read(k, false)
	return out, err
}

// Read returns the live version of k and its content, read at one instant.
func (s *Store) Read(k vault.Key) (*vault.Version, []byte, error) { return s.read(k, true) }

// read is Content, and with version Read.
func (s *Store) read(k vault.Key, version bool) (*vault.Version, []byte, error) {
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	n, err := s.liveNode(k)
	if err != nil {
		return nil, nil, err
	}
	var out []byte
	err = s.db.View(func(txn *badger.Txn) error {
		var err error
		out, err = s.readContent(txn, n)
		return err
	})
	if err != nil || !version {
		return nil, out, err
	}
	return s.dress(n.version()), out, nil
}

// List lists one live directory, sorted by name.
func (s *Store) List(tier string, category *string) ([]vault.Dirent, error) {
	if !validTier(tier) {
		return nil, vault.ErrNotFound
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
	n, ok := s.t.inos.get(name)
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

// Write replaces the content of k, creating it, and stages the change durably. content is
// stored as it is, not copied first, and no part of it is kept once Write returns: the caller
// may change it afterwards.
func (s *Store) Write(k vault.Key, content []byte, mtime time.Time) (*vault.Version, error) {
	return s.write(k, content, mtime, nil)
}

// Create makes the file k, empty, with the permission bits perm kept as its local mode, in
// one step; an existing k is emptied and keeps its mode. It does not wait for the disk: the
// new file is durable with the next change or Sync (a close, fsync or rename), and a crash
// before that leaves it whole or not at all. A new row takes the status and meta of a row
// renamed away from k moments ago (see RenameKeepingAttrs), in the same step.
func (s *Store) Create(k vault.Key, perm uint32, mtime time.Time) (*vault.Version, error) {
	return s.write(k, nil, mtime, &perm)
}

func (s *Store) write(k vault.Key, content []byte, mtime time.Time, perm *uint32) (*vault.Version, error) {
	if err := checkKey(k); err != nil {
		return nil, err
	}
	if len(content) > vault.MaxFileBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, the limit is %d", vault.ErrFileTooBig, keyString(k), len(content), vault.MaxFileBytes)
	}
	if k.Tier == seal.TierJournal && !k.Local {
		v, err := s.appendJournal(content, mtime)
		if errors.Is(err, vault.ErrInvalid) && len(content) > 0 {
			return nil, s.keepInvalidJournal(k.Key, content, mtime, err)
		}
		return v, err
	}
	var v *vault.Version
	commit := s.update
	if perm != nil {
		commit = s.updateQueued // a create: durable with the close, fsync or rename after it
	}
	err := commit(func(txn *badger.Txn, apply *[]func()) error {
		old := s.t.get(k)
		var n *node
		var err error
		if k.Local {
			n, err = s.putLocal(txn, apply, k, content, mtime)
		} else {
			row := seal.Row{Tier: k.Tier, Key: k.Key, Category: k.CategoryPtr()}
			if old != nil {
				row = old.row()
				row.Category = k.CategoryPtr()
			} else if perm != nil {
				row.Status, row.Meta = s.takeMoved(apply, k)
			}
			row.Body = seal.BodyOf(content) // the caller's bytes, stored as they are: no copy
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
			if err := s.step("create"); err != nil {
				return err
			}
			if err := s.changeAttr(txn, apply, n.ino, n.modTime(), n.leaf, vault.AttrChange{Perm: perm, Create: true}); err != nil {
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
func (s *Store) appendJournal(content []byte, mtime time.Time) (*vault.Version, error) {
	row, err := parseJournal(content)
	if err != nil {
		return nil, err
	}
	var n *node
	err = s.update(func(txn *badger.Txn, apply *[]func()) error {
		var err error
		n, err = s.appendJournalTx(txn, apply, row, mtime)
		return err
	})
	if err != nil {
		return nil, err
	}
	return n.version(), nil
}

// appendJournalTx is appendJournal inside its transaction, given the event's row.
func (s *Store) appendJournalTx(txn *badger.Txn, apply *[]func(), row seal.Row, mtime time.Time) (*node, error) {
	rows := []seal.Row{row}
	seal.AssignJournalKeys(rows, func(key string) bool {
		if s.t.get(vault.Key{Tier: seal.TierJournal, Key: key}) != nil {
			return true
		}
		// a staged deletion hides the mirror row, but the key stays taken until anchored
		_, err := txn.Get([]byte(pMirror + seal.CanonicalID(seal.TierJournal, nil, key)))
		return err == nil
	})
	n, err := s.stagePut(txn, apply, rows[0], mtime)
	if err != nil {
		return nil, err
	}
	return n, s.touchDir(txn, apply, seal.TierJournal, nil)
}

// Remove stages the deletion of a row, or deletes a local file. Its local attributes go with
// it: a file made again under its name starts with the default mode and its own times.
func (s *Store) Remove(k vault.Key) error {
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

func (s *Store) removeTx(txn *badger.Txn, apply *[]func(), k vault.Key) error {
	if s.t.get(k) == nil {
		return vault.ErrNotFound
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
// the trash (vault.TrashTier) is deleted from the vault and kept here with its status and meta,
// which it takes back when it is moved out again. A local file of the journal renamed to an
// event's name is appended as an event, in the one transaction that removes it.
func (s *Store) Rename(from, to vault.Key) error {
	return s.rename(from, to, false)
}

func (s *Store) rename(from, to vault.Key, keep bool) error {
	if from.Tier != to.Tier && !trashMove(from, to) {
		return vault.ErrCrossTier
	}
	if err := checkKey(to); err != nil {
		return err
	}
	if from.Tier == seal.TierJournal && from.Local && to.Tier == seal.TierJournal && !to.Local {
		return s.appendByRename(from)
	}
	if (from.Tier == seal.TierJournal || to.Tier == seal.TierJournal) && !(from.Local && to.Local) {
		return fmt.Errorf("%w: the journal is append-only: its events cannot be renamed", vault.ErrNotPermitted)
	}
	return s.update(func(txn *badger.Txn, apply *[]func()) error { return s.renameTx(txn, apply, from, to, keep) })
}

// renameTx is Rename inside its transaction; keep is RenameKeepingAttrs's policy.
func (s *Store) renameTx(txn *badger.Txn, apply *[]func(), from, to vault.Key, keep bool) error {
	src := s.t.get(from)
	if src == nil {
		return vault.ErrNotFound
	}
	if from == to {
		return nil
	}
	if !from.Local && (to.Local || rowID(from) != rowID(to)) {
		op := "renamed away"
		if to.Tier == vault.TrashTier {
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
		n, err = s.putLocalAttrs(txn, apply, to, content, src.modTime(), src.status, src.meta)
	} else {
		row := renamedRow(from, to, src, dst, trashed, content)
		if keep {
			s.keepReplacedAttrs(&row, from, to, src, dst)
		}
		n, err = s.stagePut(txn, apply, row, src.modTime())
	}
	if err == nil {
		err = s.step("rename")
	}
	if keep && dst == nil {
		s.rememberMove(apply, from, src)
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
	if !from.Local && !to.Local && rowID(from) ==
		rowID(to) {
		// entity/x and entity/%/x are one row: moving between them is a category change
		*apply = append(*apply, func() { s.t.remove(from) })
		return nil
	}
	return s.removeTx(txn, apply, from)
}

// renamedRow is the row a rename onto the row to stages: the row moved (a row keeps its
// status and meta), the one it takes back out of the trash, or the content of a local file
// saved over dst (which keeps dst's status and meta unless the local file was given its own).
func renamedRow(from, to vault.Key, src, dst *node, trashed *seal.Row, content []byte) seal.Row {
	row := seal.Row{Tier: to.Tier, Key: to.Key, Category: to.CategoryPtr()}
	switch {
	case !from.Local:
		row = src.row()
		row.Key, row.Category = to.Key, to.CategoryPtr()
	case trashed != nil:
		row.Status, row.Meta = trashed.Status, trashed.Meta
	case src.status != nil || src.meta != nil:
		row.Status, row.Meta = src.status, src.meta // set on the file before the rename
	case dst != nil:
		row = dst.row()
		row.Category = to.CategoryPtr()
	}
	row.Body = seal.BodyOf(content)
	return row
}

// Mkdir makes an empty entity category.
func (s *Store) Mkdir(category string) error {
	return s.update(func(txn *badger.Txn, apply *[]func()) error {
		if s.t.hasCategory(category) {
			return vault.ErrExists
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
			return vault.ErrNotEmpty
		}
		if !s.t.madeCat[category] {
			return vault.ErrNotFound
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
func (s *Store) SetAttr(k vault.Key, name string, value *string) error {
	if k.Tier == seal.TierJournal {
		return fmt.Errorf("%w: the journal is append-only: its events have no status or meta to change", vault.ErrNotPermitted)
	}
	switch name {
	case "status":
	case "meta":
		if value != nil && utf8.ValidString(*value) && !json.Valid([]byte(*value)) {
			return fmt.Errorf("%w: meta must be a JSON value", vault.ErrInvalid)
		}
	default:
		return fmt.Errorf("%w: no attribute %q", vault.ErrInvalid, name)
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
			return vault.ErrNotFound
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
		nn, err := s.stagePut(txn, apply, row, n.modTime())
		if err != nil {
			return err
		}
		return s.carryTimes(txn, apply, nn, n, nil)
	})
}

// Subscribe registers fn to be told which keys a pull changed.
func (s *Store) Subscribe(fn func(changed []vault.Key)) {
	s.subMu.Lock()
	s.subs = append(s.subs, fn)
	s.subMu.Unlock()
}

func (s *Store) notify(changed []vault.Key) {
	if len(changed) == 0 {
		return
	}
	s.subMu.Lock()
	subs := append([]func([]vault.Key){}, s.subs...)
	s.subMu.Unlock()
	for _, fn := range subs {
		fn(changed)
	}
}

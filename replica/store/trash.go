package store

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// The trash is the freedesktop trash of the mount (MNT/.Trash-$UID/files and info): local to
// this machine, never anchored, outside the tiers. Its files are local files of vault.TrashTier, in
// the directory named by their Category, a path such as ".Trash-1000/files". Moving a row
// there (Rename) stages its deletion and keeps its content here, with its status and meta;
// moving it out brings the row back. Removing it frees the local copy; the row's history is
// untouched.

const (
	pTrashDir = "r/" // path -> "": a directory of the trash, ".Trash-1000" or ".Trash-1000/files"
	pTrashRow = "q/" // local id of a trash file -> stagedRec without body: the row it was
)

func checkTrashKey(k vault.Key) error {
	if !k.Local || !k.HasCategory || !strings.Contains(k.Category, "/") {
		return fmt.Errorf("%w: a trash file lives in a directory of a trash", vault.ErrInvalid)
	}
	if strings.ContainsRune(k.Key, 0) || strings.ContainsRune(k.Key, '/') {
		return fmt.Errorf("%w: NUL or '/' in a trash file name", vault.ErrInvalid)
	}
	return nil
}

// trashMove reports whether a move between two tiers goes into or out of the trash.
func trashMove(from, to vault.Key) bool {
	return (from.Tier == vault.TrashTier) != (to.Tier == vault.TrashTier)
}

func (s *Store) loadTrashDirs(txn *badger.Txn) error {
	return scanPrefix(txn, pTrashDir, func(k, v []byte) error {
		s.trashDirs[string(k[len(pTrashDir):])] = true
		return nil
	})
}

// moveTrashRow keeps what a rename into the trash must remember of a row, and hands back
// (and forgets) what a rename out of it restores: the row, without its body, or nil.
func (s *Store) moveTrashRow(txn *badger.Txn, src *node, from, to vault.Key) (*seal.Row, error) {
	var was *seal.Row
	if from.Tier == vault.TrashTier {
		var rec stagedRec
		found, err := getRecord(txn, pTrashRow+localID(from), &rec)
		if err != nil {
			return nil, err
		}
		if found {
			was = &rec.Row
			if err := txn.Delete([]byte(pTrashRow + localID(from))); err != nil {
				return nil, err
			}
		}
	} else if !from.Local {
		row := src.row()
		was = &row
	}
	if to.Tier != vault.TrashTier {
		return was, nil
	}
	if was == nil {
		return nil, txn.Delete([]byte(pTrashRow + localID(to)))
	}
	return nil, putRecord(txn, pTrashRow+localID(to), &stagedRec{Row: *was})
}

// dropTrashRow forgets the row a trash file k was, when it is removed.
func (s *Store) dropTrashRow(txn *badger.Txn, k vault.Key) error {
	if k.Tier != vault.TrashTier {
		return nil
	}
	return txn.Delete([]byte(pTrashRow + localID(k)))
}

// trashParent is the directory holding a trash directory: "" for a top one.
func trashParent(path string) string {
	if i := strings.IndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return ""
}

// HasTrashDir reports whether the trash directory path exists.
func (s *Store) HasTrashDir(path string) bool {
	s.t.mu.RLock()
	defer s.t.mu.RUnlock()
	return s.trashDirs[path]
}

// TrashMkdir makes a trash directory: a top one (".Trash-1000") or one inside a top one.
func (s *Store) TrashMkdir(path string) error {
	if path == "" || strings.Count(path, "/") > 1 || strings.ContainsRune(path, 0) {
		return fmt.Errorf("%w: trash directories are two levels deep", vault.ErrInvalid)
	}
	return s.update(func(txn *badger.Txn, apply *[]func()) error {
		if s.trashDirs[path] {
			return vault.ErrExists
		}
		if p := trashParent(path); p != "" && !s.trashDirs[p] {
			return vault.ErrNotFound
		}
		if err := txn.Set([]byte(pTrashDir+path), nil); err != nil {
			return err
		}
		*apply = append(*apply, func() { s.trashDirs[path] = true })
		return nil
	})
}

// TrashRmdir removes an empty trash directory.
func (s *Store) TrashRmdir(path string) error {
	return s.update(func(txn *badger.Txn, apply *[]func()) error {
		if !s.trashDirs[path] {
			return vault.ErrNotFound
		}
		if s.t.dirs[dirKey{tier: vault.TrashTier, cat: path, hasCat: true}].len() > 0 {
			return vault.ErrNotEmpty
		}
		for d := range s.trashDirs {
			if trashParent(d) == path {
				return vault.ErrNotEmpty
			}
		}
		if err := txn.Delete([]byte(pTrashDir + path)); err != nil {
			return err
		}
		ino, ok := s.t.inos.get(dirInoName(vault.TrashTier, &path))
		if ok {
			if err := s.dropAttr(txn, apply, ino); err != nil {
				return err
			}
		}
		*apply = append(*apply, func() { delete(s.trashDirs, path) })
		return nil
	})
}

// TrashList lists a trash directory: the directories of a top one, the files of one inside.
func (s *Store) TrashList(path string) ([]vault.Dirent, error) {
	s.t.mu.RLock()
	if !s.trashDirs[path] {
		s.t.mu.RUnlock()
		return nil, vault.ErrNotFound
	}
	p := path
	out := s.t.list(vault.TrashTier, &p)
	var dirs []string
	for d := range s.trashDirs {
		if trashParent(d) == path {
			dirs = append(dirs, d)
		}
	}
	s.t.mu.RUnlock()
	sort.Strings(dirs)
	for _, d := range dirs {
		dd := d
		out = append(out, vault.Dirent{Name: d[len(path)+1:], Dir: true, Ino: s.DirIno(vault.TrashTier, &dd)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

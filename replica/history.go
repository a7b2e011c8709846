package replica

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"kintfs/seal"
)

// History is the read-only tree as anchored at or before one block. Every version in it came
// from a verified epoch; a block is an upper bound, never a wall-clock time.
type History struct {
	s     *Store
	block uint64
}

// historyInos hands out inode numbers for history views. They live in a range of their own so
// that a history file is never merged with the live file of the same row.
type historyInos struct {
	mu   sync.Mutex
	m    map[string]uint64
	next uint64
}

var histInoBase uint64 = 1 << 56

func (h *historyInos) get(name string) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]uint64{}
		h.next = histInoBase
	}
	if n, ok := h.m[name]; ok {
		return n
	}
	h.next++
	h.m[name] = h.next
	return h.next
}

// At returns the tree as anchored at or before block.
func (s *Store) At(block uint64) *History { return &History{s: s, block: block} }

func (h *History) ino(name string) uint64 {
	return h.s.histInos.get(fmt.Sprintf("%d\x00%s", h.block, name))
}

// latest finds the newest version of id at or before the block; nil when none or deleted.
func (h *History) latest(txn *badger.Txn, id string) (*histRec, error) {
	prefix := append([]byte(pHistory+id), 0)
	opts := badger.DefaultIteratorOptions
	opts.Reverse = true
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	defer it.Close()
	seek := append(append(append([]byte{}, prefix...), be64(h.block)...), bytes.Repeat([]byte{0xff}, 8)...)
	it.Seek(seek)
	if !it.ValidForPrefix(prefix) {
		return nil, nil
	}
	var rec histRec
	if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &rec) }); err != nil {
		return nil, err
	}
	if rec.Row == nil {
		return nil, nil
	}
	return &rec, nil
}

func (h *History) version(rec *histRec) *Version {
	row := *rec.Row
	k := rowKey(&row)
	a := rec.Anchor
	v := &Version{Key: k, Ino: h.ino(inoName(k)), Size: contentSize(&row), Mtime: fromNanos(rec.Mtime),
		Anchor: &a, Leaf: seal.Leaf(&row)}
	row.Body = nil
	v.Row = row
	return v
}

func (h *History) find(k Key) (*histRec, error) {
	if k.Local || checkKey(k) != nil {
		return nil, ErrNotFound
	}
	var rec *histRec
	err := h.s.db.View(func(txn *badger.Txn) error {
		var err error
		rec, err = h.latest(txn, seal.CanonicalID(k.Tier, k.Category, k.Key))
		return err
	})
	if err != nil {
		return nil, err
	}
	if rec == nil || !sameKey(rowKey(rec.Row), k) {
		return nil, ErrNotFound
	}
	return rec, nil
}

// Get returns the version of k at the block.
func (h *History) Get(k Key) (*Version, error) {
	rec, err := h.find(k)
	if err != nil {
		return nil, err
	}
	return h.version(rec), nil
}

// Content returns the content of k at the block.
func (h *History) Content(k Key) ([]byte, error) {
	rec, err := h.find(k)
	if err != nil {
		return nil, err
	}
	return RenderContent(rec.Row), nil
}

// newestAt walks the rows whose ids start with idPrefix, newest id first, visiting for each
// the newest version at or before the block (deleted rows included, with a nil Row). Only
// that version is decoded: a row with a long history costs one reverse seek, not a read of
// every version. fn returns where to go on from: "" for the next id, or a key prefix below
// which to continue (to skip the rest of a category), and stop to end the walk.
func (h *History) newestAt(txn *badger.Txn, idPrefix string, fn func(rec *histRec) (skipTo string, stop bool)) error {
	prefix := []byte(pHistory + idPrefix)
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Reverse = true
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	defer it.Close()
	// In reverse, Seek finds the greatest key <= the one given.
	it.Seek(append(append([]byte{}, prefix...), bytes.Repeat([]byte{0xff}, 8)...))
	for it.ValidForPrefix(prefix) {
		key := it.Item().Key()
		if len(key) < len(pHistory)+17 {
			it.Next()
			continue
		}
		id := string(key[len(pHistory) : len(key)-17])
		idKey := pHistory + id + "\x00"
		if beUint64(key[len(key)-16:]) > h.block {
			it.Seek(historyKey(id, h.block, ^uint64(0)))
			if !it.ValidForPrefix([]byte(idKey)) || len(it.Item().Key()) != len(idKey)+16 {
				continue // no version of id at or before the block: go on from where it landed
			}
		}
		var rec histRec
		if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &rec) }); err != nil {
			return err
		}
		skipTo, stop := fn(&rec)
		if stop {
			return nil
		}
		if skipTo == "" {
			skipTo = id + "\x00"
		}
		// Every key of the ids skipped is greater than pHistory+skipTo.
		it.Seek([]byte(pHistory + skipTo))
	}
	return nil
}

// scan visits the newest live version at or before the block of every row whose id starts
// with idPrefix.
func (h *History) scan(idPrefix string, fn func(rec *histRec)) error {
	return h.s.db.View(func(txn *badger.Txn) error {
		return h.newestAt(txn, idPrefix, func(rec *histRec) (string, bool) {
			if rec.Row != nil {
				fn(rec)
			}
			return "", false
		})
	})
}

// categories visits the entity categories that had rows at the block among the ids starting
// with idPrefix, looking at one live row of each and skipping the rest; fn returns false to
// stop.
func (h *History) categories(idPrefix string, fn func(category string) bool) error {
	return h.s.db.View(func(txn *badger.Txn) error {
		return h.newestAt(txn, idPrefix, func(rec *histRec) (string, bool) {
			if rec.Row == nil || rec.Row.Category == nil {
				return "", false
			}
			c := *rec.Row.Category
			if !fn(c) {
				return "", true
			}
			// Ids of a category all start with this; a null-category row shares it only
			// when c is "", and those are not categories.
			return seal.TierEntity + "\x00" + c + "\x00", false
		})
	})
}

// List lists one directory at the block.
func (h *History) List(tier string, category *string) ([]Dirent, error) {
	if !validTier(tier) {
		return nil, ErrNotFound
	}
	prefix := tier + "\x00"
	if category != nil {
		prefix += *category + "\x00"
	}
	var out []Dirent
	cats := map[string]bool{}
	err := h.scan(prefix, func(rec *histRec) {
		k := rowKey(rec.Row)
		switch {
		case eqStrp(k.Category, category):
			out = append(out, Dirent{Name: k.Key, Ino: h.ino(inoName(k))})
		case category == nil && k.Category != nil:
			cats[*k.Category] = true
		}
	})
	if err != nil {
		return nil, err
	}
	for c := range cats {
		cc := c
		out = append(out, Dirent{Name: c, Dir: true, Ino: h.DirIno(tier, &cc)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return !out[i].Dir && out[j].Dir
	})
	return out, nil
}

// HasCategory reports whether an entity category had rows at the block.
func (h *History) HasCategory(category string) bool {
	found := false
	_ = h.categories(seal.TierEntity+"\x00"+category+"\x00", func(c string) bool {
		found = c == category
		return !found
	})
	return found
}

// CategoryCount is the number of entity categories that had rows at the block.
func (h *History) CategoryCount() (int, error) {
	n := 0
	err := h.categories(seal.TierEntity+"\x00", func(string) bool { n++; return true })
	return n, err
}

// DirIno is the inode number of a directory of this view.
func (h *History) DirIno(tier string, category *string) uint64 {
	return h.ino(dirInoName(tier, category))
}

func beUint64(b []byte) uint64 {
	var n uint64
	for _, c := range b[:8] {
		n = n<<8 | uint64(c)
	}
	return n
}

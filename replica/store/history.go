package store

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// History is the read-only tree as anchored at or before one block. Every version in it came
// from a verified epoch; a block is an upper bound, never a wall-clock time.
type History struct {
	s     *Store
	block uint64
}

// lastFound is the version a History's Get found last, kept for the Read or Content of the
// same row at the same block that follows it (a file looked up, then read for the first
// time): they take it instead of seeking it again. One for the whole store, and only a small
// one, so that lookups without reads (ls -l, stat) across many blocks keep nothing more. A
// view is served as unchanging (the kernel keeps what it shows), so what the lookup found is
// what the read must show.
type lastFound struct {
	mu    sync.Mutex
	block uint64
	rec   *histRec
}

// foundMax is the largest row content a History keeps between a Get and the read after it.
const foundMax = 64 << 10

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
	var rec histRec
	found, err := newestVersionItem(txn, id, h.block, func(_, _ uint64, item *badger.Item) error {
		return itemValue(item, func(b []byte) error { return decodeRecord(b, &rec) })
	})
	if err != nil || !found || rec.Row == nil {
		return nil, err
	}
	return &rec, nil
}

// newestVersionItem calls fn with the newest version of id in its history at or before block:
// the block and epoch its key names, and its item (valid only inside fn). found is false when
// id has none there.
func newestVersionItem(txn *badger.Txn, id string, block uint64, fn func(block, seq uint64, item *badger.Item) error) (found bool, err error) {
	prefix := append([]byte(pHistory+id), 0)
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false // one value is read, not the next hundred
	opts.Reverse, opts.Prefix = true, prefix
	it := txn.NewIterator(opts)
	defer it.Close()
	// in reverse, Seek finds the greatest key not past the one given
	for it.Seek(historyKey(id, block, ^uint64(0))); it.ValidForPrefix(prefix); it.Next() {
		key := it.Item().Key()
		if len(key) != len(prefix)+16 {
			continue // a longer id that starts with this one and a zero byte
		}
		return true, fn(beUint64(key[len(prefix):]), beUint64(key[len(prefix)+8:]), it.Item())
	}
	return false, nil
}

func (h *History) version(rec *histRec) *vault.Version {
	row := *rec.Row
	k := rowKey(&row)
	a := rec.Anchor
	v := &vault.Version{Key: k, Ino: h.ino(inoName(k)), Size: contentSize(&row), Mtime: fromNanos(rec.Mtime),
		Anchor: &a, Leaf: seal.Leaf(&row)}
	row.Body = seal.Body{}
	v.Row = row
	return v
}

func (h *History) find(k vault.Key) (*histRec, error) {
	if k.Local || checkKey(k) != nil {
		return nil, vault.ErrNotFound
	}
	var rec *histRec
	err := h.s.db.View(func(txn *badger.Txn) error {
		var err error
		rec, err = h.latest(txn, rowID(k))
		return err
	})
	if err != nil {
		return nil, err
	}
	if rec == nil || rowKey(rec.Row) != k {
		return nil, vault.ErrNotFound
	}
	return rec, nil
}

// Get returns the version of k at the block.
func (h *History) Get(k vault.Key) (*vault.Version, error) {
	rec, err := h.find(k)
	if err != nil {
		return nil, err
	}
	v := h.version(rec)
	if v.Size <= foundMax {
		f := &h.s.histFound
		f.mu.Lock()
		f.block, f.rec = h.block, rec
		f.mu.Unlock()
	}
	return v, nil
}

// takeFound is the version of k that Get kept, if it is k's, found again otherwise.
func (h *History) takeFound(k vault.Key) (*histRec, error) {
	f := &h.s.histFound
	f.mu.Lock()
	rec := f.rec
	if rec != nil && f.block == h.block && rowKey(rec.Row) == k {
		f.rec = nil
		f.mu.Unlock()
		return rec, nil
	}
	f.mu.Unlock()
	return h.find(k)
}

// Content returns the content of k at the block.
func (h *History) Content(k vault.Key) ([]byte, error) {
	rec, err := h.takeFound(k)
	if err != nil {
		return nil, err
	}
	return RenderContent(rec.Row), nil
}

// Read returns the version of k at the block and its content, found once.
func (h *History) Read(k vault.Key) (*vault.Version, []byte, error) {
	rec, err := h.takeFound(k)
	if err != nil {
		return nil, nil, err
	}
	return h.version(rec), RenderContent(rec.Row), nil
}

// histEntry is the newest version of one row at a view's block, read only when asked.
type histEntry struct {
	id   string
	item *badger.Item
}

// jsonDeletedPrefix starts every deletion's history record stored as JSON (before layout 4):
// histRec encodes its Row first, and a deletion's Row is null. With histDeletedPrefix it lets
// a walk skip deletions without decoding anything.
var jsonDeletedPrefix = []byte(`{"row":null`)

// A history version's badger user meta says whether it is a deletion, so that a walk that
// only asks whether a row was live at a block (HasCategory, CategoryCount: every first look at
// an @<block>) reads no value: a version's record lives in the value log, and reading it
// faults its pages in again after the page releaser let them go. Versions written before it
// carry 0, and their record is read.
const (
	histMetaLive    byte = 1
	histMetaDeleted byte = 2
)

// historyEntry is rec as version (block, seq) of id's history, with its user meta.
func historyEntry(id string, block, seq uint64, rec *histRec) *badger.Entry {
	meta := histMetaLive
	if rec.Row == nil {
		meta = histMetaDeleted
	}
	return badger.NewEntry(historyKey(id, block, seq), encodeRecord(rec)).WithMeta(meta)
}

// putHistory stores rec as version (block, seq) of id's history.
func putHistory(txn *badger.Txn, id string, block, seq uint64, rec *histRec) error {
	e := historyEntry(id, block, seq, rec)
	return storeError("record", len(e.Value), txn.SetEntry(e))
}

func (e histEntry) deleted() (bool, error) {
	switch e.item.UserMeta() {
	case histMetaLive:
		return false, nil
	case histMetaDeleted:
		return true, nil
	}
	var del bool
	err := itemValue(e.item, func(b []byte) error {
		del = bytes.HasPrefix(b, histDeletedPrefix) || bytes.HasPrefix(b, jsonDeletedPrefix)
		return nil
	})
	return del, err
}

func (e histEntry) decode() (*histRec, error) {
	var rec histRec
	err := itemValue(e.item, func(b []byte) error { return decodeRecord(b, &rec) })
	return &rec, err
}

// newestAt walks the rows whose ids start with idPrefix, greatest id first, visiting for each
// the newest version at or before the block (deletions included). A row with a long history
// costs one reverse seek, not a read of every version. fn returns where to go on from: "" for
// the next id, or a prefix of ids to skip whole (the rest of a category); stop ends the walk.
func (h *History) newestAt(txn *badger.Txn, idPrefix string, fn func(e histEntry) (skipTo string, stop bool, err error)) error {
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
		skipTo, stop, err := fn(histEntry{id: id, item: it.Item()})
		if err != nil || stop {
			return err
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
		return h.newestAt(txn, idPrefix, func(e histEntry) (string, bool, error) {
			rec, err := e.decode()
			if err == nil && rec.Row != nil {
				fn(rec)
			}
			return "", false, err
		})
	})
}

// categories visits the entity categories that had rows at the block among the ids starting
// with idPrefix, looking at one live row of each and skipping the rest; fn returns false to
// stop. The category is read from the id; only the ids that cannot tell the "" category from
// a null one are decoded.
func (h *History) categories(txn *badger.Txn, idPrefix string, fn func(category string) bool) error {
	return h.newestAt(txn, idPrefix, func(e histEntry) (string, bool, error) {
		c, ok := entityCategory(e.id)
		if !ok {
			return "", false, nil
		}
		if del, err := e.deleted(); err != nil || del {
			return "", false, err
		}
		if c == "" {
			rec, err := e.decode()
			if err != nil || rec.Row == nil || rec.Row.Category == nil {
				return "", false, err
			}
		}
		if !fn(c) {
			return "", true, nil
		}
		// Every id of the category starts with this (the null-category ones too when c
		// is "", and those are not categories).
		return seal.TierEntity + "\x00" + c + "\x00", false, nil
	})
}

// List lists one directory at the block.
func (h *History) List(tier string, category *string) ([]vault.Dirent, error) {
	if !validTier(tier) {
		return nil, vault.ErrNotFound
	}
	prefix := tier + "\x00"
	if category != nil {
		prefix += *category + "\x00"
	}
	var out []vault.Dirent
	cats := map[string]bool{}
	err := h.scan(prefix, func(rec *histRec) {
		k := rowKey(rec.Row)
		switch {
		case eqStrp(k.CategoryPtr(), category):
			out = append(out, vault.Dirent{Name: k.Key, Ino: h.ino(inoName(k))})
		case category == nil && k.HasCategory:
			cats[k.Category] = true
		}
	})
	if err != nil {
		return nil, err
	}
	for c := range cats {
		cc := c
		out = append(out, vault.Dirent{Name: c, Dir: true, Ino: h.DirIno(tier, &cc)})
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
	_ = h.s.db.View(func(txn *badger.Txn) error {
		var err error
		found, err = h.hasCategory(txn, category)
		return err
	})
	return found
}

// pCategoryCount keys the number of entity categories after each applied epoch:
// block(8) seq(8) -> decimal count. entity/'s link count at any block is then one seek.
const pCategoryCount = "n/"

// CategoryCount is the number of entity categories that had rows at the block.
func (h *History) CategoryCount() (int, error) {
	n := 0
	err := h.s.db.View(func(txn *badger.Txn) error {
		var found bool
		var err error
		if n, found, err = h.recordedCategoryCount(txn); err != nil || found {
			return err
		}
		// Epochs applied before the count was recorded: count them.
		n, err = h.countCategories(txn)
		return err
	})
	return n, err
}

// recordedCategoryCount reads the count recorded by the newest epoch at or before the block.
// Every epoch since the first one recorded has one, so the newest record found is the one of
// the newest epoch at or before the block.
func (h *History) recordedCategoryCount(txn *badger.Txn) (int, bool, error) {
	_, _, n, found, err := categoryCountAtOrBefore(txn, h.block, ^uint64(0))
	return n, found, err
}

// categoryCountAtOrBefore reads the newest count recorded at or before (block, seq), with the
// block and seq it was recorded at.
func categoryCountAtOrBefore(txn *badger.Txn, block, seq uint64) (atBlock, atSeq uint64, n int, found bool, err error) {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Reverse = true
	opts.Prefix = []byte(pCategoryCount)
	it := txn.NewIterator(opts)
	defer it.Close()
	// In reverse, Seek finds the greatest key <= the one given.
	it.Seek(append(append([]byte(pCategoryCount), be64(block)...), be64(seq)...))
	if !it.ValidForPrefix(opts.Prefix) {
		return 0, 0, 0, false, nil
	}
	key := it.Item().Key()
	if len(key) != len(pCategoryCount)+16 {
		return 0, 0, 0, false, nil
	}
	err = itemValue(it.Item(), func(b []byte) error {
		var err error
		n, err = strconv.Atoi(string(b))
		return err
	})
	return beUint64(key[len(pCategoryCount):]), beUint64(key[len(pCategoryCount)+8:]), n, err == nil, err
}

func (h *History) countCategories(txn *badger.Txn) (int, error) {
	n := 0
	err := h.categories(txn, seal.TierEntity+"\x00", func(string) bool { n++; return true })
	return n, err
}

// recordCategoryCount records, in the transaction that applies an epoch (after its history
// entries are written), the number of entity categories at its block. changes are the rows
// the epoch changed, nil when they are not known (the count is then made whole); had, when not
// nil, the categories the mirror held a row of before the epoch (see countFromPrevious).
func (s *Store) recordCategoryCount(txn *badger.Txn, block, seq uint64, changes []leafChange, had map[string]bool) error {
	n, ok, err := s.countFromPrevious(txn, block, seq, changes, had)
	if err == nil && !ok {
		n, err = s.At(block).countCategories(txn)
	}
	if err != nil {
		return err
	}
	key := append(append([]byte(pCategoryCount), be64(block)...), be64(seq)...)
	return txn.Set(key, []byte(strconv.Itoa(n)))
}

// countFromPrevious counts the entity categories at the block from the count recorded by the
// epoch just before (seq-1): only a category one of the changes is in can have gained its first
// row or lost its last, so only those are looked at, before and after. That keeps an epoch's
// apply from walking every category of the vault, and most need no walk at all: a category
// the epoch puts a row in has one after it, and one in had had one before it. ok is false
// when there is no such record, or when it shares the block (a view at that block would
// already show this epoch's rows).
func (s *Store) countFromPrevious(txn *badger.Txn, block, seq uint64, changes []leafChange, had map[string]bool) (n int, ok bool, err error) {
	if changes == nil || seq <= 1 {
		return 0, false, nil
	}
	prevBlock, prev, found, err := previousCategoryCount(txn, block, seq)
	if err != nil || !found || prevBlock >= block {
		return 0, false, err
	}
	put := map[string]bool{} // the categories changed, and whether the epoch puts a row in each
	var order []string
	for _, ch := range changes {
		c, isEntity := entityCategory(ch.id)
		if !isEntity {
			continue
		}
		if _, seen := put[c]; !seen {
			order = append(order, c)
		}
		put[c] = put[c] || !ch.del
	}
	for _, c := range order {
		// an entity without a category has "" there in its id too, and is in no category:
		// whether category "" has a row is only ever looked up
		before := had[c] && c != ""
		if !before {
			if before, err = s.At(prevBlock).hasCategory(txn, c); err != nil {
				return 0, false, err
			}
		}
		after := put[c] && c != ""
		if !after {
			if after, err = s.At(block).hasCategory(txn, c); err != nil {
				return 0, false, err
			}
		}
		switch {
		case after && !before:
			prev++
		case before && !after:
			prev--
		}
	}
	return prev, true, nil
}

// entityCategory is the category of the row id, when it is an entity's.
func entityCategory(id string) (category string, isEntity bool) {
	rest, ok := strings.CutPrefix(id, seal.TierEntity+"\x00")
	if !ok {
		return "", false
	}
	c, _, ok := strings.Cut(rest, "\x00")
	return c, ok
}

// previousCategoryCount reads the count recorded by epoch seq-1, when it is the newest record
// before (block, seq), and the block it was recorded at.
func previousCategoryCount(txn *badger.Txn, block, seq uint64) (prevBlock uint64, n int, found bool, err error) {
	prevBlock, prevSeq, n, found, err := categoryCountAtOrBefore(txn, block, seq-1)
	if err != nil || !found || prevSeq != seq-1 {
		return 0, 0, false, err
	}
	return prevBlock, n, true, nil
}

// hasCategory reports whether the entity category had a row at the block.
func (h *History) hasCategory(txn *badger.Txn, category string) (bool, error) {
	found := false
	err := h.categories(txn, seal.TierEntity+"\x00"+category+"\x00", func(c string) bool {
		found = c == category
		return !found
	})
	return found, err
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

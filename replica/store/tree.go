package store

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// dirKey names one directory of the live tree: a tier, or an entity category (hasCat) which
// may be the empty string.
type dirKey struct {
	tier   string
	cat    string
	hasCat bool
}

func dirOf(k vault.Key) dirKey {
	return dirKey{tier: k.Tier, cat: k.Category, hasCat: k.HasCategory}
}

// dirFiles are the files of one directory by name: its rows, and apart from them its local
// files (a name may be both). Keyed by the name alone, a map slot is 24 bytes, not the 32 a
// name and a flag took: a map of every directory's files is a large part of a mount's memory.
type dirFiles struct {
	rows  map[string]*node
	local map[string]*node // nil until the directory holds a local file
}

// of is the map of files local or not, nil when there is none yet.
func (d *dirFiles) of(local bool) map[string]*node {
	if d == nil {
		return nil
	}
	if local {
		return d.local
	}
	return d.rows
}

func (d *dirFiles) len() int {
	if d == nil {
		return 0
	}
	return len(d.rows) + len(d.local)
}

// node is one file of the live tree, kept in memory without its body: the row's other fields,
// the tier and key being those of key. It is one of the largest parts of a mount's memory (one
// node a file), so it holds no seal.Row and only pointers to what most rows leave null.
type node struct {
	key    vault.Key
	cat    *string // the row's category (one of another tier may carry one too)
	status *string // the row's status, or a local file's
	meta   *string // the row's meta, or a local file's
	extra  *nodeExtra
	size   int64
	mtime  int64 // nanoseconds since 1970 (modTime): a time.Time would take 24 bytes, not 8
	ino    uint64
	anchor *vault.Anchor
	leaf   common.Hash
	staged bool
}

// nodeExtra holds what few rows have, allocated only for those: the fields of a journal
// event, and why a staged row is held.
type nodeExtra struct {
	journal *journalVals
	held    string
}

// journalVals are a row's ts, evaluated, acted, forward and extra.
type journalVals [5]*string

func (n *node) journal() *journalVals {
	if n.extra == nil {
		return nil
	}
	return n.extra.journal
}

func (n *node) held() string {
	if n.extra == nil {
		return ""
	}
	return n.extra.held
}

// setExtra sets the journal fields and the reason held, keeping an extra only when one is set.
func (n *node) setExtra(j *journalVals, held string) {
	if j == nil && held == "" {
		n.extra = nil
		return
	}
	n.extra = &nodeExtra{journal: j, held: held}
}

func (n *node) modTime() time.Time { return fromNanos(n.mtime) }

// setRow keeps the fields of r but its tier, key and body; n.key is set.
func (n *node) setRow(r *seal.Row) {
	n.cat, n.status, n.meta = r.Category, r.Status, r.Meta
	if n.key.HasCategory && r.Category != nil && n.key.Category == *r.Category {
		n.cat = &n.key.Category // one string for both, not two
	}
	var j *journalVals
	if r.TS != nil || r.Evaluated != nil || r.Acted != nil || r.Forward != nil || r.Extra != nil {
		j = &journalVals{r.TS, r.Evaluated, r.Acted, r.Forward, r.Extra} // allocated only for such a row
	}
	n.setExtra(j, n.held())
}

// shareKeyCategory makes n's category its key's, for a file whose row fields come from its key.
func (n *node) shareKeyCategory() {
	n.cat = nil
	if n.key.HasCategory {
		n.cat = &n.key.Category
	}
}

// row is n's row without its body (null).
func (n *node) row() seal.Row {
	r := seal.Row{Tier: n.key.Tier, Key: n.key.Key, Category: n.cat, Status: n.status, Meta: n.meta}
	if j := n.journal(); j != nil {
		r.TS, r.Evaluated, r.Acted, r.Forward, r.Extra = j[0], j[1], j[2], j[3], j[4]
	}
	return r
}

// id is the canonical id of n's row.
func (n *node) id() string { return seal.CanonicalID(n.key.Tier, n.cat, n.key.Key) }

func (n *node) version() *vault.Version {
	v := &vault.Version{Key: n.key, Row: n.row(), Ino: n.ino, Size: n.size, Mtime: n.modTime(),
		Staged: n.staged, Held: n.held(), Leaf: n.leaf}
	if n.anchor != nil {
		a := *n.anchor
		v.Anchor = &a
	}
	return v
}

// tree is the in-memory index of the live view: the mirror overlaid with staged changes and
// local files. Bodies are read from badger on demand.
type tree struct {
	mu      sync.RWMutex
	dirs    map[dirKey]*dirFiles
	cats    map[string]int  // entity category -> rows (and local files) in it
	madeCat map[string]bool // categories made by mkdir
	inos    inoTable
	inoNext uint64
	// anchorable is the content bytes of the staged rows that are not held: what the size
	// trigger counts. A held row waits for a new version and must not set it off.
	anchorable int64
	// locals counts the local-only files outside the trash, for status
	locals int
	// inoUndo holds what the names moveIno changed in the running transaction stood for, to
	// put back when it fails.
	inoUndo map[string]inoWas
}

type inoWas struct {
	n   uint64
	had bool
}

// weight is what n adds to anchorable.
func (n *node) weight() int64 {
	if n.staged && n.held() == "" && !n.key.Local {
		return n.size
	}
	return 0
}

// setHeld marks the node of k held with reason.
func (t *tree) setHeld(k vault.Key, reason string) {
	if n := t.get(k); n != nil {
		t.anchorable -= n.weight()
		n.setExtra(n.journal(), reason)
		t.anchorable += n.weight()
	}
}

func newTree() *tree {
	t := &tree{}
	t.reset()
	return t
}

// reset empties the tree, and with it every count kept from its files, for a load to fill it
// again.
func (t *tree) reset() {
	t.dirs, t.cats, t.madeCat = map[dirKey]*dirFiles{}, map[string]int{}, map[string]bool{}
	t.inos, t.inoNext, t.inoUndo = inoTable{}, 100, nil
	t.anchorable, t.locals = 0, 0
}

func rowKey(r *seal.Row) vault.Key {
	k := vault.Key{Tier: r.Tier, Key: r.Key}
	if r.Tier == seal.TierEntity {
		k = k.InCategory(r.Category)
	}
	return k
}

// inoName is the persisted name an inode number is allocated under.
func inoName(k vault.Key) string {
	if k.Local {
		return "L" + localID(k)
	}
	return "r" + rowID(k)
}

func dirInoName(tier string, cat *string) string {
	if cat == nil {
		return "d" + tier
	}
	return "d" + tier + "\x00" + *cat
}

// localID names a local file: the directory it lives in and its name.
func localID(k vault.Key) string {
	c := "\x01" // no category
	if k.HasCategory {
		c = k.Category
	}
	return k.Tier + "\x00" + c + "\x00" + k.Key
}

// ino returns the inode number for name, allocating and persisting a new one in txn when the
// name has none yet. Callers hold t.mu for writing.
func (t *tree) ino(txn *badger.Txn, name string) (uint64, error) {
	if n, ok := t.inos.get(name); ok {
		return n, nil
	}
	n := t.inoNext
	if err := txn.Set([]byte(pIno+name), be64(n)); err != nil {
		return 0, err
	}
	if err := txn.Set([]byte(kInoNext), be64(n+1)); err != nil {
		return 0, err
	}
	t.inoNext = n + 1
	t.inos.set(name, n)
	return n, nil
}

// inoOf is the number of name, or 0 when it has none.
func (t *tree) inoOf(name string) uint64 {
	n, _ := t.inos.get(name)
	return n
}

// moveIno gives the number of the name from to the name to, in txn and in memory (undone by
// rollbackInos if txn fails): a renamed file keeps its inode number, and the name it left has
// none until a new file takes it. ok is false when from has no number. Callers hold t.mu for
// writing.
func (t *tree) moveIno(txn *badger.Txn, from, to string) (n uint64, ok bool, err error) {
	n, ok = t.inos.get(from)
	if !ok || from == to {
		return n, ok, nil
	}
	if err := txn.Set([]byte(pIno+to), be64(n)); err != nil {
		return 0, false, err
	}
	if err := txn.Delete([]byte(pIno + from)); err != nil {
		return 0, false, err
	}
	t.noteIno(from)
	t.noteIno(to)
	t.inos.set(to, n)
	t.inos.del(from)
	return n, true, nil
}

func (t *tree) noteIno(name string) {
	if t.inoUndo == nil {
		t.inoUndo = map[string]inoWas{}
	}
	if _, ok := t.inoUndo[name]; !ok {
		n, had := t.inos.get(name)
		t.inoUndo[name] = inoWas{n, had}
	}
}

// rollbackInos puts back the names moveIno changed in a transaction that failed.
func (t *tree) rollbackInos() {
	for name, w := range t.inoUndo {
		if w.had {
			t.inos.set(name, w.n)
		} else {
			t.inos.del(name)
		}
	}
	t.inoUndo = nil
}

func (t *tree) get(k vault.Key) *node {
	return t.dirs[dirOf(k)].of(k.Local)[k.Key]
}

func (t *tree) put(n *node) {
	d := dirOf(n.key)
	files := t.dirs[d]
	if files == nil {
		files = &dirFiles{rows: map[string]*node{}}
		t.dirs[d] = files
	}
	if n.key.Local && files.local == nil {
		files.local = map[string]*node{}
	}
	m, name := files.of(n.key.Local), n.key.Key
	old, had := m[name]
	if !had && d.hasCat && d.tier == seal.TierEntity {
		t.cats[d.cat]++
	}
	if had {
		t.anchorable -= old.weight()
	} else if countsLocal(n.key) {
		t.locals++
	}
	t.anchorable += n.weight()
	m[name] = n
}

// countsLocal reports whether a file of key k is one of the local files status counts.
func countsLocal(k vault.Key) bool { return k.Local && k.Tier != vault.TrashTier }

func (t *tree) remove(k vault.Key) {
	d := dirOf(k)
	m := t.dirs[d].of(k.Local)
	old, had := m[k.Key]
	if !had {
		return
	}
	t.anchorable -= old.weight()
	if countsLocal(k) {
		t.locals--
	}
	delete(m, k.Key)
	if d.hasCat && d.tier == seal.TierEntity {
		if t.cats[d.cat]--; t.cats[d.cat] <= 0 {
			delete(t.cats, d.cat)
		}
	}
}

func (t *tree) hasCategory(cat string) bool {
	return t.cats[cat] > 0 || t.madeCat[cat]
}

// categoryCount is the number of entity categories, made or holding rows.
func (t *tree) categoryCount() int {
	n := len(t.cats)
	for c := range t.madeCat {
		if _, ok := t.cats[c]; !ok {
			n++
		}
	}
	return n
}

// list returns a sorted snapshot of one directory.
func (t *tree) list(tier string, cat *string) []vault.Dirent {
	d := dirOf(vault.Key{Tier: tier}.InCategory(cat))
	var out []vault.Dirent
	for _, local := range []bool{false, true} {
		for name, n := range t.dirs[d].of(local) {
			out = append(out, vault.Dirent{Name: name, Ino: n.ino, Local: local})
		}
	}
	if tier == seal.TierEntity && cat == nil {
		seen := map[string]bool{}
		for c := range t.cats {
			seen[c] = true
		}
		for c := range t.madeCat {
			seen[c] = true
		}
		for c := range seen {
			cc := c
			out = append(out, vault.Dirent{Name: c, Dir: true, Ino: t.inoOf(dirInoName(tier, &cc))})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return !out[i].Dir && out[j].Dir
	})
	return out
}

func validTier(tier string) bool {
	for _, t := range vault.Tiers {
		if t == tier {
			return true
		}
	}
	return false
}

func keyString(k vault.Key) string {
	var b strings.Builder
	b.WriteString(k.Tier)
	b.WriteByte(' ')
	if k.HasCategory {
		b.WriteString(k.Category)
		b.WriteByte('/')
	}
	b.WriteString(k.Key)
	return b.String()
}

package vault

import (
	"time"

	"kintfs/seal"
)

// MaxFileBytes is the largest file a mount takes, 64 MiB: a write or truncate past it gets
// EFBIG. A file of exactly this size is stored whole: its body is one raw badger value, and
// badger takes values up to its value log file size, which is this. It is far past what one
// epoch can carry (seal.MaxChunkPlain uncompressed, 90 KB compressed), so such a file is held,
// never anchored, and stays readable and writable here.
const MaxFileBytes = 64 << 20

// Tiers, in the order the mount lists them.
var Tiers = []string{seal.TierEntity, seal.TierState, seal.TierReference, seal.TierJournal}

// TrashTier is the pseudo-tier of the trash's files. No tier starts with '.'.
const TrashTier = ".trash"

// The vault models: what a vault may anchor.
const (
	ModelKint = "kint" // only what kint's store can hold (the default)
	ModelFull = "full" // the wire format's full model: status and meta on every tier, any deletion but the journal's
)

// Key names one file of the tree. An entity may have a category (HasCategory, with its name in
// Category) or none (kint's null category); the empty category "" is a category, and a key of
// its own. Every other tier has none. Local marks a local-only file (a dotfile or a conflict
// copy): it is stored durably but never anchored, and lives in its own namespace. Keys compare
// with == and are map keys; build one with a category through InCategory, or set both fields.
type Key struct {
	Tier     string
	Category string // the entity category; "" and ignored unless HasCategory
	Key      string
	// the flags last, side by side: a key is 56 bytes, not 64, in every node of the tree
	HasCategory bool
	Local       bool
}

// InCategory is k in category c: none when c is nil.
func (k Key) InCategory(c *string) Key {
	k.Category, k.HasCategory = "", false
	if c != nil {
		k.Category, k.HasCategory = *c, true
	}
	return k
}

// CategoryPtr is k's category the way a row carries it: nil when it has none, else a pointer
// to a copy of its name.
func (k Key) CategoryPtr() *string {
	if !k.HasCategory {
		return nil
	}
	c := k.Category
	return &c
}

// Anchor is where a version was anchored.
type Anchor struct {
	Seq   uint64
	Block uint64
	Tx    string // 0x-prefixed hash
}

// Version is one row as the mount sees it: the mirror overlaid with staged changes, or a
// historical version under @<block>. Row carries every field but Body, which stays on disk
// until it is read (TreeReader.Content).
type Version struct {
	Key   Key
	Row   seal.Row
	Ino   uint64
	Size  int64     // len(body) for ordinary rows; len of the rendered JSON for a journal event
	Mtime time.Time // set here (utimensat), else the last local write or the created_at of the epoch that brought it
	Atime time.Time // set here, else Mtime
	Ctime time.Time // the last change of the file or its local attributes
	// HasPerm marks permission bits set here by chmod or create (Perm); else the mount's default
	HasPerm bool
	Perm    uint32
	Chmod   bool     // Perm was set by chmod, not asked for by a create
	Staged  bool     // a local change not yet anchored
	Held    string   // why a staged row cannot be anchored ("" when it can)
	Anchor  *Anchor  // the anchored version this is (or replaces); nil when never anchored
	Leaf    [32]byte // leaf of the row as it stands
}

// Dirent is one entry of a directory listing.
type Dirent struct {
	Name  string // the decoded key or category, not yet escaped
	Dir   bool
	Ino   uint64
	Local bool
}

// TreeReader reads one tree: the live one or a history view.
type TreeReader interface {
	// Get returns one version; ErrNotFound when absent.
	Get(k Key) (*Version, error)
	// Content returns the file content of a version: the body, or for a journal event the
	// JSON object of its five fields.
	Content(k Key) ([]byte, error)
	// Read is Get and Content at once: one lookup where the tree can make one (a history
	// view finds the version once, not twice).
	Read(k Key) (*Version, []byte, error)
	// List lists a tier directory (category nil) or an entity category, sorted by name.
	// Listing the entity tier itself returns its categories (Dir) and its null-category rows.
	List(tier string, category *string) ([]Dirent, error)
	// HasCategory reports whether an entity category exists (rows or an explicit mkdir).
	HasCategory(category string) bool
	// CategoryCount is the number of entity categories, for entity/'s link count.
	CategoryCount() (int, error)
	// DirIno is the stable inode number of a tier directory or entity category.
	DirIno(tier string, category *string) uint64
}

// LocalAttrs are a file's or directory's local attributes as the mount shows them.
type LocalAttrs struct {
	HasPerm             bool
	Perm                uint32 // permission bits (no set-uid, set-gid or sticky)
	Chmod               bool   // Perm was set by chmod (a create's mode is subject to the mount's umask)
	HasTimes            bool   // Mtime and Atime were set here and still hold
	Mtime, Atime, Ctime time.Time
}

// AttrChange is what one setattr changes; nil fields are left alone.
type AttrChange struct {
	Perm         *uint32
	Create       bool // Perm is the mode a create asked for
	Mtime, Atime *time.Time
}

package replica

import (
	"time"

	"kintfs/replica/store"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// The reads of the local store, each named here: the live tree the mount shows, its history,
// the epochs and records the CLI reports. They change nothing, so a read-only replica answers
// them; every change goes through the methods of readonly.go.

var _ vault.TreeReader = (*Replica)(nil)

// Get returns the live version of k; vault.ErrNotFound when absent.
func (r *Replica) Get(k vault.Key) (*vault.Version, error) { return r.store.Get(k) }

// Content returns the live file content of k.
func (r *Replica) Content(k vault.Key) ([]byte, error) { return r.store.Content(k) }

// Read returns the live version of k and its content, read at one instant.
func (r *Replica) Read(k vault.Key) (*vault.Version, []byte, error) { return r.store.Read(k) }

// List lists one live directory, sorted by name.
func (r *Replica) List(tier string, category *string) ([]vault.Dirent, error) {
	return r.store.List(tier, category)
}

// HasCategory reports whether an entity category exists in the live tree.
func (r *Replica) HasCategory(category string) bool { return r.store.HasCategory(category) }

// CategoryCount is the number of entity categories in the live tree.
func (r *Replica) CategoryCount() (int, error) { return r.store.CategoryCount() }

// DirIno is the stable inode number of a tier directory or entity category.
func (r *Replica) DirIno(tier string, category *string) uint64 { return r.store.DirIno(tier, category) }

// DirAttrs are the local attributes of the directory numbered ino.
func (r *Replica) DirAttrs(ino uint64) vault.LocalAttrs { return r.store.DirAttrs(ino) }

// HasTrashDir reports whether the trash directory path exists.
func (r *Replica) HasTrashDir(path string) bool { return r.store.HasTrashDir(path) }

// TrashList lists a trash directory: the directories of a top one, the files of one inside.
func (r *Replica) TrashList(path string) ([]vault.Dirent, error) { return r.store.TrashList(path) }

// OpenedForWrite notes a writer opening k, so a new state or reference row is not sealed
// while it is open; ClosedForWrite notes its close. They stage nothing.
func (r *Replica) OpenedForWrite(k vault.Key) { r.store.OpenedForWrite(k) }

// ClosedForWrite notes the close of a writer OpenedForWrite noted.
func (r *Replica) ClosedForWrite(k vault.Key) { r.store.ClosedForWrite(k) }

// Subscribe registers fn to be told which keys a pull changed.
func (r *Replica) Subscribe(fn func(changed []vault.Key)) { r.store.Subscribe(fn) }

// CheckHistory refuses (vault.ErrHistoryIncomplete) a block whose versions are not all here.
func (r *Replica) CheckHistory(block uint64) error { return r.store.CheckHistory(block) }

// HistoryFrom is the oldest recorded epoch from which every epoch up to the mirror is recorded.
func (r *Replica) HistoryFrom() (vault.Head, error) { return r.store.HistoryFrom() }

// MirrorHead is the head of the mirror: the newest epoch applied here.
func (r *Replica) MirrorHead() (vault.Head, error) { return r.store.MirrorHead() }

// BlockAt is the block of the newest epoch anchored at or before t, from the block times
// recorded here.
func (r *Replica) BlockAt(t time.Time) (uint64, error) { return r.store.BlockAt(t) }

// BlocksText is .kint/blocks: one line per anchored epoch held here.
func (r *Replica) BlocksText() []byte { return r.store.BlocksText() }

// Epochs lists the epochs this machine holds, oldest first.
func (r *Replica) Epochs() ([]vault.EpochInfo, error) { return r.store.Epochs() }

// Versions lists every anchored version of a row this machine holds, oldest first.
func (r *Replica) Versions(k vault.Key) ([]store.HistoryEntry, error) { return r.store.Versions(k) }

// Prove builds the inclusion proof of k's anchored version.
func (r *Replica) Prove(k vault.Key) (*vault.Proof, error) { return r.store.Prove(k) }

// MirrorRows calls fn with every row of the mirror, bodies included, in canonical id order.
func (r *Replica) MirrorRows(fn func(row *seal.Row) error) error { return r.store.MirrorRows(fn) }

// Model is the vault model the engine enforces (vault.ModelKint or vault.ModelFull).
func (r *Replica) Model() string { return r.store.Model() }

// Bucket is the bucket ratchet: the largest padding bucket of an epoch applied so far.
func (r *Replica) Bucket() (int, error) { return r.store.Bucket() }

// PendingPushes lists the push journal's entries, oldest first.
func (r *Replica) PendingPushes() ([]store.PendingPush, error) { return r.store.PendingPushes() }

// Close closes the local store.
func (r *Replica) Close() error { return r.store.Close() }

// Sync returns once every change made so far is durable (Store.Sync). It changes nothing, so
// a read-only replica answers it too.
func (r *Replica) Sync() error { return r.store.Sync() }

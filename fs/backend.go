package fs

import (
	"context"
	"time"

	"kintfs/replica/vault"
)

// Backend is all the mount needs from the replica. Every method is local: none of them
// waits on the chain, except Control, which is the ctl file's blocking command.
type Backend interface {
	vault.TreeReader

	// Write replaces the content of the row (creating it), stages it durably and returns the
	// new version. For the journal tier content must be a JSON object of the five event
	// fields; the event is stored under its content key, which the returned version names.
	// content is not copied on its way to the store, and no part of it is kept once Write
	// returns: the caller may change it afterwards.
	Write(k vault.Key, content []byte, mtime time.Time) (*vault.Version, error)
	// Create makes an empty file (a row staged empty, or a local file) whose local mode is
	// perm; an existing one is emptied and keeps its mode. A new row takes the attributes a
	// row renamed away from its name moments ago left (RenameKeepingAttrs).
	Create(k vault.Key, perm uint32, mtime time.Time) (*vault.Version, error)
	// Sync returns once every change made so far is durable (Create does not wait for it).
	Sync() error
	// SetLocalAttrs sets the local times and mode of a file and returns it. They are never
	// staged or anchored; the row is left as it is.
	SetLocalAttrs(k vault.Key, ch vault.AttrChange) (*vault.Version, error)
	// SetDirAttrs and DirAttrs keep the local times and mode of a directory by its number.
	SetDirAttrs(ino uint64, ch vault.AttrChange) error
	DirAttrs(ino uint64) vault.LocalAttrs

	// The trash (MNT/.Trash-$UID): its directories by path (".Trash-0", ".Trash-0/files");
	// its files are local files of vault.TrashTier whose Category is their directory.
	HasTrashDir(path string) bool
	TrashMkdir(path string) error
	TrashRmdir(path string) error
	TrashList(path string) ([]vault.Dirent, error)

	// LocalRule names the rule that keeps a new file at path (under the mount, as the mount
	// names it) local, never anchored; "" when none does.
	LocalRule(path string) string

	// Remove stages the deletion of a row, or deletes a local file.
	Remove(k vault.Key) error
	// Rename moves a row within its tier (across categories for entities), replacing the
	// target; vault.ErrCrossTier across tiers. A local file of the journal renamed to an
	// event's name is appended as an event and removed, in one step.
	Rename(from, to vault.Key) error
	// RenameKeepingAttrs is Rename that, in the same step, gives a row moved onto a row the
	// replaced row's status and meta when it has none, and keeps those of a row moved to a free
	// name for a row created there moments later (Create).
	RenameKeepingAttrs(from, to vault.Key) error
	// Mkdir and Rmdir manage entity categories; Rmdir refuses with vault.ErrNotEmpty.
	Mkdir(category string) error
	Rmdir(category string) error
	// SetAttr sets "status" or "meta" (nil value = null); meta must be JSON (vault.ErrInvalid).
	// What the vault model does not allow is vault.ErrNotPermitted.
	SetAttr(k vault.Key, name string, value *string) error
	// OpenedForWrite and ClosedForWrite tell the engine a file is open for writing: a new
	// state or reference row is not sealed while it is (a temporary about to be renamed).
	OpenedForWrite(k vault.Key)
	ClosedForWrite(k vault.Key)

	// HistoryView is the read-only tree as anchored at or before block; it refuses
	// (vault.ErrHistoryIncomplete) a block whose versions this machine does not hold: one
	// under a snapshot whose older epochs were never fetched here.
	HistoryView(block uint64) (TreeReader, error)
	// MirrorHead is the newest epoch applied here; @<block> at or past its block can still
	// change, one under it never does.
	MirrorHead() (vault.Head, error)
	// BlockAt is the block of the newest epoch anchored at or before t, from the block times
	// recorded locally (0 when none is); vault.ErrHistoryIncomplete when it cannot be told.
	BlockAt(t time.Time) (uint64, error)

	// Control runs one ctl command (one of replica.Commands) and returns when it is done.
	Control(ctx context.Context, cmd string) error
	// StatusJSON and BlocksText are the contents of .kint/status and .kint/blocks.
	StatusJSON() []byte
	BlocksText() []byte
	// Subscribe registers fn to be called, from the replica's own goroutine, with the keys a
	// pull changed.
	Subscribe(fn func(changed []vault.Key))
}

// TreeReader reads one tree: the live one or a history view. It is defined by the replica
// so that its history views can be returned through Backend.HistoryView.
type TreeReader = vault.TreeReader

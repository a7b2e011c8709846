package replica

import (
	"fmt"
	"time"
)

// A replica opened with Options.ReadOnly (a --read-only mount) refuses, here in the engine,
// everything that stages a change or anchors one, whoever asks: the FUSE tree, .kint/ctl, a
// command forwarded to the mount, kintfs attr. Pulls still run: they change the local mirror,
// never the vault.

// errReadOnlyMount is what every refused change says.
var errReadOnlyMount = fmt.Errorf("%w: the vault is mounted with --read-only; mount it without --read-only to change it", ErrReadOnly)

// ReadOnly reports whether the replica refuses changes.
func (r *Replica) ReadOnly() bool { return r.opt.ReadOnly }

// refuseChange is nil unless the replica is read-only.
func (r *Replica) refuseChange() error {
	if r.opt.ReadOnly {
		return errReadOnlyMount
	}
	return nil
}

// Write is Store.Write, refused on a read-only replica.
func (r *Replica) Write(k Key, content []byte, mtime time.Time) (*Version, error) {
	if err := r.refuseChange(); err != nil {
		return nil, err
	}
	return r.Store.Write(k, content, mtime)
}

// Remove is Store.Remove, refused on a read-only replica.
func (r *Replica) Remove(k Key) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.Store.Remove(k)
}

// Rename is Store.Rename, refused on a read-only replica.
func (r *Replica) Rename(from, to Key) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.Store.Rename(from, to)
}

// RenameKeepingAttrs is Store.RenameKeepingAttrs, refused on a read-only replica.
func (r *Replica) RenameKeepingAttrs(from, to Key) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.Store.RenameKeepingAttrs(from, to)
}

// Mkdir is Store.Mkdir, refused on a read-only replica.
func (r *Replica) Mkdir(category string) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.Store.Mkdir(category)
}

// Rmdir is Store.Rmdir, refused on a read-only replica.
func (r *Replica) Rmdir(category string) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.Store.Rmdir(category)
}

// SetAttr is Store.SetAttr, refused on a read-only replica.
func (r *Replica) SetAttr(k Key, name string, value *string) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.Store.SetAttr(k, name, value)
}

// Create is Store.Create, refused on a read-only replica.
func (r *Replica) Create(k Key, perm uint32, mtime time.Time) (*Version, error) {
	if err := r.refuseChange(); err != nil {
		return nil, err
	}
	return r.Store.Create(k, perm, mtime)
}

// SetLocalAttrs is Store.SetLocalAttrs, refused on a read-only replica.
func (r *Replica) SetLocalAttrs(k Key, ch AttrChange) (*Version, error) {
	if err := r.refuseChange(); err != nil {
		return nil, err
	}
	return r.Store.SetLocalAttrs(k, ch)
}

// SetDirAttrs is Store.SetDirAttrs, refused on a read-only replica.
func (r *Replica) SetDirAttrs(ino uint64, ch AttrChange) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.Store.SetDirAttrs(ino, ch)
}

// TrashMkdir is Store.TrashMkdir, refused on a read-only replica.
func (r *Replica) TrashMkdir(path string) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.Store.TrashMkdir(path)
}

// TrashRmdir is Store.TrashRmdir, refused on a read-only replica.
func (r *Replica) TrashRmdir(path string) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.Store.TrashRmdir(path)
}

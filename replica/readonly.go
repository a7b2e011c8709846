package replica

import (
	"fmt"
	"time"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// A replica opened with Options.ReadOnly (a --read-only mount) refuses, here in the engine,
// everything that stages a change or anchors one, whoever asks: the FUSE tree, .kint/ctl, a
// command forwarded to the mount, kintfs attr. Pulls still run: they change the local mirror,
// never the vault. The store is a private field of Replica, so the methods below are the only
// way a change reaches it from outside the engine (fs's TestReadOnlyBackendRefusesEveryChange
// holds every change of fs.Backend to it).

// errReadOnlyMount is what every refused change says.
var errReadOnlyMount = fmt.Errorf("%w: the vault is mounted with --read-only; mount it without --read-only to change it", vault.ErrReadOnly)

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
func (r *Replica) Write(k vault.Key, content []byte, mtime time.Time) (*vault.Version, error) {
	if err := r.refuseChange(); err != nil {
		return nil, err
	}
	return r.store.Write(k, content, mtime)
}

// Remove is Store.Remove, refused on a read-only replica.
func (r *Replica) Remove(k vault.Key) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.store.Remove(k)
}

// Rename is Store.Rename, refused on a read-only replica.
func (r *Replica) Rename(from, to vault.Key) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.store.Rename(from, to)
}

// RenameKeepingAttrs is Store.RenameKeepingAttrs, refused on a read-only replica.
func (r *Replica) RenameKeepingAttrs(from, to vault.Key) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.store.RenameKeepingAttrs(from, to)
}

// Mkdir is Store.Mkdir, refused on a read-only replica.
func (r *Replica) Mkdir(category string) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.store.Mkdir(category)
}

// Rmdir is Store.Rmdir, refused on a read-only replica.
func (r *Replica) Rmdir(category string) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.store.Rmdir(category)
}

// SetAttr is Store.SetAttr, refused on a read-only replica.
func (r *Replica) SetAttr(k vault.Key, name string, value *string) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.store.SetAttr(k, name, value)
}

// Create is Store.Create, refused on a read-only replica.
func (r *Replica) Create(k vault.Key, perm uint32, mtime time.Time) (*vault.Version, error) {
	if err := r.refuseChange(); err != nil {
		return nil, err
	}
	return r.store.Create(k, perm, mtime)
}

// SetLocalAttrs is Store.SetLocalAttrs, refused on a read-only replica.
func (r *Replica) SetLocalAttrs(k vault.Key, ch vault.AttrChange) (*vault.Version, error) {
	if err := r.refuseChange(); err != nil {
		return nil, err
	}
	return r.store.SetLocalAttrs(k, ch)
}

// SetDirAttrs is Store.SetDirAttrs, refused on a read-only replica.
func (r *Replica) SetDirAttrs(ino uint64, ch vault.AttrChange) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.store.SetDirAttrs(ino, ch)
}

// TrashMkdir is Store.TrashMkdir, refused on a read-only replica.
func (r *Replica) TrashMkdir(path string) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.store.TrashMkdir(path)
}

// TrashRmdir is Store.TrashRmdir, refused on a read-only replica.
func (r *Replica) TrashRmdir(path string) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.store.TrashRmdir(path)
}

// StageRows is Store.StageRows, refused on a read-only replica.
func (r *Replica) StageRows(rows []seal.Row, mtime time.Time) error {
	if err := r.refuseChange(); err != nil {
		return err
	}
	return r.store.StageRows(rows, mtime)
}

package fs

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// backendChanges are the Backend's methods that change anything, each called the way the
// mount calls it; backendReads are the ones that change nothing. Every method of Backend is in
// exactly one of them, so a method added to Backend fails TestReadOnlyBackendRefusesEveryChange
// until it is listed here.
var (
	backendChanges = map[string]func(b Backend) error{
		"Write": func(b Backend) error {
			_, err := b.Write(vault.Key{Tier: seal.TierState, Key: "w"}, []byte("w"), time.Now())
			return err
		},
		"Create": func(b Backend) error {
			_, err := b.Create(vault.Key{Tier: seal.TierState, Key: "c"}, 0o644, time.Now())
			return err
		},
		"SetLocalAttrs": func(b Backend) error {
			mode := uint32(0o600)
			_, err := b.SetLocalAttrs(vault.Key{Tier: seal.TierState, Key: "x"}, vault.AttrChange{Perm: &mode})
			return err
		},
		"SetDirAttrs": func(b Backend) error {
			mode := uint32(0o700)
			return b.SetDirAttrs(b.DirIno(seal.TierState, nil), vault.AttrChange{Perm: &mode})
		},
		"TrashMkdir": func(b Backend) error { return b.TrashMkdir(".Trash-0") },
		"TrashRmdir": func(b Backend) error { return b.TrashRmdir(".Trash-0") },
		"Remove":     func(b Backend) error { return b.Remove(vault.Key{Tier: seal.TierState, Key: "x"}) },
		"Rename": func(b Backend) error {
			return b.Rename(vault.Key{Tier: seal.TierState, Key: "x"}, vault.Key{Tier: seal.TierState, Key: "y"})
		},
		"RenameKeepingAttrs": func(b Backend) error {
			return b.RenameKeepingAttrs(vault.Key{Tier: seal.TierState, Key: "x"}, vault.Key{Tier: seal.TierState, Key: "y"})
		},
		"Mkdir": func(b Backend) error { return b.Mkdir("people") },
		"Rmdir": func(b Backend) error { return b.Rmdir("people") },
		"SetAttr": func(b Backend) error {
			return b.SetAttr(vault.Key{Tier: seal.TierEntity, Key: "x"}, "status", strp("open"))
		},
		// the ctl commands that stage or anchor; the others (pull, refresh, no-flush) change
		// only the local mirror or the mount's own plan, and run on a read-only mount
		"Control": func(b Backend) error {
			var err error
			for _, cmd := range []string{"flush", "compact"} {
				if err = b.Control(context.Background(), cmd); !refusedReadOnly(err) {
					return fmt.Errorf("ctl %s: %v", cmd, err)
				}
			}
			return err
		},
	}
	backendReads = []string{"Get", "Content", "Read", "List", "HasCategory", "CategoryCount", "DirIno", "DirAttrs",
		"HasTrashDir", "TrashList", "LocalRule", "OpenedForWrite", "ClosedForWrite", "HistoryView", "Sync",
		"MirrorHead", "BlockAt", "StatusJSON", "BlocksText", "Subscribe"}
)

func refusedReadOnly(err error) bool {
	return errors.Is(err, vault.ErrReadOnly) && strings.Contains(err.Error(), "--read-only")
}

// TestReadOnlyBackendRefusesEveryChange: the replica the mount runs on, opened read-only,
// refuses every change the mount can ask of it, in the engine itself (whatever FUSE lets
// through), with vault.ErrReadOnly and a message naming --read-only; and the rows it holds are
// as they were.
func TestReadOnlyBackendRefusesEveryChange(t *testing.T) {
	home := homedir.Home{Dir: t.TempDir()}
	var owner common.Address
	var dek [32]byte
	rand.Read(owner[:])
	rand.Read(dek[:])
	v := &homedir.VaultConfig{Owner: owner, Tenant: "test", Space: seal.SpaceID("test"), ChainID: 1337}
	rw, err := replica.Open(replica.Options{Home: home, Vault: v, DEK: dek, Log: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	x := vault.Key{Tier: seal.TierState, Key: "x"}
	if _, err := rw.Write(x, []byte("staged"), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := replica.Open(replica.Options{Home: home, Vault: v, DEK: dek, Log: slog.New(slog.NewTextHandler(t.Output(), nil)), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var b Backend = r

	iface := reflect.TypeFor[Backend]()
	for i := range iface.NumMethod() {
		name := iface.Method(i).Name
		_, changes := backendChanges[name]
		if reads := slices.Contains(backendReads, name); changes == reads {
			t.Errorf("Backend.%s: list it once, in backendChanges (with a call that must be refused) or in backendReads", name)
		}
	}
	for name, op := range backendChanges {
		if _, ok := iface.MethodByName(name); !ok {
			t.Errorf("backendChanges lists %s, which Backend does not have", name)
		}
		if err := op(b); !refusedReadOnly(err) {
			t.Errorf("%s on a read-only replica: %v, want vault.ErrReadOnly naming --read-only", name, err)
		}
	}
	for _, name := range backendReads {
		if _, ok := iface.MethodByName(name); !ok {
			t.Errorf("backendReads lists %s, which Backend does not have", name)
		}
	}

	if got, err := b.Content(x); err != nil || string(got) != "staged" {
		t.Errorf("the staged row reads %q, %v after the refusals", got, err)
	}
	for _, k := range []vault.Key{{Tier: seal.TierState, Key: "w"}, {Tier: seal.TierState, Key: "c"}, {Tier: seal.TierState, Key: "y"}} {
		if _, err := b.Get(k); !errors.Is(err, vault.ErrNotFound) {
			t.Errorf("%s/%s exists after the refusals: %v", k.Tier, k.Key, err)
		}
	}
	if b.HasCategory("people") || b.HasTrashDir(".Trash-0") {
		t.Error("a refused mkdir made its directory")
	}
}

package replica

import (
	"context"
	"crypto/rand"
	"errors"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/seal"
)

// TestReadOnlyRefusesEveryChange: a replica opened read-only refuses each way of staging or
// anchoring with ErrReadOnly and a sentence naming --read-only, and keeps what was staged.
func TestReadOnlyRefusesEveryChange(t *testing.T) {
	home := homedir.Home{Dir: t.TempDir()}
	var owner common.Address
	var dek [32]byte
	rand.Read(owner[:])
	rand.Read(dek[:])
	v := &homedir.VaultConfig{Owner: owner, Tenant: "test", Space: seal.SpaceID("test"), ChainID: 1337}
	rw, err := Open(Options{Home: home, Vault: v, DEK: dek, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	x := vault.Key{Tier: seal.TierState, Key: "x"}
	if _, err := rw.Write(x, []byte("staged"), time.Now()); err != nil {
		t.Fatal(err)
	}
	rw.Close()

	r, err := Open(Options{Home: home, Vault: v, DEK: dek, Log: testLog(t), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	null := "null"
	ctx := context.Background()
	for name, op := range map[string]func() error{
		"write": func() error {
			_, err := r.Write(vault.Key{Tier: seal.TierState, Key: "y"}, []byte("y"), time.Now())
			return err
		},
		"remove": func() error { return r.Remove(x) },
		"rename": func() error { return r.Rename(x, vault.Key{Tier: seal.TierState, Key: "z"}) },
		"rename keeping attrs": func() error {
			return r.RenameKeepingAttrs(x, vault.Key{Tier: seal.TierState, Key: "z"})
		},
		"mkdir":   func() error { return r.Mkdir("c") },
		"rmdir":   func() error { return r.Rmdir("c") },
		"setattr": func() error { return r.SetAttr(x, "meta", &null) },
		"create": func() error {
			_, err := r.Create(vault.Key{Tier: seal.TierState, Key: "new"}, 0o644, time.Now())
			return err
		},
		"set local attrs": func() error {
			mode := uint32(0o600)
			_, err := r.SetLocalAttrs(x, vault.AttrChange{Perm: &mode})
			return err
		},
		"set dir attrs": func() error { return r.SetDirAttrs(1, vault.AttrChange{}) },
		"trash mkdir":   func() error { return r.TrashMkdir("d") },
		"trash rmdir":   func() error { return r.TrashRmdir("d") },
		"stage rows": func() error {
			return r.StageRows([]seal.Row{{Tier: seal.TierState, Key: "rows", Body: seal.BodyString("r")}}, time.Now())
		},
		"push":    func() error { _, err := r.Push(ctx, PushOptions{}); return err },
		"compact": func() error { return r.Control(ctx, "compact") },
		"flush":   func() error { return r.Control(ctx, "flush") },
		"rekey":   func() error { _, _, err := r.Rekey(ctx, [32]byte{1}, seal.KindPassphrase, PushOptions{}); return err },
	} {
		err := op()
		if !errors.Is(err, vault.ErrReadOnly) || !strings.Contains(err.Error(), "--read-only") {
			t.Errorf("%s on a read-only replica: %v", name, err)
		}
	}
	if _, err := r.Push(ctx, PushOptions{DryRun: true}); errors.Is(err, vault.ErrReadOnly) {
		t.Errorf("a dry run changes nothing and is not refused: %v", err)
	}
	st, err := r.Status()
	if err != nil || !st.ReadOnly || st.StagedRows != 1 {
		t.Fatalf("status: %+v %v", st, err)
	}
	if c, err := r.Content(x); err != nil || string(c) != "staged" {
		t.Fatalf("the staged row: %q %v", c, err)
	}
}

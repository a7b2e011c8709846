package replica

import (
	"crypto/rand"
	"kintfs/replica/homedir"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/seal"
)

// NewTestReplica opens a replica on real badger in a temporary KINT_HOME, with a fresh random
// data key and no chain connection: local reads and writes work, push and pull say offline.
func NewTestReplica(t testing.TB) *Replica {
	t.Helper()
	var owner common.Address
	var dek [32]byte
	if _, err := rand.Read(owner[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := rand.Read(dek[:]); err != nil {
		t.Fatal(err)
	}
	v := &homedir.VaultConfig{Owner: owner, Tenant: "test", Space: seal.SpaceID("test"), ChainID: 1337}
	home := homedir.Home(t.TempDir())
	if err := home.SaveVault(v); err != nil { // so that SetVaultModel finds it
		t.Fatal(err)
	}
	r, err := Open(Options{Home: home, Vault: v, DEK: dek, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// ReopenTestReplica closes r and opens its vault again from the same home, as a restart of
// the mount would.
func ReopenTestReplica(t testing.TB, r *Replica) *Replica {
	t.Helper()
	opt := r.opt
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r2, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r2.Close() })
	return r2
}

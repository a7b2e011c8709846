// Package replicatest opens replicas for the tests of the packages above the engine (fs,
// cmd/kintfs): on real badger in a temporary KINT_HOME, with a fresh random data key and no
// chain connection.
//
// It is imported by tests only; nothing of it is linked into kintfs.
package replicatest

import (
	"crypto/rand"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica"
	"kintfs/replica/homedir"
	"kintfs/seal"
)

// opened are the options each replica of this package was opened with, for Reopen.
var opened sync.Map // *replica.Replica -> replica.Options

// New opens a replica on real badger in a temporary KINT_HOME, with a fresh random data key
// and no chain connection: local reads and writes work, push and pull say offline.
func New(t testing.TB) *replica.Replica {
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
	home := homedir.Home{Dir: t.TempDir()}
	if err := home.SaveVault(v); err != nil { // so that SetVaultModel finds it
		t.Fatal(err)
	}
	return open(t, replica.Options{Home: home, Vault: v, DEK: dek, Log: testLog(t)})
}

// Reopen closes r, which New or Reopen opened, and opens its vault again from the same home,
// as a restart of the mount would.
func Reopen(t testing.TB, r *replica.Replica) *replica.Replica {
	t.Helper()
	opt, ok := opened.Load(r)
	if !ok {
		t.Fatal("replicatest.Reopen: the replica was not opened by replicatest")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	opened.Delete(r)
	return open(t, opt.(replica.Options))
}

func open(t testing.TB, opt replica.Options) *replica.Replica {
	t.Helper()
	r, err := replica.Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	opened.Store(r, opt)
	t.Cleanup(func() {
		opened.Delete(r)
		r.Close()
	})
	return r
}

// testLog is a log whose lines go to t.Log, every level.
func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

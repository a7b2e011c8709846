package replica

import (
	"crypto/rand"
	"log/slog"
	"strings"
	"testing"

	"kintfs/replica/homedir"

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
	r, err := Open(Options{Home: homedir.Home(t.TempDir()), Vault: v, DEK: dek, Log: testLog(t)})
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

// testLog is a log whose lines go to t.Log, every level.
func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

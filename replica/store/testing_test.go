package store

import (
	"crypto/rand"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/seal"
)

// testStore is a store in a temporary directory with what the tests need to seal the epochs
// they apply: a random data key and the context of a vault of their own.
type testStore struct {
	*Store
	dir   string
	dek   [32]byte
	owner common.Address
	vault testVault
}

// testVault is the part of a vault's config the tests' epochs carry.
type testVault struct {
	Tenant string
	Space  common.Hash
}

// newTestStore opens a store on real badger in a temporary directory, as replicatest.New
// opens a replica, without its keys.
func newTestStore(t testing.TB) *testStore {
	t.Helper()
	r := &testStore{dir: t.TempDir(), vault: testVault{Tenant: "test", Space: seal.SpaceID("test")}}
	if _, err := rand.Read(r.owner[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := rand.Read(r.dek[:]); err != nil {
		t.Fatal(err)
	}
	r.open(t)
	return r
}

func (r *testStore) open(t testing.TB) {
	t.Helper()
	s, err := OpenStore(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Store = s
	t.Cleanup(func() { s.Close() })
}

// reopenTestStore closes r and opens its directory again, as a restart of the mount would.
func reopenTestStore(t testing.TB, r *testStore) *testStore {
	t.Helper()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r2 := &testStore{dir: r.dir, dek: r.dek, owner: r.owner, vault: r.vault}
	r2.open(t)
	return r2
}

// epochContext is the context test epochs are sealed under.
func (r *testStore) epochContext(seq uint64, prev [32]byte) seal.EpochContext {
	return seal.EpochContext{ChainID: 1337, Owner: r.owner, Space: r.vault.Space, Seq: seq, Prev: prev}
}

// matchesModel fails t unless get gives, for every key of keys, what the map model holds.
func matchesModel[K comparable, V comparable](t testing.TB, seed uint64, step string, keys []K, get func(K) (V, bool), model map[K]V) {
	t.Helper()
	for _, k := range keys {
		got, ok := get(k)
		want, wok := model[k]
		if got != want || ok != wok {
			t.Fatalf("seed %d, after %s: %v is (%+v, %v), the model has (%+v, %v)", seed, step, k, got, ok, want, wok)
		}
	}
}

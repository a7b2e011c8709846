package chain_test

import (
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
)

func TestSessionKeyFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	addr, err := chain.CreateSessionKey(dir, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, chain.SessionKeyFile): 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: mode %v, want %v (%v)", path, fi.Mode().Perm(), want, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d files in the key directory, want 1", len(entries))
	}
	if _, err := chain.CreateSessionKey(dir, "other"); !errors.Is(err, chain.ErrSessionKeyExists) {
		t.Fatalf("second create: %v", err)
	}
	key, got, err := chain.LoadSessionKey(dir, "correct horse")
	if err != nil || got != addr || crypto.PubkeyToAddress(key.PublicKey) != addr {
		t.Fatalf("load: %s %v", got, err)
	}
	if _, _, err := chain.LoadSessionKey(dir, "wrong"); err == nil {
		t.Fatal("wrong passphrase accepted")
	}
	if _, _, err := chain.LoadSessionKey(t.TempDir(), "x"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing key: %v", err)
	}
}

func TestAuthorizeSessionKey(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	keyAddr, err := chain.CreateSessionKey(dir, "pw")
	if err != nil {
		t.Fatal(err)
	}
	sk, _, err := chain.LoadSessionKey(dir, "pw")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.c.Fund(e.ctx, e.key, keyAddr, big.NewInt(1e16)); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.c.CanWrite(e.ctx, e.owner, keyAddr); err != nil || ok {
		t.Fatalf("canWrite before authorization: %v %v", ok, err)
	}

	// The owner signs the digest the contract computes; the session key submits and pays.
	now := latestTime(t, e)
	expiry := now + 30*86400
	deadline := new(big.Int).SetUint64(now + 300)
	digest, nonce, err := e.c.AuthorizationDigest(e.ctx, e.owner, keyAddr, expiry, deadline)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := crypto.Sign(digest[:], e.key)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.c.SetSessionKeyBySig(e.ctx, sk, e.owner, keyAddr, expiry, deadline, sig) // v in {0, 1}
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Logs) != 1 {
		t.Fatalf("%d logs", len(r.Logs))
	}
	if got, err := e.c.SessionKeyExpiry(e.ctx, e.owner, keyAddr); err != nil || got != expiry {
		t.Fatalf("expiry %d, %v", got, err)
	}
	if ok, _ := e.c.CanWrite(e.ctx, e.owner, keyAddr); !ok {
		t.Fatal("key not authorized")
	}
	_, nonce2, err := e.c.AuthorizationDigest(e.ctx, e.owner, keyAddr, expiry, deadline)
	if err != nil || nonce2.Cmp(new(big.Int).Add(nonce, big.NewInt(1))) != 0 {
		t.Fatalf("nonce %v -> %v, %v", nonce, nonce2, err)
	}
	// Replay: refused before sending.
	if _, err := e.c.SetSessionKeyBySig(e.ctx, sk, e.owner, keyAddr, expiry, deadline, sig); !errors.Is(err, chain.ErrBadSignature) || !errors.Is(err, chain.ErrWouldRevert) {
		t.Fatalf("replay: %v", err)
	}

	// The session key pushes for the owner.
	rc, err := e.c.SendRawBlob(e.ctx, sk, e.owner, e.space, common.Hash{}, []byte("from the session key"))
	if err != nil {
		t.Fatal(err)
	}
	if rc.Event.Writer != keyAddr || rc.Event.Owner != e.owner {
		t.Fatalf("event %+v", rc.Event)
	}

	// The owner revokes it directly (expiry 0).
	if _, err := e.c.SetSessionKey(e.ctx, e.key, keyAddr, 0); err != nil {
		t.Fatal(err)
	}
	if ok, _ := e.c.CanWrite(e.ctx, e.owner, keyAddr); ok {
		t.Fatal("revoked key can write")
	}
	_, err = e.c.PreparePush(e.ctx, sk, e.owner, e.space, rc.Digest, []byte("after revoke"))
	if !errors.Is(err, chain.ErrNotAuthorized) {
		t.Fatalf("push after revoke: %v", err)
	}
	// An expired deadline is named as such.
	past := new(big.Int).SetUint64(now - 1)
	if _, err := e.c.SetSessionKeyBySig(e.ctx, sk, e.owner, keyAddr, expiry, past, sig); !errors.Is(err, chain.ErrAuthorizationExpired) {
		t.Fatalf("past deadline: %v", err)
	}
}

func latestTime(t *testing.T, e *env) uint64 {
	t.Helper()
	var h struct {
		Time string `json:"timestamp"`
	}
	if err := rpcCall(e.dev.Info().RPC, &h, "eth_getBlockByNumber", "latest", false); err != nil {
		t.Fatal(err)
	}
	v, ok := new(big.Int).SetString(h.Time[2:], 16)
	if !ok {
		t.Fatalf("timestamp %q", h.Time)
	}
	return v.Uint64()
}

package integration

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/keystore"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"
	"golang.org/x/crypto/hkdf"

	"kintfs/replica/homedir"
	"kintfs/seal"
)

// kintHome writes into home what kint keeps after `kint connect` (docs and src/kint/keys.py,
// epoch.py, pull.py): local.secret as text, session.key as a V3 keystore under that
// passphrase, enrol-<space16>.json, wraps-<space16>.json, vault-<space16>.aes (the data key
// sealed under HKDF(passphrase, "kint-vault-cache-v1"), the whole space in hex as AAD) and
// the epoch cache with kint's pull metadata. It returns the session key's address.
func kintHome(t *testing.T, home string, owner common.Address, tenant string, chainID uint64, contract string, dek [32]byte, wraps []string, epochs string) common.Address {
	t.Helper()
	space := seal.SpaceID(tenant)
	spaceHex := hex.EncodeToString(space[:])
	s16 := spaceHex[:16]
	write := func(name string, data []byte) {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pass := "q2Xv8Lk0sZpY7wN3mB5cR1tH9uJ4eA6dF0gK2iL8oPs"
	write("local.secret", []byte(pass+"\n"))
	priv, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ks, err := keystore.EncryptKey(&keystore.Key{Id: uuid.New(), Address: crypto.PubkeyToAddress(priv.PublicKey), PrivateKey: priv}, pass, keystore.LightScryptN, keystore.LightScryptP)
	if err != nil {
		t.Fatal(err)
	}
	write("session.key", ks)
	enrol := fmt.Sprintf("{\n \"owner\": %q,\n \"tenant_id\": %q,\n \"space\": %q,\n \"account_kind\": 0,\n \"signer\": %q,\n \"chain_id\": %d,\n \"kek_tags\": [],\n \"wrap_kinds\": [\n  2\n ],\n \"created_at\": 1764800000.25,\n \"contract\": %q,\n \"created_here\": false\n}",
		owner.Hex(), tenant, spaceHex, owner.Hex(), chainID, contract)
	write("enrol-"+s16+".json", []byte(enrol))
	wj, _ := json.Marshal(wraps)
	write("wraps-"+s16+".json", wj)
	key := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, []byte(pass), []byte{}, []byte("kint-vault-cache-v1")), key); err != nil {
		t.Fatal(err)
	}
	block, _ := aes.NewCipher(key)
	gcm, _ := cipher.NewGCM(block)
	nonce := make([]byte, 12)
	rand.Read(nonce)
	ct := gcm.Seal(nil, nonce, dek[:], []byte(spaceHex))
	write("vault-"+s16+".aes", fmt.Appendf(nil, `{"expires": %.3f, "nonce": "%x", "ct": "%x"}`, float64(time.Now().Add(24*time.Hour).Unix())+0.5, nonce, ct))
	// the epoch cache: the blobs and plaintexts as they are, the metadata as kint's pull writes it
	entries, err := os.ReadDir(epochs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		b, err := os.ReadFile(filepath.Join(epochs, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".meta.json") {
			var m struct {
				Seq, PrevBlock, Block              uint64
				Digest, Prev, Tx, RowsRoot, Writer string
				Bucket                             int
				Snapshot                           bool
			}
			var raw map[string]any
			json.Unmarshal(b, &raw)
			m.Seq, m.Block, m.PrevBlock = uint64(raw["seq"].(float64)), uint64(raw["block"].(float64)), uint64(raw["prev_block"].(float64))
			m.Digest, m.Prev, m.Tx, m.RowsRoot, m.Writer = raw["digest"].(string), raw["prev"].(string), raw["tx"].(string), raw["rows_root"].(string), raw["writer"].(string)
			m.Bucket = int(raw["bucket"].(float64))
			b = fmt.Appendf(nil, `{"seq": %d, "digest": "%s", "prev": "%s", "prev_block": %d, "block": %d, "tx": "%s", "bucket": %d, "rows_root": "%s", "writer": "%s"}`,
				m.Seq, strings.TrimPrefix(m.Digest, "0x"), strings.TrimPrefix(m.Prev, "0x"), m.PrevBlock, m.Block, strings.TrimPrefix(m.Tx, "0x"), m.Bucket, strings.TrimPrefix(m.RowsRoot, "0x"), m.Writer)
		}
		write(filepath.Join("epochs", s16, name), b)
	}
	return crypto.PubkeyToAddress(priv.PublicKey)
}

// TestKintEnrolledHome: a KINT_HOME holding only what kint keeps (made here from kint's
// formats) mounts with no kintfs init: kintfs takes the owner and tenant from kint's
// enrolment, the data key kint cached, kint's session key (the one the owner authorized for
// kint) to push, and rebuilds its state from kint's epoch cache; what it writes to the cache is
// in kint's form, and kint's own files are left byte for byte.
func TestKintEnrolledHome(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "kinthome")
	a.connect("kint home pass")
	ma := a.mount()
	writeFile(t, ma.path("state/from-a"), "written by a")
	ma.mustCtl("flush")
	ma.unmount()

	ah := homedir.Home{Dir: a.home}
	av, err := ah.LoadVault()
	if err != nil {
		t.Fatal(err)
	}
	dek, err := ah.LoadDEK(av.Space)
	if err != nil {
		t.Fatal(err)
	}
	s16 := av.Space16()
	k := newMachine(t, dc, "kinthome")
	sessionAddr := kintHome(t, k.home, av.Owner, "kinthome", dc.info.ChainID, dc.info.Contract, dek, av.Wraps, filepath.Join(a.home, "epochs", s16))
	// the owner authorizes kint's session key, as `kint authorize` would have
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ownerKey, _ := crypto.HexToECDSA(strings.TrimPrefix(dc.ownerKeyHex(), "0x"))
	c := dc.client(t)
	if err := c.Fund(ctx, ownerKey, sessionAddr, new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetSessionKey(ctx, ownerKey, sessionAddr, uint64(time.Now().Add(24*time.Hour).Unix())); err != nil {
		t.Fatal(err)
	}
	kintFiles := map[string][]byte{}
	for _, name := range []string{"local.secret", "session.key", "enrol-" + s16 + ".json", "wraps-" + s16 + ".json", "vault-" + s16 + ".aes"} {
		kintFiles[name], _ = os.ReadFile(filepath.Join(k.home, name))
	}

	mk := k.mount()
	if got := readFile(t, mk.path("state/from-a")); got != "written by a" {
		t.Fatalf("state/from-a on the kint-enrolled machine: %q", got)
	}
	if !strings.Contains(mk.log.String(), "rebuilt the state database from") {
		t.Errorf("the mount did not rebuild from kint's epoch cache:\n%s", mk.log.String())
	}
	writeFile(t, mk.path("state/from-k"), "written through kint's enrolment")
	mk.mustCtl("flush")
	mk.unmount()

	// the epoch it anchored: in the cache in kint's form, written by kint's session key
	metas, _ := filepath.Glob(filepath.Join(k.home, "epochs", s16, "*.meta.json"))
	if len(metas) < 2 {
		t.Fatalf("cache metas %v", metas)
	}
	last, _ := os.ReadFile(metas[len(metas)-1])
	var m map[string]any
	if err := json.Unmarshal(last, &m); err != nil {
		t.Fatal(err)
	}
	if m["writer"] != sessionAddr.Hex() {
		t.Errorf("the epoch was written by %v, not kint's session key %s", m["writer"], sessionAddr.Hex())
	}
	if d, _ := m["digest"].(string); !strings.HasPrefix(string(last), `{"seq": `) || strings.HasPrefix(d, "0x") || m["prev_block"] == nil {
		t.Errorf("the new meta is not in kint's form: %s", last)
	}
	for name, want := range kintFiles {
		if got, _ := os.ReadFile(filepath.Join(k.home, name)); string(got) != string(want) {
			t.Errorf("kint's %s was changed", name)
		}
	}
	// the other machine sees what the kint-enrolled one wrote
	ma = a.mount()
	ma.mustCtl("pull")
	if got := readFile(t, ma.path("state/from-k")); got != "written through kint's enrolment" {
		t.Fatalf("state/from-k on the first machine: %q", got)
	}
}

package integration

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/seal"
)

// envCount reads a positive count from the environment, else def.
func envCount(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// mountStatus is the part of .kint/status (and kintfs status --json) the reliability tests read.
type mountStatus struct {
	Head        headJSON `json:"head"`
	Mirror      headJSON `json:"mirror"`
	Offline     string   `json:"offline"`
	StagedRows  int      `json:"staged_rows"`
	StagedDels  int      `json:"staged_deletions"`
	PendingPush []uint64 `json:"pending_push"`
	Held        []struct {
		Tier     string  `json:"tier"`
		Category *string `json:"category"`
		Key      string  `json:"key"`
		Reason   string  `json:"reason"`
	} `json:"held"`
	Conflicts []struct {
		Tier     string  `json:"tier"`
		Category *string `json:"category"`
		Key      string  `json:"key"`
		Seq      uint64  `json:"seq"`
		Copy     string  `json:"copy"`
	} `json:"conflicts"`
	Gaps []struct {
		Seq          uint64 `json:"seq"`
		Reason       string `json:"reason"`
		SupersededBy uint64 `json:"superseded_by"`
	} `json:"gaps"`
	LastPush *struct {
		Error string `json:"error"`
	} `json:"last_push"`
	LastPull *struct {
		Error string `json:"error"`
	} `json:"last_pull"`
}

type headJSON struct {
	Seq    uint64 `json:"seq"`
	Digest string `json:"digest"`
	Block  uint64 `json:"block"`
}

func (s *mountStatus) errors() string {
	var parts []string
	if s.LastPush != nil && s.LastPush.Error != "" {
		parts = append(parts, "last push: "+s.LastPush.Error)
	}
	if s.LastPull != nil && s.LastPull.Error != "" {
		parts = append(parts, "last pull: "+s.LastPull.Error)
	}
	return strings.Join(parts, "; ")
}

// readStatus reads .kint/status; an error (a dead mount, say) is returned, not fatal.
func (mt *mounted) readStatus() (*mountStatus, error) {
	b, err := os.ReadFile(mt.path(".kint/status"))
	if err != nil {
		return nil, err
	}
	var st mountStatus
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("status %s: %w", b, err)
	}
	return &st, nil
}

func (mt *mounted) mustStatus() *mountStatus {
	mt.t.Helper()
	st, err := mt.readStatus()
	if err != nil {
		mt.t.Fatal(err)
	}
	return st
}

// checkNoPanic fails the test when the mount's log shows a panic.
func (mt *mounted) checkNoPanic() {
	mt.t.Helper()
	if log := mt.log.String(); strings.Contains(strings.ToLower(log), "panic") {
		mt.t.Errorf("the mount log shows a panic:\n%s", log)
	}
}

func (m *machine) ownerAddr() common.Address { return common.HexToAddress(m.owner()) }

func (m *machine) space() common.Hash { return seal.SpaceID(m.tenant) }

// useRPC points the machine at another RPC URL (a proxy) from now on.
func (m *machine) useRPC(url string) {
	m.extra = append(m.extra, "KINT_RPC_URL="+url)
}

// chainHead reads the vault's head straight from the node.
func chainHead(t *testing.T, c *chain.Client, m *machine) chain.Head {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := c.Head(ctx, m.ownerAddr(), m.space())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// chainEvents are the Epoch events of m's vault from head down to seq 1, newest first, found
// as a pull finds them (chain.Discovery), each linked to the one before it.
func chainEvents(t *testing.T, c *chain.Client, m *machine, head chain.Head) []*chain.EpochEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := c.NewDiscovery(ctx, m.ownerAddr(), m.space(), 0)
	defer d.Close()
	var evs []*chain.EpochEvent
	block, seq, want := head.Block, head.Seq, head.Digest
	for ; seq >= 1; seq-- {
		ev, err := d.Next(ctx, block, seq, want)
		if err != nil {
			t.Fatalf("epoch %d at block %d: %v", seq, block, err)
		}
		if ev.Digest != want {
			t.Fatalf("epoch %d has digest %s, the newer one names %s", seq, ev.Digest.Hex(), want.Hex())
		}
		evs = append(evs, ev)
		block, want = ev.PrevBlock, ev.Prev
	}
	return evs
}

// vaultKeys derives the vault's KEK from its passphrase, as kint does, and the DEK from the
// head epoch's header: what a test needs to seal epochs of its own.
func vaultKeys(t *testing.T, c *chain.Client, m *machine, passphrase string) (kek, dek [32]byte) {
	t.Helper()
	kek, err := seal.KEKFromPassphrase(passphrase, m.ownerAddr(), m.space())
	if err != nil {
		t.Fatal(err)
	}
	h := headEpochHeader(t, c, m)
	if dek, err = seal.DEKFromHeader(h, kek); err != nil {
		t.Fatal(err)
	}
	return kek, dek
}

// intruder holds a session key of the vault's owner, authorized and funded, and nothing else:
// it can append any bytes as the next epoch.
type intruder struct {
	t     *testing.T
	c     *chain.Client
	key   *ecdsa.PrivateKey
	owner common.Address
	space common.Hash
}

func newIntruder(t *testing.T, dc *devChain, c *chain.Client, m *machine) *intruder {
	t.Helper()
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ownerKey, err := crypto.HexToECDSA(strings.TrimPrefix(dc.ownerKeyHex(), "0x"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr := crypto.PubkeyToAddress(key.PublicKey)
	if _, err := c.SetSessionKey(ctx, ownerKey, addr, uint64(time.Now().Add(24*time.Hour).Unix())); err != nil {
		t.Fatal(err)
	}
	if err := c.Fund(ctx, ownerKey, addr, new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)); err != nil {
		t.Fatal(err)
	}
	return &intruder{t: t, c: c, key: key, owner: m.ownerAddr(), space: m.space()}
}

// append sends blob as the next epoch on top of the current head.
func (in *intruder) append(blob []byte) *chain.PushReceipt {
	in.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	head, err := in.c.Head(ctx, in.owner, in.space)
	if err != nil {
		in.t.Fatal(err)
	}
	rc, err := in.c.SendRawBlob(ctx, in.key, in.owner, in.space, head.Digest, blob)
	if err != nil {
		in.t.Fatal(err)
	}
	return rc
}

// waitIdle waits until a mount has nothing staged and its mirror is the chain head.
func waitIdle(t *testing.T, c *chain.Client, m *machine, mt *mounted, timeout time.Duration) *mountStatus {
	t.Helper()
	var st *mountStatus
	eventually(t, timeout, "the mount settles at the chain head", func() error {
		var err error
		if st, err = mt.readStatus(); err != nil {
			return err
		}
		head := chainHead(t, c, m)
		switch {
		case st.Mirror.Seq != head.Seq || !strings.EqualFold(st.Mirror.Digest, head.Digest.Hex()):
			return fmt.Errorf("mirror seq %d %s, chain head seq %d %s (%s)", st.Mirror.Seq, st.Mirror.Digest, head.Seq, head.Digest.Hex(), st.errors())
		case len(st.PendingPush) > 0:
			return fmt.Errorf("push journal still holds %v", st.PendingPush)
		}
		return nil
	})
	return st
}

// headEpochHeader is the header of the vault's head epoch, read from the chain.
func headEpochHeader(t *testing.T, c *chain.Client, m *machine) *seal.Header {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	head := chainHead(t, c, m)
	ev, err := c.EpochAt(ctx, m.ownerAddr(), m.space(), head.Block, head.Seq)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := c.FetchBlobs(ctx, []*chain.EpochEvent{ev})
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := seal.ParseHeader(blobs[0])
	if err != nil {
		t.Fatal(err)
	}
	return h
}

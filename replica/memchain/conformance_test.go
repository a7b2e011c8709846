package memchain_test

import (
	"context"
	"crypto/ecdsa"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/chain/devchain"
	"kintfs/replica"
	"kintfs/replica/chaintest"
	"kintfs/replica/memchain"
)

var _ replica.Chain = (*memchain.Conn)(nil)

// TestConformanceMemchain holds memchain to the suite the dev chain passes.
func TestConformanceMemchain(t *testing.T) {
	chaintest.Run(t, func(t *testing.T) *chaintest.Env {
		mem := memchain.New()
		owner := devchain.AccountKey(0)
		return &chaintest.Env{
			Conn:     func(*testing.T) replica.Chain { return mem.Conn() },
			Contract: mem.Contract(),
			ChainID:  devchain.ChainID,
			Owner:    owner,
			Authorize: func(t *testing.T) *ecdsa.PrivateKey {
				key := newKey(t)
				mem.Authorize(crypto.PubkeyToAddress(owner.PublicKey), crypto.PubkeyToAddress(key.PublicKey), time.Now().Add(24*time.Hour))
				return key
			},
			AuthorizeUnfunded: func(t *testing.T) *ecdsa.PrivateKey {
				key := newKey(t)
				mem.Authorize(crypto.PubkeyToAddress(owner.PublicKey), crypto.PubkeyToAddress(key.PublicKey), time.Now().Add(24*time.Hour))
				mem.SetBalance(crypto.PubkeyToAddress(key.PublicKey), new(big.Int))
				return key
			},
		}
	})
}

// TestConformanceDevchain runs the suite on the truth: a go-ethereum node with EpochAnchor.
func TestConformanceDevchain(t *testing.T) {
	chaintest.Run(t, func(t *testing.T) *chaintest.Env {
		dc, err := devchain.Start(devchain.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dc.Close() })
		dial := func(t *testing.T) *chain.Client {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := chain.Dial(ctx, dc.Info().RPC, dc.Contract(), chain.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return c
		}
		owner := devchain.AccountKey(0)
		authorize := func(t *testing.T, wei *big.Int) *ecdsa.PrivateKey {
			key := newKey(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, addr := dial(t), crypto.PubkeyToAddress(key.PublicKey)
			if wei.Sign() > 0 {
				if err := c.Fund(ctx, owner, addr, wei); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.SetSessionKey(ctx, owner, addr, uint64(time.Now().Add(24*time.Hour).Unix())); err != nil {
				t.Fatal(err)
			}
			return key
		}
		return &chaintest.Env{
			Conn:     func(t *testing.T) replica.Chain { return dial(t) },
			Contract: dc.Contract(),
			ChainID:  devchain.ChainID,
			Owner:    owner,
			Authorize: func(t *testing.T) *ecdsa.PrivateKey {
				return authorize(t, new(big.Int).Exp(big.NewInt(10), big.NewInt(19), nil))
			},
			AuthorizeUnfunded: func(t *testing.T) *ecdsa.PrivateKey { return authorize(t, new(big.Int)) },
		}
	})
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return key
}

package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/chain/devchain"
	"kintfs/replica"
	"kintfs/replica/homedir"
)

// devSetup starts (or reuses) the development chain under KINT_HOME/devchain and connects this
// home to a vault on it owned by the first dev account: the newcomer's whole set-up. chainID
// 0 is the one the chain was created with, else 1337; another id than the existing chain's is
// refused.
func devSetup(ctx context.Context, cio *cmdIO, home homedir.Home, chainID uint64, say func(string, ...any)) (*devchain.DevChain, error) {
	dir, err := home.Ensure("devchain")
	if err != nil {
		return nil, err
	}
	if chainID, err = devChainID(dir, chainID); err != nil {
		return nil, err
	}
	say("using a local development chain kept in %s (chain id %d): this is NOT Base, and nothing here is real money", dir, chainID)
	dc, info, err := startDevChain(dir, chainID, say)
	if err != nil {
		return nil, err
	}
	if cio.set.given("KINT_WS_URL") == "" && info.WS != "" {
		cio.set = cio.set.with(map[string]string{"KINT_WS_URL": info.WS}) // the mount subscribes on the dev chain's websocket
	}
	if err := devConnect(ctx, cio, home, info, say); err != nil {
		if dc != nil {
			dc.Close()
		}
		return nil, err
	}
	return dc, nil
}

// devChainID is the chain id of the development chain in dir: the one it was created with,
// which chainID (0: any) must match, else chainID, else 1337.
func devChainID(dir string, chainID uint64) (uint64, error) {
	var prev devchain.Info
	if b, err := os.ReadFile(filepath.Join(dir, devchain.InfoFile)); err == nil && json.Unmarshal(b, &prev) == nil && prev.ChainID != 0 {
		if chainID != 0 && chainID != prev.ChainID {
			return 0, usagef("the development chain in %s was created under chain id %d, not %d: use another KINT_HOME for --chain-id %d", dir, prev.ChainID, chainID, chainID)
		}
		chainID = prev.ChainID
	}
	if chainID == 0 {
		chainID = devchain.ChainID
	}
	return chainID, nil
}

// startDevChain starts the development chain kept in dir, or finds the one another kintfs
// process runs there (dc is then nil), and points the mount's websocket at it.
func startDevChain(dir string, chainID uint64, say func(string, ...any)) (*devchain.DevChain, devchain.Info, error) {
	var info devchain.Info
	dc, err := devchain.Start(devchain.Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", ChainID: chainID, MaxLead: devchain.DefaultMaxLead})
	if err == nil {
		info = dc.Info()
	} else {
		// another kintfs process may be running this chain: use it
		b, rerr := os.ReadFile(dir + "/devchain.json")
		if rerr != nil || json.Unmarshal(b, &info) != nil {
			return nil, info, fmt.Errorf("start the development chain: %w", err)
		}
		say("the development chain in %s is already running (%v); using it at %s", dir, err, info.RPC)
	}
	return dc, info, nil
}

// devConnect connects home to the dev owner's vault on the development chain, creating it
// on first use, and readies the session key.
func devConnect(ctx context.Context, cio *cmdIO, home homedir.Home, info devchain.Info, say func(string, ...any)) error {
	if len(info.Accounts) == 0 {
		return errors.New("the development chain has no dev accounts")
	}
	ownerKey, err := crypto.HexToECDSA(strings.TrimPrefix(info.Accounts[0].PrivateKey, "0x"))
	if err != nil {
		return err
	}
	contract := common.HexToAddress(info.Contract)
	c, err := dialChain(ctx, cio.set, info.RPC, contract)
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := home.LoadVault()
	switch {
	case err == nil && (v.Contract != contract || v.ChainID != info.ChainID):
		return fmt.Errorf("KINT_HOME %s is connected to another vault (chain %d, contract %s); use another KINT_HOME for --dev", home, v.ChainID, v.Contract.Hex())
	case err == nil:
		v.RPC = info.RPC // the port may change between runs
		if err := home.SaveVault(v); err != nil {
			return err
		}
	case errors.Is(err, homedir.ErrNoVault):
		if err := devInit(ctx, cio, home, info, c, crypto.PubkeyToAddress(ownerKey.PublicKey), say); err != nil {
			return err
		}
	default:
		return err
	}
	return devSessionKey(ctx, home, c, ownerKey, say)
}

// devInit creates the dev owner's vault (tenant KINT_TENANT, else dev) under a passphrase of
// devPassphrase.
func devInit(ctx context.Context, cio *cmdIO, home homedir.Home, info devchain.Info, c *chain.Client, owner common.Address, say func(string, ...any)) error {
	pass, where, err := devPassphrase(cio.set, home)
	if err != nil {
		return err
	}
	tenant := cio.set.given("KINT_TENANT")
	if tenant == "" {
		tenant = "dev"
	}
	res, err := replica.Init(ctx, replica.InitOptions{Home: home, Owner: owner, Tenant: tenant, RPC: info.RPC,
		Contract: common.HexToAddress(info.Contract), Client: c, Passphrase: &pass, NewVault: true})
	if err != nil {
		return err
	}
	if where != "" {
		say("generated the vault passphrase and saved it in %s (mode 0600)", where)
	}
	if res.Created {
		say("created vault %s for dev owner %s; recovery code in %s", res.Vault.Space16(), owner.Hex(), res.RecoveryFile)
	}
	return nil
}

// devPassphrase is KINT_PASSPHRASE, else the one saved under KINT_HOME, else a new one saved
// there; where is set when it was generated.
func devPassphrase(set settings, home homedir.Home) (pass, where string, err error) {
	if p := set.given("KINT_PASSPHRASE"); p != "" {
		p, err := cleanSecret(p, "passphrase in KINT_PASSPHRASE")
		return p, "", err
	}
	path := home.Path("dev-passphrase")
	if b, err := os.ReadFile(path); err == nil {
		p, err := cleanSecret(string(b), "passphrase in "+path)
		return p, "", err
	}
	raw := make([]byte, 20)
	if _, err := rand.Read(raw); err != nil {
		return "", "", err
	}
	pass = strings.ToLower(base32.StdEncoding.EncodeToString(raw))
	if err := home.WriteFile([]byte(pass+"\n"), "dev-passphrase"); err != nil {
		return "", "", err
	}
	return pass, path, nil
}

// devSessionKey creates, funds and authorizes this machine's session key on the dev chain.
func devSessionKey(ctx context.Context, home homedir.Home, c *chain.Client, ownerKey *ecdsa.PrivateKey, say func(string, ...any)) error {
	key, err := loadSessionKey(home)
	if err != nil {
		addr, err := createSessionKey(home)
		if err != nil {
			return err
		}
		say("created session key %s", addr.Hex())
		if key, err = loadSessionKey(home); err != nil {
			return err
		}
	}
	addr := crypto.PubkeyToAddress(key.PublicKey)
	bal, err := c.Balance(ctx, addr)
	if err != nil {
		return err
	}
	oneEth := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	if bal.Cmp(oneEth) < 0 {
		if err := c.Fund(ctx, ownerKey, addr, new(big.Int).Mul(oneEth, big.NewInt(10))); err != nil {
			return fmt.Errorf("fund the session key: %w", err)
		}
	}
	owner := crypto.PubkeyToAddress(ownerKey.PublicKey)
	exp, err := c.SessionKeyExpiry(ctx, owner, addr)
	if err != nil {
		return err
	}
	if exp < uint64(time.Now().Add(24*time.Hour).Unix()) {
		if _, err := c.SetSessionKey(ctx, ownerKey, addr, uint64(time.Now().Add(365*24*time.Hour).Unix())); err != nil {
			return fmt.Errorf("authorize the session key: %w", err)
		}
		say("authorized session key %s to push for %s", addr.Hex(), owner.Hex())
	}
	return nil
}

package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/chain/devchain/devinfo"
	"kintfs/replica"
	"kintfs/replica/homedir"
)

// devSetup starts (or reuses) the development chain under KINT_HOME/devchain and connects this
// home to a vault on it owned by the first dev account: the newcomer's whole set-up. chainID
// 0 is the one the chain was created with, else 1337; another id than the existing chain's is
// refused. stop ends the chain it started (nothing, when it reused one).
func devSetup(ctx context.Context, cio *cmdIO, home homedir.Home, chainID uint64, say func(string, ...any)) (stop func(), err error) {
	dir, err := home.Ensure("devchain")
	if err != nil {
		return nil, err
	}
	if chainID, err = devChainID(dir, chainID); err != nil {
		return nil, err
	}
	say("using a local development chain kept in %s (chain id %d): this is NOT Base, and nothing here is real money", dir, chainID)
	stop, info, err := startDevChain(dir, chainID, say)
	if err != nil {
		return nil, err
	}
	if cio.set.given("KINT_WS_URL") == "" && info.WS != "" {
		cio.set = cio.set.with(map[string]string{"KINT_WS_URL": info.WS}) // the mount subscribes on the dev chain's websocket
	}
	if err := devConnect(ctx, cio, home, info, say); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// devChainID is the chain id of the development chain in dir: the one it was created with,
// which chainID (0: any) must match, else chainID, else 1337.
func devChainID(dir string, chainID uint64) (uint64, error) {
	var prev devinfo.Info
	if b, err := os.ReadFile(filepath.Join(dir, devinfo.InfoFile)); err == nil && json.Unmarshal(b, &prev) == nil && prev.ChainID != 0 {
		if chainID != 0 && chainID != prev.ChainID {
			return 0, usagef("the development chain in %s was created under chain id %d, not %d: use another KINT_HOME for --chain-id %d", dir, prev.ChainID, chainID, chainID)
		}
		chainID = prev.ChainID
	}
	if chainID == 0 {
		chainID = devinfo.ChainID
	}
	return chainID, nil
}

// startDevChain starts the development chain kept in dir, in its own program, or finds the one
// another process runs there (stop then does nothing). The chain started ends when stop is
// called, or when this process ends, however it ends: it stops when its standard input, held
// here, reaches its end.
func startDevChain(dir string, chainID uint64, say func(string, ...any)) (stop func(), info devinfo.Info, err error) {
	prog, err := devchainProgram()
	if err != nil {
		return nil, info, err
	}
	o := devinfo.DefaultOptions()
	o.DataDir, o.HTTP, o.ChainID = dir, "127.0.0.1:0", chainID
	cmd := exec.Command(prog, append(o.Args(), "--with-parent")...)
	// its own process group: Ctrl-C in the terminal stops the mount, which still needs the
	// chain to anchor what is staged; the chain stops after it
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	errs := &tailBuffer{max: 4 << 10}
	cmd.Stderr = errs
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, info, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, info, err
	}
	if err := cmd.Start(); err != nil {
		return nil, info, fmt.Errorf("start the development chain: %w", err)
	}
	line, rerr := bufio.NewReader(out).ReadBytes('\n')
	if rerr == nil && json.Unmarshal(line, &info) == nil && info.RPC != "" {
		return func() { stopDevChain(cmd, in) }, info, nil
	}
	in.Close()
	werr := cmd.Wait()
	why := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(errs.String()), devinfo.Program+": "))
	if why == "" {
		why = fmt.Sprint(werr)
	}
	// another kintfs process may be running this chain: use it
	b, err := os.ReadFile(filepath.Join(dir, devinfo.InfoFile))
	if err != nil || json.Unmarshal(b, &info) != nil || info.RPC == "" {
		return nil, info, fmt.Errorf("start the development chain: %s", why)
	}
	say("the development chain in %s is already running (%s); using it at %s", dir, why, info.RPC)
	return func() {}, info, nil
}

// devChainStopTimeout bounds the wait for the dev chain to write its state and end.
const devChainStopTimeout = 30 * time.Second

// stopDevChain ends the chain's input, which stops it, and waits for it to end.
func stopDevChain(cmd *exec.Cmd, in io.Closer) {
	in.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(devChainStopTimeout):
		cmd.Process.Kill()
		<-done
	}
}

// tailBuffer keeps the last max bytes written to it: what a program said before it failed.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// devConnect connects home to the dev owner's vault on the development chain, creating it
// on first use, and readies the session key.
func devConnect(ctx context.Context, cio *cmdIO, home homedir.Home, info devinfo.Info, say func(string, ...any)) error {
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
func devInit(ctx context.Context, cio *cmdIO, home homedir.Home, info devinfo.Info, c *chain.Client, owner common.Address, say func(string, ...any)) error {
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

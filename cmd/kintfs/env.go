package main

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
	"kintfs/fs"
	"kintfs/replica"
	"kintfs/replica/homedir"
)

// vaultEnv is what most commands open: the home, the vault, the chain and the replica.
type vaultEnv struct {
	home   homedir.Home
	vault  *homedir.VaultConfig
	rep    *replica.Replica
	chain  *chain.Client // with openOptions.noStore: the chain alone, no replica
	shared bool          // the mount's own: closed by the mount
}

func (e *vaultEnv) Close() {
	if e.shared {
		return
	}
	if e.chain != nil {
		e.chain.Close()
	}
	if e.rep != nil {
		e.rep.Close()
		if c := e.client(); c != nil {
			c.Close()
		}
	}
}

// client is the vault's chain client; nil when offline.
func (e *vaultEnv) client() *chain.Client {
	if e.rep == nil {
		return e.chain
	}
	c, _ := e.rep.Client().(*chain.Client) // the engine's chain is always the RPC client here
	return c
}

// defaultHome is KINT_HOME, else ~/.kint, keeping its local secret and cached keys as the
// settings say (localOf).
func defaultHome(set settings) (homedir.Home, error) {
	if h := set.given("KINT_HOME"); h != "" {
		return homedir.Home{Dir: h, Local: localOf(set)}, nil
	}
	dir, err := os.UserHomeDir()
	if err != nil {
		return homedir.Home{}, fmt.Errorf("no KINT_HOME and no home directory: %w", err)
	}
	return homedir.Home{Dir: filepath.Join(dir, ".kint"), Local: localOf(set)}, nil
}

// localOf is how a home keeps its local secret and cached keys: KINT_SESSION_PASSPHRASE,
// KINT_NO_KEYCHAIN=1 and KINT_KEY_TTL (a Go duration or seconds).
func localOf(set settings) homedir.Local {
	return homedir.Local{SessionPassphrase: set.given("KINT_SESSION_PASSPHRASE"), NoKeychain: set.on("KINT_NO_KEYCHAIN"),
		KeyTTL: set.duration("KINT_KEY_TTL")}
}

// openOptions say what a command needs.
type openOptions struct {
	chain    bool // fail when the RPC cannot be reached (else run offline)
	redial   bool // when offline, dial again at each poll, flush and pull (the mount)
	dek      bool // the data key must be unlocked
	readOnly bool // refuse every change and push (a --read-only mount)
	noStore  bool // the vault and the chain only: the state database is not opened, so the
	// command runs beside a mount
	noDial bool         // KINT_OFFLINE=1 for a command kint lets skip the chain: do not dial it
	log    *slog.Logger // nil: a command's failures and what it changed, on stderr
}

// openVault opens the vault this KINT_HOME is connected to.
func openVault(ctx context.Context, cio *cmdIO, o openOptions) (*vaultEnv, error) {
	if e := cio.env; e != nil {
		return &vaultEnv{home: e.home, vault: e.vault, rep: e.rep, shared: true}, nil
	}
	set := cio.set
	home, v, err := loadHomeVault(set)
	if err != nil {
		return nil, err
	}
	e := &vaultEnv{home: home, vault: v}
	if o.noStore {
		if e.chain, err = dialVaultChain(ctx, set, v); err != nil {
			if errors.Is(err, errWrongChain) {
				return nil, err
			}
			return nil, offlineError(v, err)
		}
		return e, nil
	}
	// the mount owns the database while it runs; say so, and how to go on
	if err := refuseIfMounted(home); err != nil {
		return nil, err
	}
	var client *chain.Client
	if !o.noDial {
		client, err = dialVaultChain(ctx, set, v)
	}
	if errors.Is(err, errWrongChain) {
		return nil, err
	}
	if err != nil && o.chain {
		return nil, offlineError(v, err)
	}
	var connect func(context.Context) (replica.Chain, error)
	if o.redial {
		connect = func(ctx context.Context) (replica.Chain, error) {
			c, err := dialVaultChain(ctx, set, v)
			if err != nil {
				return nil, err // a nil Chain, not a nil *chain.Client inside one
			}
			return c, nil
		}
	}
	var engineChain replica.Chain
	if client != nil {
		engineChain = client
	}
	dek, err := home.LoadDEK(v.Space)
	if err != nil && o.dek {
		e.Close()
		return nil, err
	}
	key, _ := loadSessionKey(home)
	log := o.log
	if log == nil {
		// a command outside a mount: its failures and what it changed, not its routine steps
		log = newLineLog(func(line string) { fmt.Fprintln(os.Stderr, "kintfs: "+line) }, slog.LevelInfo, "")
	}
	gasCap, err := maxGasPrice(set)
	if err != nil {
		e.Close()
		return nil, err
	}
	e.rep, err = replica.Open(replica.Options{Home: home, Vault: v, DEK: dek, Client: engineChain, Connect: connect, SessionKey: key,
		Confirmations: uint64(set.positive("KINT_CONFIRMATIONS")), Log: log, ReadOnly: o.readOnly, ColdStart: coldStartCheck(set, v), RowPath: fs.PathOfKey,
		MaxGasPrice: gasCap})
	if err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// loadHomeVault is KINT_HOME and the vault it is connected to (see loadVaultConfig).
func loadHomeVault(set settings) (homedir.Home, *homedir.VaultConfig, error) {
	home, err := defaultHome(set)
	if err != nil {
		return homedir.Home{}, nil, err
	}
	v, err := loadVaultConfig(set, home)
	return home, v, err
}

// loadVaultConfig is the vault home is connected to, with KINT_RPC_URL and KINT_CONTRACT
// applied over its RPC and contract.
func loadVaultConfig(set settings, home homedir.Home) (*homedir.VaultConfig, error) {
	v, err := home.LoadVault()
	if err != nil {
		return nil, err
	}
	applyEnvOverrides(set, v)
	return v, nil
}

func applyEnvOverrides(set settings, v *homedir.VaultConfig) {
	if u := set.given("KINT_RPC_URL"); u != "" {
		v.RPC = u
	}
	if c := set.given("KINT_CONTRACT"); common.IsHexAddress(c) {
		v.Contract = common.HexToAddress(c)
	}
}

// offlineError says that the vault's RPC cannot be reached, naming it (scheme and host) once.
func offlineError(v *homedir.VaultConfig, err error) error {
	if errors.Is(err, chain.ErrUnreachable) {
		return err
	}
	return fmt.Errorf("%w %s: %v", replica.ErrOffline, chain.Endpoint(v.RPC), err)
}

var errWrongChain = errors.New("the RPC serves another chain")

// dialVaultChain dials the vault's RPC and checks that it serves the vault's chain.
func dialVaultChain(ctx context.Context, set settings, v *homedir.VaultConfig) (*chain.Client, error) {
	c, err := dialChain(ctx, set, v.RPC, v.Contract)
	if err != nil {
		return nil, err
	}
	if c.ChainID() != v.ChainID {
		c.Close()
		return nil, fmt.Errorf("%w: %s serves chain %d, but the vault lives on chain %d", errWrongChain, v.RPC, c.ChainID(), v.ChainID)
	}
	// calldata a pruned primary answers null for comes from KINT_RPC_URL_2, when it is set
	if second := set.given("KINT_RPC_URL_2"); second != "" && !sameEndpoint(second, v.RPC) {
		c.SetSecondary(func(ctx context.Context) (*chain.Client, error) { return dialChain(ctx, set, second, v.Contract) })
	}
	return c, nil
}

func dialChain(ctx context.Context, set settings, rpc string, contract common.Address) (*chain.Client, error) {
	if rpc == "" {
		return nil, errors.New("no RPC URL (KINT_RPC_URL)")
	}
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c, err := chain.Dial(dctx, rpc, contract, chain.Options{})
	if err != nil {
		return nil, err
	}
	c.SetBlockTime(chainBlockTime(set, c.ChainID()))
	return c, nil
}

// chainBlockTime is the chain's steady block interval, which paces receipt polls: KINT_BLOCK_TIME
// (seconds; 0 for none), else the known one of the chain, else 0 (the dev chain mines on
// demand).
func chainBlockTime(set settings, chainID uint64) time.Duration {
	if set.given("KINT_BLOCK_TIME") != "" {
		return set.duration("KINT_BLOCK_TIME")
	}
	switch chainID {
	case 8453, 84532, 10, 11155420: // Base, Base Sepolia, OP Mainnet, OP Sepolia
		return 2 * time.Second
	case 1, 11155111: // Ethereum, Sepolia
		return 12 * time.Second
	}
	return 0
}

// sessionKeyPass is the keystore passphrase: derived from the local secret, never typed.
func sessionKeyPass(home homedir.Home) (string, error) {
	k, err := home.LocalKey()
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(k), nil
}

// loadSessionKey is this machine's session key: kintfs's own (KINT_HOME/session), else, when
// kintfs has none, the one kint keeps (KINT_HOME/session.key, sealed under kint's local
// passphrase), so a machine kint enrolled pushes with the key the owner already authorized.
func loadSessionKey(home homedir.Home) (*ecdsa.PrivateKey, error) {
	if _, err := os.Stat(filepath.Join(home.Path("session"), chain.SessionKeyFile)); errors.Is(err, os.ErrNotExist) {
		if dir, pass, ok, err := home.KintSessionKey(); ok || err != nil {
			if err != nil {
				return nil, err
			}
			key, _, err := chain.LoadSessionKey(dir, pass)
			if err != nil {
				return nil, fmt.Errorf("kint's session key: %w", err)
			}
			return key, nil
		}
	}
	pass, err := sessionKeyPass(home)
	if err != nil {
		return nil, err
	}
	key, _, err := chain.LoadSessionKey(home.Path("session"), pass)
	return key, err
}

// maxGasPrice is KINT_MAX_GAS_PRICE_GWEI in wei per gas: a push priced above it is refused
// before anything is sent. Unset or empty: no cap.
func maxGasPrice(set settings) (*big.Int, error) {
	v := strings.TrimSpace(set.given("KINT_MAX_GAS_PRICE_GWEI"))
	if v == "" {
		return nil, nil
	}
	r, ok := new(big.Rat).SetString(v)
	if !ok || r.Sign() <= 0 {
		return nil, usagef("KINT_MAX_GAS_PRICE_GWEI=%q is not a gas price in gwei: give a positive number such as 0.5, or unset it for no cap", v)
	}
	r.Mul(r, big.NewRat(1e9, 1))
	return new(big.Int).Quo(r.Num(), r.Denom()), nil
}

// readSecret reads one secret from stdin or a file (removed after reading when asked) as
// kint reads it: surrounding white space stripped (homedir.CleanSecret); what names it in the
// refusal of an empty one (exit 2). Secrets never come from argv.
func readSecret(path string, remove bool, what string) (string, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(os.Stdin, 1<<16))
	} else {
		b, err = os.ReadFile(path)
		if err == nil && remove {
			err = os.Remove(path)
		}
	}
	if err != nil {
		return "", err
	}
	return cleanSecret(string(b), what)
}

// cleanSecret is homedir.CleanSecret with an empty secret as a usage refusal (exit 2).
func cleanSecret(raw, what string) (string, error) {
	s, err := homedir.CleanSecret(raw, what)
	if err != nil {
		return "", usagef("%v", err)
	}
	return s, nil
}

// createSessionKey makes this machine's session key: a V3 keystore under KINT_HOME/session,
// sealed with a passphrase derived from the local secret.
func createSessionKey(home homedir.Home) (common.Address, error) {
	pass, err := sessionKeyPass(home)
	if err != nil {
		return common.Address{}, err
	}
	if _, err := home.Ensure("session"); err != nil {
		return common.Address{}, err
	}
	return chain.CreateSessionKey(home.Path("session"), pass)
}

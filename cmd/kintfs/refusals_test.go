package main

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"syscall"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
	"kintfs/fs"
	"kintfs/replica"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
)

// TestRefusalTable maps each cause a push, pull or ctl command can be refused for to the
// errno a ctl writer gets, the exit code of the CLI and a piece of the message that names the
// cause or the way out. EIO and exit 1 are left for faults kintfs did not foresee.
func TestRefusalTable(t *testing.T) {
	key := common.HexToAddress("0x00000000000000000000000000000000000000a1")
	eth := func(f string) *big.Int {
		r, _ := new(big.Rat).SetString(f)
		return new(big.Int).Quo(new(big.Int).Mul(r.Num(), big.NewInt(1e18)), r.Denom())
	}
	for _, c := range []struct {
		cause string
		err   error
		errno syscall.Errno
		exit  int
		msg   []string
	}{
		{"lost the race for the next seq", fmt.Errorf("%w: another machine anchored seq 7 first (this push's transaction 0xab: %w); its rows stay here and go out with the next flush", replica.ErrChainMoved, chain.ErrTxFailed),
			syscall.ESTALE, exitMoved, []string{"another machine anchored seq 7", "go out with the next flush"}},
		{"unfunded session key", fmt.Errorf("send epoch 3: %w", &chain.FundsError{Address: key, Have: eth("0.0001"), Want: eth("0.0003")}),
			fs.ErrnoOf(replica.ErrNotAuthorized), exitKey, []string{"fund " + key.Hex(), "0.0002 ETH short"}},
		{"unauthorized session key", fmt.Errorf("%w: session key %s (NotAuthorized()): authorize it with kintfs authorize", replica.ErrNotAuthorized, key.Hex()),
			fs.ErrnoOf(replica.ErrNotAuthorized), exitKey, []string{key.Hex(), "kintfs authorize"}},
		{"authorization expired", fmt.Errorf("%w: x", chain.ErrAuthorizationExpired), fs.ErrnoOf(replica.ErrNotAuthorized), exitKey, nil},
		{"RPC refusing connections", &chain.UnreachableError{Err: syscall.ECONNREFUSED, Endpoint: "http://127.0.0.1:8545"},
			syscall.EHOSTUNREACH, exitRefused, []string{"cannot reach the RPC http://127.0.0.1:8545"}},
		{"RPC that never answers", &chain.UnreachableError{Err: context.DeadlineExceeded, Endpoint: "https://rpc.example"},
			syscall.EHOSTUNREACH, exitRefused, []string{"cannot reach the RPC https://rpc.example"}},
		{"no client", fmt.Errorf("%w %s: dial", replica.ErrOffline, chain.Endpoint("https://rpc.example/v2/secret")),
			syscall.EHOSTUNREACH, exitRefused, []string{"cannot reach the RPC https://rpc.example:"}},
		{"a revert", fmt.Errorf("%w: epoch 4 sent as 0xab: %w", replica.ErrReverted, chain.ErrTxFailed), fs.ErrnoOf(replica.ErrReverted), exitRefused, []string{"reverted"}},
		{"an estimate that reverts", fmt.Errorf("%w: Panic(1)", chain.ErrWouldRevert), fs.ErrnoOf(replica.ErrReverted), exitRefused, nil},
		{"a gas price over the cap", fmt.Errorf("%w: the chain's gas price is 2 gwei, the cap 0.5 gwei; nothing was sent and the rows stay staged: flush again when the price falls, or raise the cap (KINT_MAX_GAS_PRICE_GWEI, unset for none)", replica.ErrGasPriceCap),
			syscall.ERANGE, exitRefused, []string{"gas price is 2 gwei", "the cap 0.5 gwei", "raise the cap (KINT_MAX_GAS_PRICE_GWEI"}},
		{"a gap", fmt.Errorf("%w: epoch 9", replica.ErrGapOpen), syscall.EBADMSG, exitRefused, nil},
		{"a fork", replica.ErrFork, syscall.ESTALE, exitMoved, []string{"kintfs pull --discard-local"}},
		{"a lying RPC", replica.ErrStaleRPC, syscall.EPROTO, exitStaleRPC, nil},
		{"no data key", homedir.ErrKeyMissing, fs.ErrnoOf(homedir.ErrKeyMissing), exitKey, nil},
		{"read-only mount", vault.ErrReadOnly, syscall.EROFS, exitUsage, nil},
		{"unforeseen", errors.New("badger: disk on fire"), syscall.EIO, exitFailure, nil},
	} {
		if got := fs.ErrnoOf(c.err); got != c.errno {
			t.Errorf("%s: errno %v, want %v", c.cause, got, c.errno)
		}
		if got := exitCode(c.err); got != c.exit {
			t.Errorf("%s: exit %d, want %d", c.cause, got, c.exit)
		}
		if c.errno != syscall.EIO && (c.exit == exitFailure || c.errno == 0) {
			t.Errorf("%s: a foreseen refusal must not be exit 1", c.cause)
		}
		for _, m := range c.msg {
			if !strings.Contains(c.err.Error(), m) {
				t.Errorf("%s: message %q does not say %q", c.cause, c.err.Error(), m)
			}
		}
		if strings.Contains(c.err.Error(), "secret") {
			t.Errorf("%s: message carries the RPC's path: %q", c.cause, c.err.Error())
		}
		// the ctl writer's errno gives the same exit code through kintfs unmount
		if c.errno != syscall.EIO && c.errno != syscall.EROFS {
			if got := exitCode(ctlExitError(c.errno)); got != c.exit {
				t.Errorf("%s: ctl errno %v exits %d through unmount, want %d", c.cause, c.errno, got, c.exit)
			}
		}
	}
	if got := chain.FormatETH(eth("0.0002")); got != "0.0002" {
		t.Errorf("FormatETH: %q", got)
	}
}

// KINT_MAX_GAS_PRICE_GWEI is read as gwei, decimals allowed; unset is no cap, and a value that
// is not a positive number is refused with the variable's name and the way out.
func TestMaxGasPriceEnv(t *testing.T) {
	t.Setenv("KINT_MAX_GAS_PRICE_GWEI", "")
	if got, err := maxGasPrice(envSettings()); got != nil || err != nil {
		t.Errorf("unset: %v, %v", got, err)
	}
	t.Setenv("KINT_MAX_GAS_PRICE_GWEI", "0.5")
	if got, err := maxGasPrice(envSettings()); err != nil || got.Cmp(big.NewInt(500_000_000)) != 0 {
		t.Errorf("0.5 gwei: %v, %v", got, err)
	}
	for _, bad := range []string{"cheap", "-1", "0"} {
		t.Setenv("KINT_MAX_GAS_PRICE_GWEI", bad)
		_, err := maxGasPrice(envSettings())
		if exitCode(err) != exitUsage || err == nil || !strings.Contains(err.Error(), "KINT_MAX_GAS_PRICE_GWEI") || !strings.Contains(err.Error(), "unset it for no cap") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

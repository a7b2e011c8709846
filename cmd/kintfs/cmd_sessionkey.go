package main

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/spf13/pflag"

	"kintfs/chain"
	"kintfs/replica"
	"kintfs/replica/homedir"
)

type authorizeOptions struct {
	expiry      time.Duration
	sigFile     string
	deadline    int64
	printDigest bool
}

func init() {
	register(&command{
		name:  "session-key",
		usage: "create | show | rotate",
		short: "create this machine's session key, show it with its balance and authorization, or replace it (the old one kept as session.old)",
		run:   runSessionKey,
	})
	register(&command{
		name:  "authorize",
		usage: "[burn-nonce] [--expiry 720h] [--print-digest | --signature-file F --deadline UNIX]",
		short: "authorize this machine's session key to push (owner key from KINT_OWNER_KEY, or a signature made elsewhere)",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &authorizeOptions{}
			fs.DurationVar(&o.expiry, "expiry", 30*24*time.Hour, "how long the authorization lasts")
			fs.BoolVar(&o.printDigest, "print-digest", false, "print the EIP-712 digest the owner must sign, and its deadline")
			fs.StringVar(&o.sigFile, "signature-file", "", "the owner's signature over that digest (hex), read from a file or - (stdin)")
			fs.Int64Var(&o.deadline, "deadline", 0, "the deadline the signature was made for (unix seconds)")
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runAuthorize(ctx, cio, o, args) }
		},
	})
}

func runSessionKey(ctx context.Context, cio *cmdIO, args []string) error {
	if len(args) != 1 || (args[0] != "create" && args[0] != "show" && args[0] != "rotate") {
		return usagef("session-key create | show | rotate")
	}
	home, err := defaultHome(cio.set)
	if err != nil {
		return err
	}
	if args[0] == "rotate" {
		return rotateSessionKey(ctx, cio, home)
	}
	if args[0] == "create" {
		if key, err := loadSessionKey(home); err == nil {
			return usagef("this machine already has a session key %s", crypto.PubkeyToAddress(key.PublicKey).Hex())
		}
		addr, err := createSessionKey(home)
		if err != nil {
			return err
		}
		fmt.Fprintf(cio.out, "session key %s created; fund it with a little ETH and run kintfs authorize\n", addr.Hex())
		return nil
	}
	key, err := loadSessionKey(home)
	if err != nil {
		return fmt.Errorf("%w: no session key on this machine (kintfs session-key create)", replica.ErrNotAuthorized)
	}
	addr := crypto.PubkeyToAddress(key.PublicKey)
	fmt.Fprintf(cio.out, "session key: %s\n", addr.Hex())
	e, err := openVault(ctx, cio, openOptions{chain: true, noStore: true})
	if err != nil {
		return err
	}
	defer e.Close()
	bal, err := e.client().Balance(ctx, addr)
	if err != nil {
		return err
	}
	exp, err := e.client().SessionKeyExpiry(ctx, e.vault.Owner, addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(cio.out, "balance: %s ETH (%s wei)\n", chain.FormatETH(bal), bal)
	if exp == 0 {
		fmt.Fprintf(cio.out, "authorized: no (kintfs authorize)\n")
	} else {
		fmt.Fprintf(cio.out, "authorized for %s until %s\n", e.vault.Owner.Hex(), time.Unix(int64(exp), 0).UTC().Format(time.RFC3339))
	}
	return nil
}

// rotateSessionKey moves the keystore to session.old and creates a new key. An earlier
// session.old is never overwritten: it may still hold funds.
func rotateSessionKey(ctx context.Context, cio *cmdIO, home homedir.Home) error {
	key, err := loadSessionKey(home)
	if err != nil {
		return fmt.Errorf("%w: no session key on this machine to rotate (kintfs session-key create)", replica.ErrNotAuthorized)
	}
	old := home.Path("session.old")
	if _, err := os.Lstat(old); err == nil {
		return usagef("%s is left from an earlier rotation: move it away first (it may still hold ETH)", old)
	}
	if err := os.Rename(home.Path("session"), old); err != nil {
		return err
	}
	addr, err := createSessionKey(home)
	if err != nil {
		return err
	}
	fmt.Fprintf(cio.out, "rotated: session key %s created; the old key %s is kept in %s\nfund the new key and run kintfs authorize (a running mount keeps the old key until it restarts)\n",
		addr.Hex(), crypto.PubkeyToAddress(key.PublicKey).Hex(), old)
	return nil
}

func runAuthorize(ctx context.Context, cio *cmdIO, o *authorizeOptions, args []string) error {
	if len(args) > 1 || (len(args) == 1 && args[0] != "burn-nonce") {
		return usagef("authorize [burn-nonce] [--expiry 720h] [--print-digest | --signature-file F --deadline UNIX]")
	}
	e, err := openVault(ctx, cio, openOptions{chain: true, noStore: true})
	if err != nil {
		return err
	}
	defer e.Close()
	key, err := loadSessionKey(e.home)
	if err != nil {
		return fmt.Errorf("%w: no session key on this machine (kintfs session-key create)", replica.ErrNotAuthorized)
	}
	addr := crypto.PubkeyToAddress(key.PublicKey)
	if len(args) == 1 {
		return burnNonce(ctx, cio, e, addr)
	}
	expiry := uint64(time.Now().Add(o.expiry).Unix())
	switch {
	case o.printDigest:
		deadline := big.NewInt(time.Now().Add(time.Hour).Unix())
		d, nonce, err := e.client().AuthorizationDigest(ctx, e.vault.Owner, addr, expiry, deadline)
		if err != nil {
			return err
		}
		fmt.Fprintf(cio.out, "sign this digest with the owner's key (no prefix), then run\n  kintfs authorize --signature-file FILE --deadline %s --expiry %s\n", deadline, o.expiry)
		fmt.Fprintf(cio.out, "digest: %s\nsession key: %s\nexpiry: %d\nnonce: %s\n", d.Hex(), addr.Hex(), expiry, nonce)
		return nil
	case o.sigFile != "":
		s, err := readSecret(o.sigFile, false, "signature")
		if err != nil {
			return err
		}
		sig, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(s), "0x"))
		if err != nil {
			return usagef("the signature must be hex")
		}
		if o.deadline == 0 {
			return usagef("--deadline is the one the digest was printed with")
		}
		if _, err := e.client().SetSessionKeyBySig(ctx, key, e.vault.Owner, addr, expiry, big.NewInt(o.deadline), sig); err != nil {
			return err
		}
	default:
		owner, err := ownerKey(cio.set, e, "or use --print-digest and --signature-file")
		if err != nil {
			return err
		}
		if _, err := e.client().SetSessionKey(ctx, owner, addr, expiry); err != nil {
			return err
		}
	}
	fmt.Fprintf(cio.out, "session key %s may push for %s until %s\n", addr.Hex(), e.vault.Owner.Hex(), time.Unix(int64(expiry), 0).UTC().Format(time.RFC3339))
	return nil
}

// ownerKey is KINT_OWNER_KEY, refused unless it is the key of the vault's owner.
func ownerKey(set settings, e *vaultEnv, alt string) (*ecdsa.PrivateKey, error) {
	hexKey := set.given("KINT_OWNER_KEY")
	if hexKey == "" {
		return nil, usagef("set KINT_OWNER_KEY to the owner's private key%s", alt)
	}
	owner, err := crypto.HexToECDSA(strings.TrimPrefix(hexKey, "0x"))
	if err != nil {
		return nil, usagef("KINT_OWNER_KEY is not a private key")
	}
	if got := crypto.PubkeyToAddress(owner.PublicKey); got != e.vault.Owner {
		return nil, usagef("KINT_OWNER_KEY is %s, not the owner %s", got.Hex(), e.vault.Owner.Hex())
	}
	return owner, nil
}

// burnNonce sends setSessionKey from the owner with the session key's current expiry: the
// authorization nonce goes up by one, cancelling every authorization signed and never sent.
func burnNonce(ctx context.Context, cio *cmdIO, e *vaultEnv, addr common.Address) error {
	owner, err := ownerKey(cio.set, e, "")
	if err != nil {
		return err
	}
	c := e.client()
	exp, err := c.SessionKeyExpiry(ctx, e.vault.Owner, addr)
	if err != nil {
		return err
	}
	deadline := big.NewInt(time.Now().Add(time.Hour).Unix())
	_, before, err := c.AuthorizationDigest(ctx, e.vault.Owner, addr, exp, deadline)
	if err != nil {
		return err
	}
	if _, err := c.SetSessionKey(ctx, owner, addr, exp); err != nil {
		return err
	}
	_, after, err := c.AuthorizationDigest(ctx, e.vault.Owner, addr, exp, deadline)
	if err != nil {
		return err
	}
	fmt.Fprintf(cio.out, "burned authorization nonce %s (now %s): every signed, unsent authorization is void; session key %s keeps its expiry\n", before, after, addr.Hex())
	return nil
}

package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/spf13/pflag"

	"kintfs/chain/devchain/devinfo"
	"kintfs/replica"
	"kintfs/replica/vault"
	"kintfs/seal"
)

type initOptions struct {
	owner, tenant, rpc, contract string
	passStdin                    bool
	passFile                     string
	signature, signatureFile     string
	saltFile                     string
	recoveryStdin                bool
	recoveryFile                 string
	newVault                     bool
	pull                         bool
}

func init() {
	register(&command{
		name:  "init",
		usage: "--owner 0x... --tenant NAME [--new-vault] [--pull] (--passphrase-stdin | --passphrase-file F | --signature - | --signature-file F | --recovery-code-stdin | --recovery-code-file F)",
		short: "connect this machine to a vault (adopting it from the chain, or with --new-vault creating it)",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &initOptions{}
			fs.StringVar(&o.owner, "owner", "", "the owner's address")
			fs.StringVar(&o.tenant, "tenant", "", "the tenant (KINT_TENANT)")
			fs.StringVar(&o.rpc, "rpc", "", "JSON-RPC URL (KINT_RPC_URL)")
			fs.StringVar(&o.contract, "contract", "", "EpochAnchor address (KINT_CONTRACT)")
			fs.BoolVar(&o.passStdin, "passphrase-stdin", false, "read the vault passphrase from stdin")
			fs.StringVar(&o.passFile, "passphrase-file", "", "read the vault passphrase from a file")
			fs.StringVar(&o.signature, "signature", "", "read the owner's vault signature (hex) from - (stdin)")
			fs.StringVar(&o.signatureFile, "signature-file", "", "read the owner's vault signature (hex) from a file")
			fs.StringVar(&o.saltFile, "salt-passphrase-file", "", "a passphrase that salts the signature wrap, read from a file")
			fs.BoolVar(&o.recoveryStdin, "recovery-code-stdin", false, "read a recovery code from stdin")
			fs.StringVar(&o.recoveryFile, "recovery-code-file", "", "read a recovery code from a file")
			fs.BoolVar(&o.newVault, "new-vault", false, "create the vault when the chain has none for this owner and tenant (without it, init only joins)")
			fs.BoolVar(&o.pull, "pull", false, "after joining, run the first pull here, with its progress, so that the first mount is current at once")
			return func(ctx context.Context, cio *cmdIO, args []string) error {
				settingFlags(fs, cio.set, map[string]*string{"KINT_TENANT": &o.tenant, "KINT_RPC_URL": &o.rpc, "KINT_CONTRACT": &o.contract})
				return runInit(ctx, cio, o, args)
			}
		},
	})
	register(&command{
		name:  "canonical-payload",
		usage: "--owner 0x...",
		short: "print the EIP-712 vault message to sign in the owner's wallet",
		setup: func(fs *pflag.FlagSet) runFunc {
			var owner string
			fs.StringVar(&owner, "owner", "", "the owner's address")
			return func(ctx context.Context, cio *cmdIO, args []string) error {
				if !common.IsHexAddress(owner) {
					return usagef("--owner must be an address")
				}
				fmt.Fprintln(cio.out, seal.CanonicalPayload(common.HexToAddress(owner)))
				return nil
			}
		},
	})
}

func runInit(ctx context.Context, cio *cmdIO, o *initOptions, args []string) error {
	if len(args) > 0 {
		return usagef("init takes no arguments")
	}
	if !common.IsHexAddress(o.owner) {
		return usagef("--owner must be an address")
	}
	if !offline(cio.set) && (o.rpc == "" || !common.IsHexAddress(o.contract)) {
		return usagef("init needs --rpc (KINT_RPC_URL) and --contract (KINT_CONTRACT)")
	}
	home, err := defaultHome(cio.set)
	if err != nil {
		return err
	}
	io := replica.InitOptions{Home: home, Owner: common.HexToAddress(o.owner), Tenant: o.tenant, RPC: o.rpc,
		Contract: common.HexToAddress(o.contract), NewVault: o.newVault}
	if err := readInitSecret(o, &io); err != nil {
		return err
	}
	if offline(cio.set) {
		if o.pull {
			return usagef("init --pull reads the chain: unset KINT_OFFLINE, or leave out --pull")
		}
		return initOffline(ctx, cio, io)
	}
	return initOnline(ctx, cio, o, io)
}

// readInitSecret reads the one secret init was given into io: a passphrase, the owner's
// signature, or a recovery code.
func readInitSecret(o *initOptions, io *replica.InitOptions) error {
	n := 0
	for _, set := range []bool{o.passStdin, o.passFile != "", o.signature != "", o.signatureFile != "", o.recoveryStdin, o.recoveryFile != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return usagef("give exactly one of --passphrase-stdin, --passphrase-file, --signature -, --signature-file, --recovery-code-stdin, --recovery-code-file")
	}
	switch {
	case o.passStdin || o.passFile != "":
		src := "-"
		if o.passFile != "" {
			src = o.passFile
		}
		p, err := readSecret(src, false, "passphrase")
		if err != nil {
			return err
		}
		io.Passphrase = &p
	case o.signature != "" || o.signatureFile != "":
		if o.signature != "" && o.signature != "-" {
			return usagef("--signature takes - (stdin); signatures never go on the command line")
		}
		sig, salt, err := readSignature(o.signatureFile, o.saltFile)
		if err != nil {
			return err
		}
		io.Signature, io.SaltPassphrase = sig, salt
	case o.recoveryStdin || o.recoveryFile != "":
		src := "-"
		if o.recoveryFile != "" {
			src = o.recoveryFile
		}
		code, err := readSecret(src, false, "recovery code")
		if err != nil {
			return err
		}
		io.RecoveryCode = &code
	}
	return nil
}

// initOnline connects this machine to the vault on the chain, or creates it there. Off the
// dev chain, a vault that has epochs is checked against a second RPC first.
func initOnline(ctx context.Context, cio *cmdIO, o *initOptions, io replica.InitOptions) error {
	c, err := dialChain(ctx, cio.set, o.rpc, io.Contract)
	if err != nil {
		return fmt.Errorf("%w: %v", replica.ErrOffline, err)
	}
	defer c.Close()
	io.Client = c
	if c.ChainID() != devinfo.ChainID {
		owner, space := io.Owner, seal.SpaceID(io.Tenant)
		h, err := c.Head(ctx, owner, space)
		if err != nil {
			return fmt.Errorf("read head: %w", err)
		}
		if h.Seq > 0 {
			if err := checkSecondRPC(ctx, cio.set, o.rpc, io.Contract, c.ChainID(), owner, space, vault.Head{Seq: h.Seq, Digest: h.Digest, Block: h.Block}); err != nil {
				return err
			}
		}
	}
	res, err := replica.Init(ctx, io)
	if err != nil {
		return err
	}
	if res.Created {
		fmt.Fprintf(cio.out, "created a new vault for %s, tenant %q (space %s) on chain %d\n", res.Vault.Owner.Hex(), res.Vault.Tenant, res.Vault.Space16(), res.Vault.ChainID)
		fmt.Fprintf(cio.out, "the recovery code is in %s: keep it offline; it is the only way back if the passphrase is lost\n", res.RecoveryFile)
	} else {
		fmt.Fprintf(cio.out, "connected to the vault of %s, tenant %q (space %s): data key %s from epoch %d\n", res.Vault.Owner.Hex(), res.Vault.Tenant, res.Vault.Space16(), res.Vault.DekID, res.AdoptedAt)
		if o.pull {
			return initPull(ctx, cio)
		}
	}
	return nil
}

// initPull is init --pull's first pull, shown as kintfs pull shows it (a line per epoch, or
// one updating line on a terminal). The vault is joined whatever it says.
func initPull(ctx context.Context, cio *cmdIO) error {
	e, err := openVault(ctx, cio, openOptions{chain: true, dek: true})
	if err != nil {
		return fmt.Errorf("joined the vault, but the first pull did not start: %w", err)
	}
	defer e.Close()
	pctx, endProgress := withProgress(ctx, cio)
	rep, err := e.rep.Pull(pctx, false)
	endProgress()
	if err != nil {
		return fmt.Errorf("joined the vault, but the first pull stopped (kintfs pull or the mount goes on from there): %w", err)
	}
	fmt.Fprintf(cio.out, "mirror at seq %d (head %d): %d epochs applied, %d fetched, %d from cache, %d rows changed\n",
		rep.Mirror.Seq, rep.Head.Seq, rep.Applied, rep.Fetched, rep.FromCache, rep.Changed)
	return nil
}

// initOffline is init under KINT_OFFLINE=1: the data key comes from the key wraps this
// machine keeps in its vault config, and the head epoch's header is not read. Only a machine
// that connected before can do it; a new vault needs the chain.
func initOffline(ctx context.Context, cio *cmdIO, io replica.InitOptions) error {
	v, err := loadVaultConfig(cio.set, io.Home)
	if err != nil {
		return usagef("KINT_OFFLINE=1: this machine has no vault config to unlock from (%v); run kintfs init online first", err)
	}
	if v.Owner != io.Owner || v.Tenant != io.Tenant {
		return usagef("KINT_OFFLINE=1: this machine is connected to owner %s, tenant %q, not owner %s, tenant %q; run kintfs init online to switch", v.Owner.Hex(), v.Tenant, io.Owner.Hex(), io.Tenant)
	}
	var dek, kek [32]byte
	var what string
	switch {
	case io.RecoveryCode != nil:
		what = "recovery code"
		if dek, err = seal.DecodeRecoveryCode(*io.RecoveryCode); err != nil {
			return err
		}
	default:
		kind := byte(seal.KindPassphrase)
		what = "passphrase"
		if io.Passphrase != nil {
			kek, err = seal.KEKFromPassphrase(*io.Passphrase, v.Owner, v.Space)
		} else {
			kind, what = seal.KindSignature, "signature"
			kek, err = seal.KEKFromSignature(io.Signature, v.Owner, v.Space, io.SaltPassphrase)
		}
		if err != nil {
			return err
		}
		wraps, err := v.WrapList()
		if err != nil {
			return err
		}
		tag := seal.KEKTag(kek)
		found := false
		for i := range wraps {
			if wraps[i].Tag == tag && wraps[i].Kind == kind {
				if dek, err = seal.UnwrapDEK(kek, &wraps[i]); err == nil {
					found = true
				}
				break
			}
		}
		if !found {
			return usagef("the %s opens none of this machine's key wraps (KINT_OFFLINE=1 reads no header off the chain): check it, or run kintfs init online", what)
		}
	}
	id := seal.DEKID(dek)
	if fmt.Sprintf("%x", id[:]) != v.DekID {
		return usagef("the %s opens data key %x, not the vault's current key %s on this machine (KINT_OFFLINE=1): run kintfs init online", what, id[:], v.DekID)
	}
	if err := io.Home.SaveDEK(v.Space, dek); err != nil {
		return err
	}
	if io.RecoveryCode == nil {
		if err := io.Home.SaveKEK(v.Space, kek); err != nil {
			return err
		}
	}
	fmt.Fprintf(cio.out, "unlocked data key %s of the vault of %s, tenant %q (space %s) from this machine's key wraps; KINT_OFFLINE=1: the chain was not read\n",
		v.DekID, v.Owner.Hex(), v.Tenant, v.Space16())
	return nil
}

// readSignature reads a 65-byte hex signature from file ("" or "-": stdin) and, when
// saltFile is given, the passphrase that salts its key.
func readSignature(file, saltFile string) (sig []byte, salt *string, err error) {
	if file == "" {
		file = "-"
	}
	s, err := readSecret(file, false, "signature")
	if err != nil {
		return nil, nil, err
	}
	sig, err = hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(s), "0x"))
	if err != nil || len(sig) != 65 {
		return nil, nil, usagef("the signature must be 65 bytes of hex")
	}
	if saltFile != "" {
		p, err := readSecret(saltFile, false, "salt passphrase")
		if err != nil {
			return nil, nil, err
		}
		salt = &p
	}
	return sig, salt, nil
}

package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"kintfs/replica"
	"kintfs/replica/homedir"
	"kintfs/seal"
)

type rekeyOptions struct {
	passStdin                bool
	passFile                 string
	signature, signatureFile string
	saltFile                 string
	dropMissing              bool
	overSkipped              bool
	confirmations            uint64
}

const rekeyUsage = "(--passphrase-stdin | --passphrase-file F) [--signature - | --signature-file F] [--drop-missing] [--over-skipped]"

func init() {
	register(&command{
		name:  "rekey",
		usage: rekeyUsage,
		short: "rotate the data key: a new key wrapped under every key given, one snapshot under it, a new recovery code",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &rekeyOptions{}
			fs.BoolVar(&o.passStdin, "passphrase-stdin", false, "keep the vault passphrase: read it from stdin")
			fs.StringVar(&o.passFile, "passphrase-file", "", "keep the vault passphrase: read it from a file")
			fs.StringVar(&o.signature, "signature", "", "keep the owner's signature key: read the signature (hex) from - (stdin)")
			fs.StringVar(&o.signatureFile, "signature-file", "", "keep the owner's signature key: read the signature (hex) from a file")
			fs.StringVar(&o.saltFile, "salt-passphrase-file", "", "the passphrase that salts the signature key, read from a file")
			fs.BoolVar(&o.dropMissing, "drop-missing", false, "rotate even though a key that opens the vault today was not given (it keeps opening only the epochs before the rotation)")
			fs.BoolVar(&o.overSkipped, "over-skipped", false, overSkippedUsage)
			fs.Uint64Var(&o.confirmations, "confirmations", 0, confirmationsUsage)
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runRekey(ctx, cio, o, args) }
		},
	})
}

// kindName names a wrap kind the way a person reads it.
func kindName(kind byte) string {
	switch kind {
	case seal.KindSignature:
		return "signature"
	case seal.KindPassphrase:
		return "passphrase"
	}
	return fmt.Sprintf("kind 0x%02x", kind)
}

func runRekey(ctx context.Context, cio *cmdIO, o *rekeyOptions, args []string) error {
	if len(args) > 0 {
		return usagef("rekey takes no arguments")
	}
	if cio.env != nil {
		// inside the mount: the caller read the secrets and derived the keys
		if len(cio.keys) == 0 {
			return usagef("rekey: the keys did not reach the mount")
		}
		return rekeyWith(ctx, cio, o, cio.keys)
	}
	if err := checkRekeyFlags(o); err != nil {
		return err
	}
	home, v, err := loadHomeVault(cio.set)
	if err != nil {
		return err
	}
	keys, err := rekeyKeys(o, v)
	if err != nil {
		return err
	}
	// a running mount holds the database: the rekey runs there, with the derived keys (never
	// the passphrase or signature) sent over its socket
	if reply, ok := forwardRequestTo(home, forwardRequest{Argv: cio.argv, Keys: encodeKeys(keys), Offline: offline(cio.set)}); ok {
		fmt.Fprint(cio.out, reply.Out)
		fmt.Fprint(cio.err, reply.Err)
		if reply.Code != exitOK {
			return exitCodeError{code: reply.Code, msg: "the mount refused the rekey", quiet: true}
		}
		return nil
	}
	return rekeyWith(ctx, cio, o, keys)
}

// checkRekeyFlags refuses secrets given twice, or from places that cannot be, and a rekey
// with no key at all.
func checkRekeyFlags(o *rekeyOptions) error {
	switch {
	case o.passStdin && o.passFile != "":
		return usagef("give one of --passphrase-stdin and --passphrase-file")
	case o.signature != "" && o.signatureFile != "":
		return usagef("give one of --signature - and --signature-file")
	case o.signature != "" && o.signature != "-":
		return usagef("--signature takes - (stdin); signatures never go on the command line")
	case o.passStdin && o.signature == "-":
		return usagef("--passphrase-stdin and --signature - cannot share stdin: use --passphrase-file or --signature-file")
	case o.saltFile != "" && o.signature == "" && o.signatureFile == "":
		return usagef("--salt-passphrase-file salts a signature key: give --signature - or --signature-file too")
	case !o.pass() && !o.sig():
		return usagef("rekey needs every key that is to keep opening the vault: --passphrase-stdin or --passphrase-file, and/or --signature - or --signature-file")
	}
	return nil
}

func (o *rekeyOptions) pass() bool { return o.passStdin || o.passFile != "" }
func (o *rekeyOptions) sig() bool  { return o.signature != "" || o.signatureFile != "" }

// rekeyKeys reads the passphrase and the signature given and derives their keys.
func rekeyKeys(o *rekeyOptions, v *homedir.VaultConfig) ([]replica.RekeyKey, error) {
	var keys []replica.RekeyKey
	if o.pass() {
		src := "-"
		if o.passFile != "" {
			src = o.passFile
		}
		p, err := readSecret(src, false, "passphrase")
		if err != nil {
			return nil, err
		}
		kek, err := seal.KEKFromPassphrase(p, v.Owner, v.Space)
		if err != nil {
			return nil, err
		}
		keys = append(keys, replica.RekeyKey{KEK: kek, Kind: seal.KindPassphrase})
	}
	if o.sig() {
		raw, salt, err := readSignature(o.signatureFile, o.saltFile)
		if err != nil {
			return nil, err
		}
		kek, err := seal.KEKFromSignature(raw, v.Owner, v.Space, salt)
		if err != nil {
			return nil, err
		}
		keys = append(keys, replica.RekeyKey{KEK: kek, Kind: seal.KindSignature})
	}
	return keys, nil
}

// rekeyWith checks the keys against the wraps that open the vault today and rotates.
func rekeyWith(ctx context.Context, cio *cmdIO, o *rekeyOptions, keys []replica.RekeyKey) error {
	e, err := openVault(ctx, cio, openOptions{chain: true, dek: true})
	if err != nil {
		return err
	}
	defer e.Close()
	wraps, dekID, from, err := todaysWraps(ctx, cio, e)
	if err != nil {
		return err
	}
	uniq, opens, missing := matchWraps(keys, wraps, dekID)
	if !opens {
		return usagef("none of the keys given opens the vault today (no key wrap in %s opens with them): rekey needs at least one that does", from)
	}
	if dekID != e.vault.DekID {
		return usagef("the vault's current data key %s is not this machine's %s (a rekey happened elsewhere): kintfs init again, then rekey", dekID, e.vault.DekID)
	}
	if len(missing) > 0 && !o.dropMissing {
		return usagef("rekey would drop %d key(s) that open the vault today (%s): %s; give each of them too, or --drop-missing to drop them (a dropped key still opens the epochs sealed before the rotation)",
			len(missing), from, strings.Join(missing, ", "))
	}
	for _, m := range missing {
		fmt.Fprintf(cio.err, "kintfs rekey: dropping the key wrap %s (--drop-missing): it opens nothing sealed from now on\n", m)
	}
	pctx, endProgress := withProgress(ctx, cio)
	if err := e.rep.Control(pctx, "refresh"); err != nil && !errors.Is(err, replica.ErrGapOpen) {
		endProgress()
		return err
	}
	_, rep, err := e.rep.RekeyKeys(pctx, uniq, replica.PushOptions{OverSkipped: o.overSkipped, Confirmations: o.confirmations})
	endProgress()
	if rep != nil {
		printPushReport(ctx, cio, rep)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cio.out, "rekeyed: data key %s, wrapped under %d key(s); the new recovery code is in %s: copy it off this machine\n", e.vault.DekID, len(uniq),
		e.home.Path("RECOVERY-"+e.vault.Space16()+".txt"))
	return nil
}

// todaysWraps are the wraps that open the vault today, the data key they open and where they
// were read: the head epoch's header (kint's rule), or with KINT_OFFLINE=1 (or before the
// first epoch) the ones this machine last sealed or adopted.
func todaysWraps(ctx context.Context, cio *cmdIO, e *vaultEnv) (wraps []seal.Wrap, dekID, from string, err error) {
	dekID = e.vault.DekID
	from = "this machine's vault config (KINT_OFFLINE=1)"
	if !offlineIn(ctx, cio) {
		c := e.client()
		if c == nil {
			return nil, "", "", fmt.Errorf("%w: the head epoch's header cannot be read (KINT_OFFLINE=1 uses this machine's key wraps)", replica.ErrOffline)
		}
		h, seq, err := replica.HeadHeader(ctx, c, e.vault.Owner, e.vault.Space)
		if err != nil {
			return nil, "", "", err
		}
		if h != nil {
			wraps, from = h.Wraps, fmt.Sprintf("the header of epoch %d", seq)
			dekID = hex.EncodeToString(h.DekID[:])
		}
	}
	if wraps == nil {
		if wraps, err = e.vault.WrapList(); err != nil {
			return nil, "", "", err
		}
	}
	return wraps, dekID, from, nil
}

// matchWraps sets the keys against today's wraps: uniq are the keys, each once; opens says one
// of them opens the data key dekID; missing names the wraps no key given has.
func matchWraps(keys []replica.RekeyKey, wraps []seal.Wrap, dekID string) (uniq []replica.RekeyKey, opens bool, missing []string) {
	// one wrap per key: the same key given twice is wrapped once
	seen := map[[16]byte]bool{}
	uniq = keys[:0:0]
	for _, k := range keys {
		if tag := seal.KEKTag(k.KEK); !seen[tag] {
			seen[tag] = true
			uniq = append(uniq, k)
		}
	}
	for i := range wraps {
		w := &wraps[i]
		if !seen[w.Tag] {
			missing = append(missing, fmt.Sprintf("%s %x", kindName(w.Kind), w.Tag[:]))
			continue
		}
		for _, k := range uniq {
			if seal.KEKTag(k.KEK) == w.Tag {
				if dek, err := seal.UnwrapDEK(k.KEK, w); err == nil {
					id := seal.DEKID(dek)
					opens = opens || hex.EncodeToString(id[:]) == dekID
				}
			}
		}
	}
	return uniq, opens, missing
}

// forwardKey is a derived key on its way to the mount; never logged.
type forwardKey struct {
	Kind byte   `json:"kind"`
	KEK  string `json:"kek"`
}

func encodeKeys(keys []replica.RekeyKey) []forwardKey {
	out := make([]forwardKey, len(keys))
	for i, k := range keys {
		out[i] = forwardKey{Kind: k.Kind, KEK: hex.EncodeToString(k.KEK[:])}
	}
	return out
}

func decodeKeys(fk []forwardKey) ([]replica.RekeyKey, error) {
	out := make([]replica.RekeyKey, len(fk))
	for i, k := range fk {
		b, err := hex.DecodeString(k.KEK)
		if err != nil || len(b) != 32 {
			return nil, errors.New("a forwarded key is not 32 bytes of hex")
		}
		out[i] = replica.RekeyKey{KEK: [32]byte(b), Kind: k.Kind}
	}
	return out, nil
}

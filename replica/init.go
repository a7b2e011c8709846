package replica

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"kintfs/replica/homedir"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
	"kintfs/seal"
)

// maxHeaderWalk bounds how far back init looks for an epoch whose header parses.
const maxHeaderWalk = 32

// InitOptions connect a KINT_HOME to a vault. Exactly one of Passphrase, Signature or
// RecoveryCode is set.
type InitOptions struct {
	Home           homedir.Home
	Owner          common.Address
	Tenant         string
	RPC            string
	Contract       common.Address
	Client         Chain
	Passphrase     *string
	Signature      []byte
	SaltPassphrase *string // a signature wrap salted with a passphrase
	RecoveryCode   *string
	// KEK, when set, is the key Passphrase or Signature derives for this owner and space,
	// derived already by the caller: the slow scrypt run is not repeated.
	KEK *[32]byte
	// NewVault allows creating a vault when the chain has no epoch for this owner and tenant;
	// without it such a tenant is refused (ErrNoSuchVault), so that a typo never makes a vault.
	NewVault bool
}

// ErrNoSuchVault is init of a tenant with no epoch on the chain, without NewVault.
var ErrNoSuchVault = errors.New("no vault on the chain")

// InitResult says what init did. RecoveryCode is set only for a new vault; the caller shows
// it once and it is also written to RecoveryFile.
type InitResult struct {
	Vault        *homedir.VaultConfig
	Created      bool
	AdoptedAt    uint64 // the seq whose header gave the data key
	RecoveryCode string
	RecoveryFile string
}

// Init adopts the vault from the head epoch's wraps, or creates a new one when the chain has
// no epoch for this owner and tenant yet and NewVault allows it.
func Init(ctx context.Context, o InitOptions) (*InitResult, error) {
	if o.Client == nil {
		return nil, ErrOffline
	}
	if o.Tenant == "" {
		return nil, errors.New("a tenant is needed (--tenant or KINT_TENANT)")
	}
	space := seal.SpaceID(o.Tenant)
	v := &homedir.VaultConfig{Owner: o.Owner, Tenant: o.Tenant, Space: space, ChainID: o.Client.ChainID(), RPC: o.RPC, Contract: o.Contract}
	if old, err := o.Home.LoadVault(); err == nil && old.Owner == o.Owner && old.Space == space {
		v.Model = old.Model // a vault marked full (kintfs vault-model) stays so through a new init
	}
	kek, kind, err := initKEK(&o, space)
	if err != nil {
		return nil, err
	}
	head, err := o.Client.Head(ctx, o.Owner, space)
	if err != nil {
		return nil, fmt.Errorf("read head: %w", err)
	}
	if head.Seq == 0 && !o.NewVault {
		return nil, fmt.Errorf("%w: owner %s has no vault with tenant %q on chain %d (contract %s); check the tenant, or give --new-vault to create it",
			ErrNoSuchVault, o.Owner.Hex(), o.Tenant, v.ChainID, o.Contract.Hex())
	}
	res := &InitResult{Vault: v}
	var dek [32]byte
	var headBlob []byte // the epoch whose header gave the key, for the first pull's cache
	if head.Seq == 0 {
		dek, err = createVault(&o, res, kek, kind)
	} else {
		dek, headBlob, err = adoptVault(ctx, &o, res, head, kek)
	}
	if err != nil {
		return nil, err
	}
	id := seal.DEKID(dek)
	v.DekID = fmt.Sprintf("%x", id[:])
	if err := saveInit(&o, res, dek, kek, headBlob); err != nil {
		return nil, err
	}
	return res, nil
}

// initKEK is the key-encryption key of the secret init was given, and the kind of wrap it
// makes; zero (and no kind) for a recovery code, which opens the data key itself.
func initKEK(o *InitOptions, space common.Hash) (kek [32]byte, kind byte, err error) {
	switch {
	case o.Passphrase != nil && o.KEK != nil:
		kind = seal.KindPassphrase
	case o.Passphrase != nil:
		kind = seal.KindPassphrase
		kek, err = seal.KEKFromPassphrase(*o.Passphrase, o.Owner, space)
	case o.Signature != nil:
		kind = seal.KindSignature
		kek, err = seal.KEKFromSignature(o.Signature, o.Owner, space, o.SaltPassphrase)
	case o.RecoveryCode == nil:
		return kek, kind, errors.New("init needs a passphrase, a signature or a recovery code")
	}
	if err != nil {
		return kek, kind, err
	}
	if o.KEK != nil && o.RecoveryCode == nil {
		kek = *o.KEK
	}
	return kek, kind, nil
}

// createVault makes the data key of a vault the chain has no epoch of yet, wraps it under
// kek and writes its recovery code to the recovery file.
func createVault(o *InitOptions, res *InitResult, kek [32]byte, kind byte) (dek [32]byte, err error) {
	v := res.Vault
	if o.RecoveryCode != nil {
		return dek, errors.New("the vault has no epoch yet: a recovery code can only unlock an existing vault")
	}
	if _, err := rand.Read(dek[:]); err != nil {
		return dek, err
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return dek, err
	}
	v.SetWraps([]seal.Wrap{seal.WrapDEK(kek, kind, dek, nonce)})
	res.Created = true
	v.CreatedHere = true
	res.RecoveryCode = seal.EncodeRecoveryCode(dek)
	if res.RecoveryFile, err = o.Home.WriteRecoveryFile(v, dek); err != nil {
		return dek, err
	}
	return dek, nil
}

// adoptVault opens the data key of an existing vault from the header of its newest readable
// epoch, with kek or the recovery code; blob is that epoch.
func adoptVault(ctx context.Context, o *InitOptions, res *InitResult, head chain.Head, kek [32]byte) (dek [32]byte, blob []byte, err error) {
	v := res.Vault
	h, seq, blob, err := headHeader(ctx, o.Client, o.Owner, v.Space, head)
	if err != nil {
		return dek, nil, err
	}
	res.AdoptedAt = seq
	if o.RecoveryCode != nil {
		dek, err = seal.DecodeRecoveryCode(*o.RecoveryCode)
		if err != nil {
			return dek, nil, err
		}
		if seal.DEKID(dek) != h.DekID {
			return dek, nil, seal.ErrDekIDMismatch
		}
	} else if dek, err = seal.DEKFromHeader(h, kek); errors.Is(err, seal.ErrNoWrap) {
		what := "passphrase"
		if o.Signature != nil {
			what = "signature"
		}
		return dek, nil, wrongSecretError(fmt.Sprintf("the %s does not open this vault (no key wrap in epoch %d opens with it): check it, or connect with --recovery-code-stdin",
			what, seq))
	} else if err != nil {
		return dek, nil, fmt.Errorf("epoch %d: %w", seq, err)
	}
	v.SetWraps(h.Wraps)
	return dek, blob, nil
}

// saveInit writes what init made to KINT_HOME: the data key, the epoch the key came from
// (headBlob, nil when created), the key-encryption key (unless a recovery code opened the
// vault) and vault.json.
func saveInit(o *InitOptions, res *InitResult, dek, kek [32]byte, headBlob []byte) error {
	v := res.Vault
	if _, err := o.Home.Ensure(); err != nil {
		return err
	}
	if err := o.Home.SaveDEK(v.Space, dek); err != nil {
		return err
	}
	if headBlob != nil {
		// the first pull takes it from the cache (checked against the event's digest there)
		// rather than fetching it again
		if err := homedir.NewEpochCache(o.Home, v.Space16()).PutBlob(res.AdoptedAt, headBlob); err != nil {
			return fmt.Errorf("cache epoch %d: %w", res.AdoptedAt, err)
		}
	}
	if o.RecoveryCode == nil {
		if err := o.Home.SaveKEK(v.Space, kek); err != nil {
			return err
		}
	}
	return o.Home.SaveVault(v)
}

// headHeader returns the header of the newest epoch whose header parses, walking back through
// prevBlock past at most maxHeaderWalk epochs that do not.
func headHeader(ctx context.Context, c Chain, owner common.Address, space common.Hash, head chain.Head) (*seal.Header, uint64, []byte, error) {
	block, seq := head.Block, head.Seq
	for i := 0; i < maxHeaderWalk && seq >= 1; i++ {
		ev, err := c.EpochAt(ctx, owner, space, block, seq)
		if err != nil {
			return nil, 0, nil, err
		}
		blobs, err := c.FetchBlobs(ctx, []*chain.EpochEvent{ev})
		if err != nil {
			return nil, 0, nil, err
		}
		if h, _, err := seal.ParseHeader(blobs[0]); err == nil {
			return h, seq, blobs[0], nil
		}
		if ev.PrevBlock == 0 {
			break
		}
		block, seq = ev.PrevBlock, seq-1
	}
	return nil, 0, nil, fmt.Errorf("no epoch header that parses within %d epochs of the head", maxHeaderWalk)
}

// ErrWrongSecret: the passphrase or signature given to init unwraps no data key of the vault.
var ErrWrongSecret = errors.New("wrong passphrase or signature")

// wrongSecretError says which secret and what to do; it matches ErrWrongSecret.
type wrongSecretError string

func (e wrongSecretError) Error() string        { return string(e) }
func (e wrongSecretError) Is(target error) bool { return target == ErrWrongSecret }

// RekeyKey is one key the new data key is wrapped under at a rekey.
type RekeyKey struct {
	KEK  [32]byte
	Kind byte
}

// HeadHeader is the header of the head epoch, or of the newest one within maxHeaderWalk
// before it whose header parses; nil with seq 0 on a vault with no epoch yet.
func HeadHeader(ctx context.Context, c Chain, owner common.Address, space common.Hash) (*seal.Header, uint64, error) {
	head, err := c.Head(ctx, owner, space)
	if err != nil || head.Seq == 0 {
		return nil, 0, err
	}
	h, seq, _, err := headHeader(ctx, c, owner, space, head)
	return h, seq, err
}

// Rekey rotates the data key: a new DEK wrapped under kek, one snapshot epoch sealed under it,
// and a new recovery code, which is returned and written beside the old one.
// opt.OverSkipped and opt.Confirmations carry over to its push.
func (r *Replica) Rekey(ctx context.Context, kek [32]byte, kind byte, opt PushOptions) (string, *PushReport, error) {
	return r.RekeyKeys(ctx, []RekeyKey{{KEK: kek, Kind: kind}}, opt)
}

// RekeyKeys is Rekey with the new data key wrapped under each of keys; the first is the one
// this machine keeps as its own.
func (r *Replica) RekeyKeys(ctx context.Context, keys []RekeyKey, opt PushOptions) (string, *PushReport, error) {
	if len(keys) == 0 {
		return "", nil, errors.New("rekey needs at least one key to wrap the new data key under")
	}
	if err := r.refuseChange(); err != nil {
		return "", nil, err
	}
	var dek [32]byte
	if _, err := rand.Read(dek[:]); err != nil {
		return "", nil, err
	}
	wraps := make([]seal.Wrap, 0, len(keys))
	for _, k := range keys {
		var nonce [12]byte
		if _, err := rand.Read(nonce[:]); err != nil {
			return "", nil, err
		}
		wraps = append(wraps, seal.WrapDEK(k.KEK, k.Kind, dek, nonce))
	}
	kek := keys[0].KEK
	// held from the swap until the new key is saved: in a mount, no flush may seal under the
	// new key before the snapshot anchors it, or under a key a failed rekey drops
	r.pushMu.Lock()
	defer r.pushMu.Unlock()
	oldDEK, oldWraps, oldID := r.opt.DEK, append([]string{}, r.vault.Wraps...), r.vault.DekID
	r.opt.DEK = dek
	r.vault.SetWraps(wraps)
	id := seal.DEKID(dek)
	r.vault.DekID = fmt.Sprintf("%x", id[:])
	rep, err := r.pushLocked(ctx, PushOptions{Snapshot: true, OverSkipped: opt.OverSkipped, Confirmations: opt.Confirmations})
	if err != nil {
		r.opt.DEK, r.vault.Wraps, r.vault.DekID = oldDEK, oldWraps, oldID
		return "", rep, err
	}
	code := seal.EncodeRecoveryCode(dek)
	home := r.opt.Home
	if _, err := home.WriteRecoveryFile(r.vault, dek); err != nil {
		return code, rep, err
	}
	if err := home.SaveDEK(r.vault.Space, dek); err != nil {
		return code, rep, err
	}
	if err := home.SaveKEK(r.vault.Space, kek); err != nil {
		return code, rep, err
	}
	return code, rep, home.SaveVault(r.vault)
}

package replica

import (
	"kintfs/chain"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// Kind is the cause of a refusal, the one classification of errors the mount's errno table,
// the CLI's exit codes and the ctl writer's exit code (the errno read back) all read.
type Kind int

// The causes, in the order they are asked for: the first that matches an error wins.
const (
	KindUnknown           Kind = iota // a fault kintfs did not foresee
	KindNotFound                      // no such row or file
	KindExists                        // the name is taken
	KindNotEmpty                      // a directory that still holds rows
	KindReadOnly                      // a read-only replica or mount
	KindNotPermitted                  // a change the tier's rules refuse
	KindInvalid                       // a name or value that is not valid
	KindStagingFull                   // the staged change set is full
	KindTooBig                        // a file or value over its limit
	KindCrossTier                     // a rename between tiers
	KindLyingRPC                      // an RPC served what the chain does not hold
	KindOffline                       // the RPC cannot be reached
	KindGapOpen                       // a pull stopped at an epoch this machine cannot apply
	KindMoved                         // the chain moved (a lost race for the next seq) or forked
	KindKeyMissing                    // no data key cached
	KindKeyExpired                    // the cached data key expired
	KindKeyRejected                   // the session key is unfunded or not authorized
	KindReverted                      // a push's transaction reverted
	KindGasCap                        // the gas price is over the cap
	KindInUse                         // KINT_HOME is held by another process
	KindNothingToPush                 // the store matches the last anchored epoch
	KindNoVault                       // no vault configured, or none on the chain
	KindBadSecret                     // a passphrase, signature or recovery code that does not open the vault
	KindSnapshotTooLarge              // a snapshot over the epoch size
	KindRowTooLarge                   // one row that does not fit an epoch
	KindHistoryIncomplete             // history not on this machine
)

// kinds lists the errors each kind is.
var kinds = []struct {
	kind    Kind
	targets []error
}{
	{KindNotFound, []error{vault.ErrNotFound}},
	{KindExists, []error{vault.ErrExists}},
	{KindNotEmpty, []error{vault.ErrNotEmpty}},
	{KindReadOnly, []error{vault.ErrReadOnly}},
	{KindNotPermitted, []error{vault.ErrNotPermitted}},
	{KindInvalid, []error{vault.ErrInvalid}},
	{KindStagingFull, []error{vault.ErrStagingFull}},
	{KindTooBig, []error{vault.ErrFileTooBig, vault.ErrValueTooLarge}},
	{KindCrossTier, []error{vault.ErrCrossTier}},
	{KindLyingRPC, lyingRPC},
	{KindOffline, []error{ErrOffline, chain.ErrUnreachable}},
	{KindGapOpen, []error{ErrGapOpen}},
	{KindMoved, []error{ErrChainMoved, ErrFork, chain.ErrStaleHead}},
	{KindKeyMissing, []error{homedir.ErrKeyMissing}},
	{KindKeyExpired, []error{homedir.ErrKeyExpired}},
	{KindKeyRejected, []error{ErrNotAuthorized, chain.ErrNotAuthorized, chain.ErrAuthorizationExpired, chain.ErrInsufficientFunds}},
	{KindReverted, []error{ErrReverted, chain.ErrTxFailed, chain.ErrWouldRevert}},
	{KindGasCap, []error{ErrGasPriceCap}},
	{KindInUse, []error{vault.ErrInUse}},
	{KindNothingToPush, []error{ErrNothingToPush}},
	{KindNoVault, []error{homedir.ErrNoVault, ErrNoSuchVault}},
	{KindBadSecret, []error{seal.ErrEmptyPassphrase, seal.ErrRecoveryChecksum, seal.ErrSignatureOwner, seal.ErrDekIDMismatch, ErrWrongSecret}},
	{KindSnapshotTooLarge, []error{seal.ErrSnapshotTooLarge}},
	{KindHistoryIncomplete, []error{vault.ErrHistoryIncomplete}},
}

// KindOf is the cause of err: KindUnknown for nil and for a fault kintfs did not foresee.
// The cause is the outermost error that has a kind (fmt.Errorf("%w: ...: %w", ErrChainMoved,
// chain.ErrTxFailed) is a lost race, not a revert), so a wrapped detail never overrides the
// refusal that names it.
func KindOf(err error) Kind {
	if err == nil {
		return KindUnknown
	}
	if _, ok := err.(*seal.RowTooLargeError); ok {
		return KindRowTooLarge
	}
	for _, k := range kinds {
		for _, t := range k.targets {
			if err == t {
				return k.kind
			}
			if x, ok := err.(interface{ Is(error) bool }); ok && x.Is(t) {
				return k.kind
			}
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return KindOf(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if k := KindOf(e); k != KindUnknown {
				return k
			}
		}
	}
	return KindUnknown
}

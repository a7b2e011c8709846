package replica

import (
	"errors"
	"fmt"
	"testing"

	"kintfs/chain"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// TestKindOf names the cause of each refusal, and the outermost cause of an error that wraps
// two: a lost race wraps the revert it caused, a primary's lie wraps the second RPC's silence.
func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want Kind
	}{
		{nil, KindUnknown},
		{errors.New("badger: disk on fire"), KindUnknown},
		{fmt.Errorf("write: %w", vault.ErrNotFound), KindNotFound},
		{&chain.UnreachableError{Err: errors.New("refused")}, KindOffline},
		{fmt.Errorf("send: %w", &chain.FundsError{}), KindKeyRejected},
		{fmt.Errorf("%w: lost the race (%w)", ErrChainMoved, chain.ErrTxFailed), KindMoved},
		{fmt.Errorf("%w: epoch 4: %w", ErrReverted, chain.ErrTxFailed), KindReverted},
		{fmt.Errorf("%w; from the second RPC: %w", chain.ErrDigestMismatch, &chain.UnreachableError{}), KindLyingRPC},
		{fmt.Errorf("%w; then: %w", ErrOffline, chain.ErrDigestMismatch), KindOffline},
		{errors.Join(errors.New("x"), homedir.ErrKeyExpired), KindKeyExpired},
		{fmt.Errorf("seal: %w", &seal.RowTooLargeError{}), KindRowTooLarge},
		{chain.ErrStaleHead, KindMoved},
	} {
		if got := KindOf(c.err); got != c.want {
			t.Errorf("KindOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

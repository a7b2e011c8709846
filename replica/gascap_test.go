package replica

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/core/types"

	"kintfs/chain"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// A push priced above Options.MaxGasPrice on a real dev chain is refused before anything is
// sent: the message names the price, the cap and how to raise it; the chain's head does not
// move, the push journal is empty and the rows stay staged, and go out once the cap is lifted.
func TestGasPriceOverCapRefused(t *testing.T) {
	e := newDevChainEnv(t)
	r := e.machine()
	pushOf(t, r, map[string]string{"first": "one line"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := e.conn()
	before, err := c.Head(ctx, r.vault.Owner, r.vault.Space)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := r.Write(vault.Key{Tier: seal.TierState, Key: k}, []byte("row "+k), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	r.opt.MaxGasPrice = big.NewInt(1) // 1 wei per gas: below any price the dev chain quotes
	_, err = r.Push(ctx, PushOptions{})
	if !errors.Is(err, ErrGasPriceCap) {
		t.Fatalf("push over the cap: %v, want ErrGasPriceCap", err)
	}
	for _, want := range []string{"the chain's gas price is ", "the cap 0.000000001 gwei", "nothing was sent", "raise the cap (KINT_MAX_GAS_PRICE_GWEI"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}
	after, err := c.Head(ctx, r.vault.Owner, r.vault.Space)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("head moved: %+v, was %+v", after, before)
	}
	if p, err := r.PendingPushes(); err != nil || len(p) != 0 {
		t.Errorf("push journal after a refused push: %d entries (%v)", len(p), err)
	}
	st, err := r.Status()
	if err != nil {
		t.Fatal(err)
	}
	if st.StagedRows != 2 {
		t.Errorf("staged rows after the refusal: %d, want 2", st.StagedRows)
	}
	r.opt.MaxGasPrice = nil
	rep, err := r.Push(ctx, PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Epochs) != 1 || rep.Epochs[0].Rows != 2 || rep.Epochs[0].Seq != before.Seq+1 {
		t.Errorf("push after the cap was lifted: %+v", rep.Epochs)
	}
}

// QuotedPrice is the base fee plus the tip of a transaction priced with a fee cap of twice the
// base fee plus the tip; FormatGwei writes what the refusal names.
func TestQuotedPrice(t *testing.T) {
	tx := types.NewTx(&types.DynamicFeeTx{GasTipCap: big.NewInt(1_000_000), GasFeeCap: big.NewInt(2*5_000_000 + 1_000_000)})
	if got := chain.QuotedPrice(tx); got.Cmp(big.NewInt(6_000_000)) != 0 {
		t.Errorf("QuotedPrice: %v, want 6000000", got)
	}
	if got := chain.FormatGwei(big.NewInt(12_000_000)); got != "0.012" {
		t.Errorf("FormatGwei: %q", got)
	}
	if got := chain.FormatGwei(big.NewInt(3_000_000_000)); got != "3" {
		t.Errorf("FormatGwei: %q", got)
	}
}

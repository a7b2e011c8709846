package replica

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"kintfs/chain"
	"kintfs/replica/store"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// Bucket policies: how a push chooses the bucket of its epochs. The bucket of a space never
// goes down (kint's ratchet), so the policy decides how often it goes up.
const (
	// PolicyLow splits a change set into epochs of the vault's current bucket, raising it only
	// for a row that cannot fit it alone, and only as far as that row needs.
	PolicyLow = "low"
	// PolicyKint is kint's own: the smallest bucket that holds up to 90 KB of the change set.
	PolicyKint = "kint"
)

// BucketPolicy is the bucket policy of pushes from this machine.
func (r *Replica) BucketPolicy() string {
	r.vaultMu.Lock()
	defer r.vaultMu.Unlock()
	if r.vault.BucketPolicy == PolicyKint {
		return PolicyKint
	}
	return PolicyLow
}

// SetBucketPolicy records the bucket policy in vault.json; the next push follows it.
func (r *Replica) SetBucketPolicy(policy string) error {
	if policy != PolicyLow && policy != PolicyKint {
		return fmt.Errorf("%w: bucket policy %q: one of %s, %s", vault.ErrInvalid, policy, PolicyLow, PolicyKint)
	}
	r.pushMu.Lock() // vault.json is written by pulls too, under pushMu
	defer r.pushMu.Unlock()
	r.vaultMu.Lock()
	defer r.vaultMu.Unlock()
	old := r.vault.BucketPolicy
	r.vault.BucketPolicy = policy
	if err := r.opt.Home.SaveVault(r.vault); err != nil {
		r.vault.BucketPolicy = old
		return err
	}
	return nil
}

// cutBucket is the bucket a push cuts its change set for, and the headroom its chunks leave for
// the rest of the plaintext: under PolicyLow the vault's current bucket (the smallest for a
// vault that has none yet), under PolicyKint 0 (the largest epoch).
func (r *Replica) cutBucket() (bucket, headroom int, err error) {
	if r.BucketPolicy() == PolicyKint {
		return 0, 0, nil
	}
	b, err := r.Bucket()
	return max(b, seal.Buckets[0]), seal.PlaintextHeadroom(r.vault.Tenant), err
}

// BucketRaise is an epoch that raised the vault's bucket, and why.
type BucketRaise struct {
	Seq  uint64 `json:"seq"`
	From int    `json:"from"`
	To   int    `json:"to"`
	Why  string `json:"why"`
}

// raiseReason says why an epoch's bucket is above the one before it.
func (r *Replica) raiseReason(se sealedEpoch, policy string) string {
	switch {
	case se.p.Snapshot:
		return "a snapshot carries the whole state in one epoch"
	case se.raisedBy != "":
		return fmt.Sprintf("row %s does not fit the smaller bucket alone", se.raisedBy)
	case policy == PolicyKint:
		return "bucket policy kint: the smallest bucket that holds the epoch"
	default:
		return "the epoch's own fields did not fit the smaller bucket"
	}
}

// noteRaise logs and reports an epoch whose bucket is above the vault's: never silent.
func (r *Replica) noteRaise(rep *PushReport, se sealedEpoch, prevBucket int, policy string) {
	if se.sealed.Bucket <= prevBucket || (prevBucket == 0 && se.sealed.Bucket == seal.Buckets[0]) {
		return
	}
	why := r.raiseReason(se, policy)
	r.warnf("push: epoch %d raises the vault's bucket from %d to %d for good (%s)", se.p.Seq, prevBucket, se.sealed.Bucket, why)
	rep.Raised = append(rep.Raised, BucketRaise{Seq: se.p.Seq, From: prevBucket, To: se.sealed.Bucket, Why: why})
}

// PlannedEpoch is one epoch a dry run would anchor, with what it would cost.
type PlannedEpoch struct {
	Seq           uint64 `json:"seq"`
	Bucket        int    `json:"bucket"`
	Rows          int    `json:"rows"`
	Deleted       int    `json:"deleted"`
	CalldataBytes int    `json:"calldata_bytes"`
	// Gas is the EIP-7623 calldata floor, what the chain charges a push.
	Gas      uint64 `json:"gas"`
	CostWei  string `json:"cost_wei,omitempty"` // Gas at the current gas price, plus the L1 fee
	CostETH  string `json:"cost_eth,omitempty"`
	L1FeeWei string `json:"l1_fee_wei,omitempty"`
	L1FeeETH string `json:"l1_fee_eth,omitempty"`
}

// feeQuoter is a chain that quotes prices (an RPC client; not the in-memory chain).
type feeQuoter interface {
	FeeQuote(ctx context.Context, calldatas [][]byte) (*chain.FeeQuote, error)
}

// planDryRun seals each chunk as the push would (with its own nonce, so sizes are exact and the
// floor within a few gas) and prices it at the chain's current gas price, where there is a
// chain; without one the report says why there is no price.
func (r *Replica) planDryRun(ctx context.Context, rep *PushReport, chunks []seal.Chunk, snapshot bool) error {
	head, err := r.MirrorHead()
	if err != nil {
		return err
	}
	prevBucket, err := r.Bucket()
	if err != nil {
		return err
	}
	var calldatas [][]byte
	var prior []store.SealedChanges
	roots := r.store.NewRootView()
	for _, ch := range chunks {
		se := r.sealChunk(roots, ch, prior, head, prevBucket, snapshot)
		if se.err != nil {
			return se.err
		}
		prior = append(prior, se.changes)
		r.noteRaise(rep, se, prevBucket, rep.Policy)
		data := chain.EncodePushCalldata(r.vault.Owner, r.vault.Space, head.Digest, se.sealed.Blob)
		calldatas = append(calldatas, data)
		rep.Plan = append(rep.Plan, PlannedEpoch{Seq: se.p.Seq, Bucket: se.sealed.Bucket, Rows: len(ch.Rows), Deleted: len(ch.Deleted),
			CalldataBytes: len(data), Gas: chain.CalldataFloor(data)})
		head = vault.Head{Seq: se.p.Seq, Digest: se.sealed.Digest}
		prevBucket = max(prevBucket, se.sealed.Bucket)
	}
	for _, pe := range rep.Plan {
		rep.Gas += pe.Gas
	}
	c := r.Client()
	q, ok := c.(feeQuoter)
	if c == nil || !ok {
		rep.PriceNote = "no gas price: not connected to a chain that quotes one"
		return nil
	}
	quote, err := q.FeeQuote(ctx, calldatas)
	if err != nil {
		rep.PriceNote = "no gas price: " + err.Error()
		return nil
	}
	rep.GasPrice, rep.L1Note = quote.GasPrice.String(), quote.L1Note
	total, l1 := new(big.Int), new(big.Int)
	for i := range rep.Plan {
		pe := &rep.Plan[i]
		cost := new(big.Int).Mul(new(big.Int).SetUint64(pe.Gas), quote.GasPrice)
		if quote.L1Fees != nil {
			cost.Add(cost, quote.L1Fees[i])
			l1.Add(l1, quote.L1Fees[i])
			pe.L1FeeWei, pe.L1FeeETH = quote.L1Fees[i].String(), chain.FormatETH(quote.L1Fees[i])
		}
		pe.CostWei, pe.CostETH = cost.String(), chain.FormatETH(cost)
		total.Add(total, cost)
	}
	rep.setTotals(total, l1, quote.L1Fees != nil)
	return nil
}

// setTotals fills in the report's totals in wei and ETH.
func (rep *PushReport) setTotals(cost, l1 *big.Int, hasL1 bool) {
	rep.CostWei, rep.CostETH = cost.String(), chain.FormatETH(cost)
	if hasL1 {
		rep.L1FeeWei, rep.L1FeeETH = l1.String(), chain.FormatETH(l1)
	}
}

// sumReceipts fills in the totals of a push from its epochs' receipts.
func (rep *PushReport) sumReceipts() {
	cost, l1 := new(big.Int), new(big.Int)
	hasL1 := false
	rep.Gas = 0
	for _, e := range rep.Epochs {
		rep.Gas += e.GasUsed
		if c, ok := new(big.Int).SetString(e.Cost, 10); ok {
			cost.Add(cost, c)
		}
		if e.L1Fee != "" {
			if f, ok := new(big.Int).SetString(e.L1Fee, 10); ok {
				l1.Add(l1, f)
				hasL1 = true
			}
		}
	}
	rep.setTotals(cost, l1, hasL1)
}

// ErrPushRunning is NextFlushCost's answer while a push or pull runs.
var ErrPushRunning = errors.New("a push or pull is running")

// NextFlushCost is a dry run of the next flush, or ErrPushRunning at once while a push or pull
// runs (status never waits for one).
func (r *Replica) NextFlushCost(ctx context.Context) (*PushReport, error) {
	if !r.pushMu.TryLock() {
		return nil, ErrPushRunning
	}
	defer r.pushMu.Unlock()
	return r.pushLocked(ctx, PushOptions{DryRun: true})
}

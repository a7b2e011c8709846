// Package chaintest is the conformance suite of the chain the sync engine asks of
// (replica.Chain), method by method: heads, Epoch events by block and seq, discovery, the
// calldata of a push, block times, a push prepared, sent and waited for, nonces, gas and
// fees, reverts on a stale head, transaction status and request counts. The same suite runs
// against replica/memchain and against the real dev chain (chain/devchain), so that the
// fake the engine's tests use cannot drift from the truth.
//
// It is imported by tests only; nothing of it is linked into kintfs.
package chaintest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"errors"
	"math/big"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/replica"
)

// Env is one chain the suite runs on.
type Env struct {
	// Conn opens a new connection to the chain, closed when the test ends.
	Conn func(t *testing.T) replica.Chain
	// Contract is the EpochAnchor the pushes go to.
	Contract common.Address
	// ChainID is the id the chain runs under.
	ChainID uint64
	// Owner owns the vaults of the suite and pays for its own pushes.
	Owner *ecdsa.PrivateKey
	// Authorize returns a new key that may push for Owner, able to pay for its pushes.
	Authorize func(t *testing.T) *ecdsa.PrivateKey
	// AuthorizeUnfunded returns a new key that may push for Owner and holds nothing to pay with.
	AuthorizeUnfunded func(t *testing.T) *ecdsa.PrivateKey
}

// Run runs every test of the suite on the chain newEnv starts (once, for all of them: each
// test writes to a space of its own).
func Run(t *testing.T, newEnv func(t *testing.T) *Env) {
	e := newEnv(t)
	tests := []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"ChainID", testChainID},
		{"HeadOfAnEmptySpace", testHeadEmpty},
		{"PushMovesTheHead", testPushMovesHead},
		{"EpochAt", testEpochAt},
		{"Discovery", testDiscovery},
		{"FetchBlobs", testFetchBlobs},
		{"FetchBlobsRefusals", testFetchBlobsRefusals},
		{"BlockTimes", testBlockTimes},
		{"PrepareRefusesAPushThatWouldRevert", testPrepareRefusals},
		{"Nonces", testNonces},
		{"GasAndFees", testGasAndFees},
		{"SendIsIdempotent", testSendIdempotent},
		{"SendOfAUsedNonce", testSendUsedNonce},
		{"SendFromAKeyWithoutFunds", testSendUnfunded},
		{"RevertOnAStaleHeadInTheBlock", testRevertInBlock},
		{"PushBehindANonceGap", testNonceGap},
		{"PrepareNextPushSignsAhead", testPrepareNext},
		{"WaitPushConfirmations", testWaitConfirmations},
		{"WaitPushForAnotherSpace", testWaitMismatch},
		{"WaitPushOfATransactionNeverSent", testWaitNeverSent},
		{"TxStatus", testTxStatus},
		{"Stats", testStats},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			tc.fn(t, &suite{Env: e, ctx: ctx, c: e.Conn(t), owner: crypto.PubkeyToAddress(e.Owner.PublicKey), space: newSpace(t)})
		})
	}
}

// suite is one test's connection and space.
type suite struct {
	*Env
	ctx   context.Context
	c     replica.Chain
	owner common.Address
	space common.Hash
}

func newSpace(t *testing.T) common.Hash {
	t.Helper()
	var h common.Hash
	if _, err := rand.Read(h[:]); err != nil {
		t.Fatal(err)
	}
	return h
}

// ciphertext is n random bytes, as a sealed epoch is.
func ciphertext(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func (s *suite) prepare(t *testing.T, key *ecdsa.PrivateKey, prev common.Hash, ct []byte) *chain.PreparedPush {
	t.Helper()
	p, err := s.c.PreparePush(s.ctx, key, s.owner, s.space, prev, ct)
	if err != nil {
		t.Fatalf("prepare push: %v", err)
	}
	return p
}

func (s *suite) send(t *testing.T, p *chain.PreparedPush) {
	t.Helper()
	if err := s.c.Send(s.ctx, p); err != nil {
		t.Fatalf("send: %v", err)
	}
}

func (s *suite) wait(t *testing.T, p *chain.PreparedPush) *chain.PushReceipt {
	t.Helper()
	rc, err := s.c.WaitPush(s.ctx, p, s.owner, s.space, 1)
	if err != nil {
		t.Fatalf("wait push: %v", err)
	}
	return rc
}

// push prepares, sends and waits for one push from key.
func (s *suite) push(t *testing.T, key *ecdsa.PrivateKey, prev common.Hash, ct []byte) (*chain.PreparedPush, *chain.PushReceipt) {
	t.Helper()
	p := s.prepare(t, key, prev, ct)
	s.send(t, p)
	return p, s.wait(t, p)
}

func (s *suite) head(t *testing.T) chain.Head {
	t.Helper()
	h, err := s.c.Head(s.ctx, s.owner, s.space)
	if err != nil {
		t.Fatalf("head: %v", err)
	}
	return h
}

func testChainID(t *testing.T, s *suite) {
	if got := s.c.ChainID(); got != s.Env.ChainID {
		t.Fatalf("ChainID() = %d, want %d", got, s.Env.ChainID)
	}
}

func testHeadEmpty(t *testing.T, s *suite) {
	if h := s.head(t); h != (chain.Head{}) {
		t.Fatalf("head of a space nobody wrote to = %+v, want the zero head", h)
	}
}

// testPushMovesHead pushes two epochs, by the owner and by a session key, and checks the
// receipts, their events and the head after each.
func testPushMovesHead(t *testing.T, s *suite) {
	ct1, ct2 := ciphertext(t, 300), ciphertext(t, 500)
	p1, rc1 := s.push(t, s.Owner, common.Hash{}, ct1)
	want1 := chain.EpochEvent{Owner: s.owner, Space: s.space, Writer: s.owner, Seq: 1, Prev: common.Hash{},
		Digest: crypto.Keccak256Hash(ct1), PrevBlock: 0, Block: rc1.Block, TxHash: p1.Hash}
	checkReceipt(t, rc1, p1, &want1)
	if h := s.head(t); h != (chain.Head{Digest: want1.Digest, Seq: 1, Block: rc1.Block}) {
		t.Fatalf("head after the first push = %+v, want seq 1 at block %d with digest %s", h, rc1.Block, want1.Digest)
	}

	key := s.Authorize(t)
	p2, rc2 := s.push(t, key, want1.Digest, ct2)
	want2 := chain.EpochEvent{Owner: s.owner, Space: s.space, Writer: crypto.PubkeyToAddress(key.PublicKey), Seq: 2,
		Prev: want1.Digest, Digest: crypto.Keccak256Hash(ct2), PrevBlock: rc1.Block, Block: rc2.Block, TxHash: p2.Hash}
	checkReceipt(t, rc2, p2, &want2)
	if rc2.Block <= rc1.Block {
		t.Fatalf("second push landed in block %d, not after the first's %d", rc2.Block, rc1.Block)
	}
	if h := s.head(t); h != (chain.Head{Digest: want2.Digest, Seq: 2, Block: rc2.Block}) {
		t.Fatalf("head after the second push = %+v, want seq 2 at block %d", h, rc2.Block)
	}
}

func checkReceipt(t *testing.T, rc *chain.PushReceipt, p *chain.PreparedPush, want *chain.EpochEvent) {
	t.Helper()
	if rc.TxHash != p.Hash || rc.Seq != want.Seq || rc.Digest != want.Digest || rc.Block != want.Block || rc.Digest != p.Digest {
		t.Fatalf("receipt %+v, want tx %s, seq %d, digest %s", rc, p.Hash, want.Seq, want.Digest)
	}
	if rc.Event == nil || *rc.Event != *want {
		t.Fatalf("receipt's event = %+v, want %+v", rc.Event, want)
	}
}

// testEpochAt asks for events by exact block and seq, and for the ones that are not there.
func testEpochAt(t *testing.T, s *suite) {
	_, rc1 := s.push(t, s.Owner, common.Hash{}, ciphertext(t, 100))
	_, rc2 := s.push(t, s.Owner, rc1.Digest, ciphertext(t, 100))
	for _, rc := range []*chain.PushReceipt{rc1, rc2} {
		ev, err := s.c.EpochAt(s.ctx, s.owner, s.space, rc.Block, rc.Seq)
		if err != nil {
			t.Fatalf("EpochAt(block %d, seq %d): %v", rc.Block, rc.Seq, err)
		}
		if *ev != *rc.Event {
			t.Fatalf("EpochAt(block %d, seq %d) = %+v, want the receipt's %+v", rc.Block, rc.Seq, ev, rc.Event)
		}
	}
	absent := []struct {
		name        string
		owner       common.Address
		space       common.Hash
		block, seq  uint64
		wantNoEvent bool
	}{
		{"another seq in the block", s.owner, s.space, rc1.Block, 2, true},
		{"the seq in another block", s.owner, s.space, rc2.Block, 1, true},
		{"a block without events", s.owner, s.space, 0, 1, true},
		{"another space", s.owner, newSpace(t), rc1.Block, 1, true},
		{"another owner", common.Address{1}, s.space, rc1.Block, 1, true},
		// the node refuses a query beyond its head: not an answer that the event is not there
		{"a block not mined yet", s.owner, s.space, rc2.Block + 1_000_000, 3, false},
	}
	for _, a := range absent {
		ev, err := s.c.EpochAt(s.ctx, a.owner, a.space, a.block, a.seq)
		var ne *chain.NoEventError
		if !a.wantNoEvent {
			if err == nil || errors.Is(err, chain.ErrNoEvent) {
				t.Fatalf("EpochAt of %s = %+v, %v; want an error other than %v", a.name, ev, err, chain.ErrNoEvent)
			}
			continue
		}
		if !errors.Is(err, chain.ErrNoEvent) || !errors.As(err, &ne) || ne.Seq != a.seq || ne.Block != a.block {
			t.Fatalf("EpochAt of %s = %+v, %v; want a *NoEventError for seq %d at block %d", a.name, ev, err, a.seq, a.block)
		}
	}
}

// testDiscovery finds the events through an EventFinder, with and without the digest wanted.
func testDiscovery(t *testing.T, s *suite) {
	_, rc1 := s.push(t, s.Owner, common.Hash{}, ciphertext(t, 100))
	_, rc2 := s.push(t, s.Owner, rc1.Digest, ciphertext(t, 100))
	d := s.c.NewDiscovery(s.ctx, s.owner, s.space, rc1.Block)
	defer d.Close()
	for _, rc := range []*chain.PushReceipt{rc2, rc1} {
		for _, want := range []common.Hash{rc.Digest, {}} {
			ev, err := d.Next(s.ctx, rc.Block, rc.Seq, want)
			if err != nil {
				t.Fatalf("Next(block %d, seq %d): %v", rc.Block, rc.Seq, err)
			}
			if *ev != *rc.Event {
				t.Fatalf("Next(block %d, seq %d) = %+v, want %+v", rc.Block, rc.Seq, ev, rc.Event)
			}
		}
	}
	if ev, err := d.Next(s.ctx, rc1.Block, 7, common.Hash{}); !errors.Is(err, chain.ErrNoEvent) {
		t.Fatalf("Next of a seq that is not there = %+v, %v; want %v", ev, err, chain.ErrNoEvent)
	}
	if st := d.Stats(); st.Exact+st.FromRange < 5 {
		t.Fatalf("discovery stats %+v count fewer than the 5 events asked for", st)
	}
}

// testFetchBlobs reads the ciphertexts back from the push transactions, in the order asked.
func testFetchBlobs(t *testing.T, s *suite) {
	ct1, ct2 := ciphertext(t, 1000), ciphertext(t, 1)
	_, rc1 := s.push(t, s.Owner, common.Hash{}, ct1)
	_, rc2 := s.push(t, s.Owner, rc1.Digest, ct2)
	blobs, err := s.c.FetchBlobs(s.ctx, []*chain.EpochEvent{rc2.Event, rc1.Event, rc2.Event})
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs) != 3 || !bytes.Equal(blobs[0], ct2) || !bytes.Equal(blobs[1], ct1) || !bytes.Equal(blobs[2], ct2) {
		t.Fatalf("FetchBlobs returned %d blobs, not the ciphertexts pushed in the order asked", len(blobs))
	}
	if blobs, err := s.c.FetchBlobs(s.ctx, nil); err != nil || len(blobs) != 0 {
		t.Fatalf("FetchBlobs(nil) = %d blobs, %v; want none and no error", len(blobs), err)
	}
}

// testFetchBlobsRefusals asks for calldata an event does not match or the node does not have.
func testFetchBlobsRefusals(t *testing.T, s *suite) {
	_, rc := s.push(t, s.Owner, common.Hash{}, ciphertext(t, 200))
	edit := func(fn func(ev *chain.EpochEvent)) *chain.EpochEvent {
		ev := *rc.Event
		fn(&ev)
		return &ev
	}
	cases := []struct {
		name string
		ev   *chain.EpochEvent
		want error
	}{
		{"unknown transaction", edit(func(ev *chain.EpochEvent) { ev.TxHash = common.Hash{1} }), chain.ErrTxNotFound},
		{"another digest", edit(func(ev *chain.EpochEvent) { ev.Digest = common.Hash{2} }), chain.ErrDigestMismatch},
		{"another prev", edit(func(ev *chain.EpochEvent) { ev.Prev = common.Hash{3} }), chain.ErrCalldataMismatch},
		{"another space", edit(func(ev *chain.EpochEvent) { ev.Space = common.Hash{4} }), chain.ErrCalldataMismatch},
	}
	for _, tc := range cases {
		blobs, err := s.c.FetchBlobs(s.ctx, []*chain.EpochEvent{rc.Event, tc.ev})
		if !errors.Is(err, tc.want) || blobs != nil {
			t.Fatalf("FetchBlobs with %s = %d blobs, %v; want %v", tc.name, len(blobs), err, tc.want)
		}
	}
}

// testBlockTimes reads the times of blocks that exist and refuses one that does not.
func testBlockTimes(t *testing.T, s *suite) {
	_, rc1 := s.push(t, s.Owner, common.Hash{}, ciphertext(t, 10))
	_, rc2 := s.push(t, s.Owner, rc1.Digest, ciphertext(t, 10))
	times, err := s.c.BlockTimes(s.ctx, []uint64{0, rc1.Block, rc2.Block})
	if err != nil {
		t.Fatal(err)
	}
	if len(times) != 3 {
		t.Fatalf("BlockTimes of 3 blocks = %v", times)
	}
	if !(times[0] < times[rc1.Block] && times[rc1.Block] < times[rc2.Block]) {
		t.Fatalf("block times do not increase with the blocks: %v", times)
	}
	// A block's time is the wall clock, give or take the seconds a burst of blocks runs ahead.
	if now := time.Now(); time.Unix(int64(times[rc2.Block]), 0).Before(now.Add(-time.Hour)) || time.Unix(int64(times[rc2.Block]), 0).After(now.Add(time.Hour)) {
		t.Fatalf("block %d has time %v, far from now %v", rc2.Block, time.Unix(int64(times[rc2.Block]), 0), now)
	}
	if times, err := s.c.BlockTimes(s.ctx, nil); err != nil || len(times) != 0 {
		t.Fatalf("BlockTimes(nil) = %v, %v; want none and no error", times, err)
	}
	future := rc2.Block + 1_000_000
	if times, err := s.c.BlockTimes(s.ctx, []uint64{rc1.Block, future}); err == nil {
		t.Fatalf("BlockTimes of block %d, which does not exist yet = %v, want an error", future, times)
	}
}

// testPrepareRefusals prepares the pushes the contract would revert: the estimate refuses
// them with the contract's error, and nothing is sent.
func testPrepareRefusals(t *testing.T, s *suite) {
	_, rc := s.push(t, s.Owner, common.Hash{}, ciphertext(t, 10))
	stranger, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		key  *ecdsa.PrivateKey
		prev common.Hash
		ct   []byte
		want error
		args []any
	}{
		{"stale prev", s.Owner, common.Hash{}, ciphertext(t, 10), chain.ErrStaleHead, []any{[32]byte(rc.Digest), [32]byte{}}},
		{"unknown prev", s.Owner, common.Hash{9}, ciphertext(t, 10), chain.ErrStaleHead, []any{[32]byte(rc.Digest), [32]byte(common.Hash{9})}},
		{"empty ciphertext", s.Owner, rc.Digest, nil, chain.ErrEmptyCiphertext, nil},
		{"key without authorization", stranger, rc.Digest, ciphertext(t, 10), chain.ErrNotAuthorized, nil},
	}
	for _, tc := range cases {
		p, err := s.c.PreparePush(s.ctx, tc.key, s.owner, s.space, tc.prev, tc.ct)
		var rev *chain.RevertError
		if !errors.Is(err, chain.ErrWouldRevert) || !errors.Is(err, tc.want) || !errors.As(err, &rev) {
			t.Fatalf("PreparePush with %s = %v, %v; want %v and %v", tc.name, p, err, chain.ErrWouldRevert, tc.want)
		}
		if tc.args != nil && !reflect.DeepEqual(rev.Args, tc.args) {
			t.Fatalf("PreparePush with %s: revert %s has args %v, want %v", tc.name, rev.Name, rev.Args, tc.args)
		}
	}
	if h := s.head(t); h.Seq != 1 {
		t.Fatalf("head after refused pushes = %+v, want seq 1", h)
	}
}

// testNonces: a push is signed with the key's pending nonce, which each mined push uses up.
func testNonces(t *testing.T, s *suite) {
	key := s.Authorize(t)
	a := s.prepare(t, key, common.Hash{}, ciphertext(t, 10))
	again := s.prepare(t, key, common.Hash{}, ciphertext(t, 10))
	if again.Nonce != a.Nonce {
		t.Fatalf("two prepares with nothing sent got nonces %d and %d", a.Nonce, again.Nonce)
	}
	if a.Tx.Nonce() != a.Nonce {
		t.Fatalf("prepared nonce %d, signed transaction's %d", a.Nonce, a.Tx.Nonce())
	}
	s.send(t, a)
	rc := s.wait(t, a)
	b := s.prepare(t, key, rc.Digest, ciphertext(t, 10))
	if b.Nonce != a.Nonce+1 {
		t.Fatalf("nonce after one mined push = %d, want %d", b.Nonce, a.Nonce+1)
	}
	s.send(t, b)
	s.wait(t, b)
}

// testGasAndFees checks what a prepared push is signed with and what its receipt says it cost.
func testGasAndFees(t *testing.T, s *suite) {
	for _, n := range []int{1, 4000} {
		ct := ciphertext(t, n)
		p, rc := s.push(t, s.Owner, s.head(t).Digest, ct)
		tx := p.Tx
		if tx.Type() != types.DynamicFeeTxType || tx.ChainId().Uint64() != s.Env.ChainID || tx.To() == nil || *tx.To() != s.Contract {
			t.Fatalf("push of %d bytes signed as type %d on chain %v to %v; want a dynamic-fee transaction on chain %d to %s",
				n, tx.Type(), tx.ChainId(), tx.To(), s.Env.ChainID, s.Contract)
		}
		if !bytes.Equal(tx.Data(), chain.EncodePushCalldata(s.owner, s.space, rc.Event.Prev, ct)) || tx.Value().Sign() != 0 {
			t.Fatalf("push of %d bytes does not carry push(owner, space, prev, ct) without value", n)
		}
		floor := chain.CalldataFloor(tx.Data())
		// the limit is the estimate plus a margin; what the push used is at least the
		// calldata floor and at most the estimate
		if rc.GasUsed < floor || rc.GasUsed >= tx.Gas() || tx.Gas() > rc.GasUsed*12/10 {
			t.Fatalf("push of %d bytes: gas used %d, limit %d, calldata floor %d; want floor <= used < limit <= used*1.2",
				n, rc.GasUsed, tx.Gas(), floor)
		}
		if tip, feeCap := tx.GasTipCap(), tx.GasFeeCap(); tip.Sign() <= 0 || feeCap.Cmp(tip) <= 0 {
			t.Fatalf("push priced with tip %v and fee cap %v; want a tip and a fee cap above it", tip, feeCap)
		}
		if q := chain.QuotedPrice(tx); p.GasPrice == nil || p.GasPrice.Cmp(q) != 0 {
			t.Fatalf("prepared price %v, quoted price of the transaction %v", p.GasPrice, q)
		}
		price := rc.EffectiveGasPrice
		if price == nil || price.Cmp(tx.GasTipCap()) < 0 || price.Cmp(tx.GasFeeCap()) > 0 || price.Cmp(p.GasPrice) > 0 {
			t.Fatalf("effective gas price %v; want between the tip %v and the quoted price %v", price, tx.GasTipCap(), p.GasPrice)
		}
		if cost := new(big.Int).Mul(new(big.Int).SetUint64(rc.GasUsed), price); rc.L1Fee != nil || rc.Cost == nil || rc.Cost.Cmp(cost) != 0 {
			t.Fatalf("cost %v, L1 fee %v; want gas used * price = %v and no L1 fee", rc.Cost, rc.L1Fee, cost)
		}
	}
}

// testSendIdempotent sends one push again while it is known and after it is mined.
func testSendIdempotent(t *testing.T, s *suite) {
	p := s.prepare(t, s.Owner, common.Hash{}, ciphertext(t, 10))
	s.send(t, p)
	s.send(t, p)
	rc := s.wait(t, p)
	s.send(t, p)
	if h := s.head(t); h.Seq != 1 || h.Digest != rc.Digest {
		t.Fatalf("head after one push sent three times = %+v, want seq 1", h)
	}
	if again := s.wait(t, p); again.Block != rc.Block || again.Seq != 1 {
		t.Fatalf("second wait of a mined push = %+v, want block %d seq 1", again, rc.Block)
	}
}

// testSendUsedNonce sends a transaction whose nonce another one already used: refused.
func testSendUsedNonce(t *testing.T, s *suite) {
	key := s.Authorize(t)
	a := s.prepare(t, key, common.Hash{}, ciphertext(t, 10))
	b := s.prepare(t, key, common.Hash{}, ciphertext(t, 10))
	s.send(t, a)
	s.wait(t, a)
	if err := s.c.Send(s.ctx, b); err == nil {
		t.Fatalf("send of a push with nonce %d, which another push used, succeeded", b.Nonce)
	}
	if found, _, err := s.c.TxStatus(s.ctx, b.Hash); err != nil || found {
		t.Fatalf("TxStatus of the refused push = %v, %v; want not found", found, err)
	}
}

// testSendUnfunded sends a push from a key that cannot pay for it: the estimate passes
// (it prices nothing), the node refuses the transaction and names what it would cost.
func testSendUnfunded(t *testing.T, s *suite) {
	key := s.AuthorizeUnfunded(t)
	p := s.prepare(t, key, common.Hash{}, ciphertext(t, 10))
	err := s.c.Send(s.ctx, p)
	var fe *chain.FundsError
	if !errors.Is(err, chain.ErrInsufficientFunds) || !errors.As(err, &fe) {
		t.Fatalf("send from a key without funds: %v, want %v", err, chain.ErrInsufficientFunds)
	}
	if fe.Address != crypto.PubkeyToAddress(key.PublicKey) || fe.Have.Sign() != 0 || fe.Want.Cmp(p.Tx.Cost()) != 0 {
		t.Fatalf("funds error names %s holding %v for %v; want the key holding 0 for the transaction's most %v",
			fe.Address, fe.Have, fe.Want, p.Tx.Cost())
	}
	if found, _, err := s.c.TxStatus(s.ctx, p.Hash); err != nil || found {
		t.Fatalf("TxStatus of the refused push = %v, %v; want not found", found, err)
	}
}

// testRevertInBlock lands a push that was valid when prepared but stale once mined: two
// writers prepare on the same head, the second one mined reverts and uses its nonce.
func testRevertInBlock(t *testing.T, s *suite) {
	k1, k2 := s.Authorize(t), s.Authorize(t)
	a := s.prepare(t, k1, common.Hash{}, ciphertext(t, 10))
	b := s.prepare(t, k2, common.Hash{}, ciphertext(t, 10))
	s.send(t, a)
	rc := s.wait(t, a)
	s.send(t, b)
	_, err := s.c.WaitPush(s.ctx, b, s.owner, s.space, 1)
	if !errors.Is(err, chain.ErrTxFailed) {
		t.Fatalf("wait for a push mined on a stale head: %v, want %v", err, chain.ErrTxFailed)
	}
	// a receipt has a status, not the reason: only an estimate or a call names the revert
	var rev *chain.RevertError
	if errors.As(err, &rev) || errors.Is(err, chain.ErrStaleHead) {
		t.Fatalf("wait for a reverted push = %v; a receipt does not say why it reverted", err)
	}
	found, block, err := s.c.TxStatus(s.ctx, b.Hash)
	if err != nil || !found || block <= rc.Block {
		t.Fatalf("TxStatus of the reverted push = %v, block %d, %v; want found in a block after %d", found, block, err, rc.Block)
	}
	if h := s.head(t); h.Seq != 1 || h.Digest != rc.Digest {
		t.Fatalf("head after a reverted push = %+v, want the first push's", h)
	}
	if next := s.prepare(t, k2, rc.Digest, ciphertext(t, 10)); next.Nonce != b.Nonce+1 {
		t.Fatalf("nonce after a reverted push = %d, want %d: a mined transaction uses its nonce even when it reverts", next.Nonce, b.Nonce+1)
	}
}

// testNonceGap sends a push signed with the nonce after the pending one, as a push signed
// behind another before that one lands is: it waits in the pool, known but not mined, and
// lands once the push before it is sent.
func testNonceGap(t *testing.T, s *suite) {
	key := s.Authorize(t)
	ct1, ct2 := ciphertext(t, 10), ciphertext(t, 10)
	a := s.prepare(t, key, common.Hash{}, ct1)
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(new(big.Int).SetUint64(s.Env.ChainID)), &types.DynamicFeeTx{
		ChainID: a.Tx.ChainId(), Nonce: a.Nonce + 1, GasTipCap: a.Tx.GasTipCap(), GasFeeCap: a.Tx.GasFeeCap(),
		Gas: a.Tx.Gas(), To: a.Tx.To(), Data: chain.EncodePushCalldata(s.owner, s.space, crypto.Keccak256Hash(ct1), ct2)})
	if err != nil {
		t.Fatal(err)
	}
	b := &chain.PreparedPush{Tx: tx, Hash: tx.Hash(), Digest: crypto.Keccak256Hash(ct2), Nonce: tx.Nonce(), GasPrice: a.GasPrice}
	s.send(t, b)
	if found, block, err := s.c.TxStatus(s.ctx, b.Hash); err != nil || !found || block != 0 {
		t.Fatalf("TxStatus of a push behind a nonce gap = %v, block %d, %v; want known and not mined", found, block, err)
	}
	if h := s.head(t); h.Seq != 0 {
		t.Fatalf("head with only a push behind a nonce gap sent = %+v, want none", h)
	}
	s.send(t, a)
	rcA, rcB := s.wait(t, a), s.wait(t, b)
	if rcA.Seq != 1 || rcB.Seq != 2 || rcB.Block < rcA.Block || rcB.Event.PrevBlock != rcA.Block {
		t.Fatalf("pushes landed as seq %d in block %d and seq %d in block %d (prev block %d); want 1 then 2 on it",
			rcA.Seq, rcA.Block, rcB.Seq, rcB.Block, rcB.Event.PrevBlock)
	}
}

// testPrepareNext signs a push on top of one not yet sent: it takes the next nonce and the
// same fees, and both land in order once sent, the second first.
func testPrepareNext(t *testing.T, s *suite) {
	np, ok := s.c.(replica.NextPreparer)
	if !ok {
		t.Fatalf("%T cannot sign a push ahead", s.c)
	}
	key := s.Authorize(t)
	ct1, ct2 := ciphertext(t, 10), ciphertext(t, 4000)
	a := s.prepare(t, key, common.Hash{}, ct1)
	b, err := np.PrepareNextPush(key, a, s.owner, s.space, crypto.Keccak256Hash(ct1), ct2)
	if err != nil {
		t.Fatalf("prepare next push: %v", err)
	}
	if b.Nonce != a.Nonce+1 || b.Tx.Nonce() != b.Nonce {
		t.Fatalf("next push signed with nonce %d (said %d), want %d", b.Tx.Nonce(), b.Nonce, a.Nonce+1)
	}
	if b.Tx.GasFeeCap().Cmp(a.Tx.GasFeeCap()) != 0 || b.Tx.GasTipCap().Cmp(a.Tx.GasTipCap()) != 0 || b.Tx.Gas() < a.Tx.Gas() {
		t.Fatalf("next push fees %v/%v gas %d, want the first's %v/%v and at least its gas %d",
			b.Tx.GasFeeCap(), b.Tx.GasTipCap(), b.Tx.Gas(), a.Tx.GasFeeCap(), a.Tx.GasTipCap(), a.Tx.Gas())
	}
	if b.Digest != crypto.Keccak256Hash(ct2) {
		t.Fatalf("next push digest %s, want the ciphertext's", b.Digest)
	}
	s.send(t, b)
	s.send(t, a)
	rcA, rcB := s.wait(t, a), s.wait(t, b)
	if rcA.Seq != 1 || rcB.Seq != 2 || rcB.Event.PrevBlock != rcA.Block {
		t.Fatalf("pushes landed as seq %d and %d (prev block %d, first in %d); want 1 then 2 on it", rcA.Seq, rcB.Seq, rcB.Event.PrevBlock, rcA.Block)
	}
}

// testWaitConfirmations waits for more than one confirmation.
func testWaitConfirmations(t *testing.T, s *suite) {
	p := s.prepare(t, s.Owner, common.Hash{}, ciphertext(t, 10))
	s.send(t, p)
	rc, err := s.c.WaitPush(s.ctx, p, s.owner, s.space, 3)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Seq != 1 {
		t.Fatalf("receipt %+v, want seq 1", rc)
	}
	// two blocks on top of it: a block time past the push's is readable
	times, err := s.c.BlockTimes(s.ctx, []uint64{rc.Block, rc.Block + 2})
	if err != nil || len(times) != 2 {
		t.Fatalf("block times of the push and its third confirmation: %v, %v", times, err)
	}
}

// testWaitMismatch waits for a push as if it had been sent for another space.
func testWaitMismatch(t *testing.T, s *suite) {
	p := s.prepare(t, s.Owner, common.Hash{}, ciphertext(t, 10))
	s.send(t, p)
	s.wait(t, p)
	if rc, err := s.c.WaitPush(s.ctx, p, s.owner, newSpace(t), 1); !errors.Is(err, chain.ErrEventMismatch) {
		t.Fatalf("wait for the push as another space's = %+v, %v; want %v", rc, err, chain.ErrEventMismatch)
	}
}

// testWaitNeverSent waits for a push nobody sent: the wait ends with the context.
func testWaitNeverSent(t *testing.T, s *suite) {
	p := s.prepare(t, s.Owner, common.Hash{}, ciphertext(t, 10))
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
	defer cancel()
	if rc, err := s.c.WaitPush(ctx, p, s.owner, s.space, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait for a push never sent = %+v, %v; want %v", rc, err, context.DeadlineExceeded)
	}
}

// testTxStatus follows a transaction from unknown to mined.
func testTxStatus(t *testing.T, s *suite) {
	p := s.prepare(t, s.Owner, common.Hash{}, ciphertext(t, 10))
	if found, block, err := s.c.TxStatus(s.ctx, p.Hash); err != nil || found || block != 0 {
		t.Fatalf("TxStatus of a push not sent = %v, %d, %v; want not found", found, block, err)
	}
	s.send(t, p)
	rc := s.wait(t, p)
	if found, block, err := s.c.TxStatus(s.ctx, p.Hash); err != nil || !found || block != rc.Block {
		t.Fatalf("TxStatus of a mined push = %v, %d, %v; want found in block %d", found, block, err, rc.Block)
	}
}

// statsStep is one call and the JSON-RPC methods the RPC client counts for it, each as many
// times as it is listed.
type statsStep struct {
	name    string
	do      func()
	methods []string
}

// testStats counts the requests of a connection by the JSON-RPC methods that serve them.
func testStats(t *testing.T, s *suite) {
	var p *chain.PreparedPush
	var rc *chain.PushReceipt
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	steps := []statsStep{
		{"Head", func() { s.head(t) }, []string{"eth_call"}},
		{"PreparePush", func() { p = s.prepare(t, s.Owner, common.Hash{}, ciphertext(t, 10)) },
			[]string{"eth_estimateGas", "eth_getBlockByNumber", "eth_maxPriorityFeePerGas", "eth_getTransactionCount"}},
		{"Send", func() { s.send(t, p) }, []string{"eth_sendRawTransaction"}},
		{"WaitPush", func() { rc = s.wait(t, p) }, []string{"eth_getTransactionReceipt", "eth_blockNumber"}},
		{"EpochAt", func() {
			_, err := s.c.EpochAt(s.ctx, s.owner, s.space, rc.Block, 1)
			must(err)
		}, []string{"eth_getLogs"}},
		{"FetchBlobs", func() {
			_, err := s.c.FetchBlobs(s.ctx, []*chain.EpochEvent{rc.Event, rc.Event})
			must(err)
		}, []string{"eth_getTransactionByHash", "eth_getTransactionByHash"}},
		{"BlockTimes", func() {
			_, err := s.c.BlockTimes(s.ctx, []uint64{0, rc.Block})
			must(err)
		}, []string{"eth_getBlockByNumber", "eth_getBlockByNumber"}},
		{"TxStatus", func() {
			_, _, err := s.c.TxStatus(s.ctx, p.Hash)
			must(err)
		}, []string{"eth_getTransactionByHash"}},
	}
	for _, st := range steps {
		before := s.c.Stats()
		st.do()
		after := s.c.Stats()
		if after.Calls <= before.Calls {
			t.Fatalf("%s: calls %d before, %d after; want more", st.name, before.Calls, after.Calls)
		}
		for _, m := range st.methods {
			if want := uint64(count(st.methods, m)); after.Methods[m]-before.Methods[m] < want {
				t.Fatalf("%s: %s counted %d before, %d after; want %d more (methods now %v)", st.name, m, before.Methods[m], after.Methods[m], want, after.Methods)
			}
		}
		for m, n := range after.Methods {
			if n > before.Methods[m] && !slices.Contains(st.methods, m) {
				t.Fatalf("%s counted %s, which the RPC client does not use for it (methods %v)", st.name, m, st.methods)
			}
		}
	}
}

func count(list []string, s string) (n int) {
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

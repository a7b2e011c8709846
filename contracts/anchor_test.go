package contracts_test

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"

	"kintfs/contracts"
)

func (f *fixture) epochEvent(r *types.Receipt) *contracts.EpochAnchorEpoch {
	f.t.Helper()
	if len(r.Logs) != 1 {
		f.t.Fatalf("receipt has %d logs, want 1", len(r.Logs))
	}
	ev, err := f.anchor.UnpackEpochEvent(r.Logs[0])
	if err != nil {
		f.t.Fatal(err)
	}
	return ev
}

func TestPushChainsEpochs(t *testing.T) {
	f := newFixture(t)
	owner := addrOf(f.owner)
	sp := spaceOf("alpha")

	if h := f.head(owner, sp); h.Digest != [32]byte{} || h.Seq != 0 || h.BlockNumber != 0 {
		t.Fatalf("fresh head %+v, want zeros", h)
	}

	ct1 := []byte("first epoch")
	// The return values, as seen by an eth_call before sending.
	ret, err := f.call(owner, f.anchor.PackPush(owner, sp, common.Hash{}, ct1))
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.anchor.UnpackPush(ret)
	if err != nil {
		t.Fatal(err)
	}
	if out.Digest != crypto.Keccak256Hash(ct1) || out.Seq != 1 {
		t.Fatalf("push returns %x/%d", out.Digest, out.Seq)
	}

	r1 := f.mustSend(f.owner, f.anchor.PackPush(owner, sp, common.Hash{}, ct1))
	ev := f.epochEvent(r1)
	want := contracts.EpochAnchorEpoch{Owner: owner, Space: sp, Writer: owner, Seq: 1, Prev: [32]byte{}, Digest: crypto.Keccak256Hash(ct1), PrevBlock: 0}
	ev.Raw = nil
	if *ev != want {
		t.Fatalf("event %+v, want %+v", ev, want)
	}
	if r1.Logs[0].Address != f.addr {
		t.Fatalf("event from %s", r1.Logs[0].Address)
	}
	h1 := f.head(owner, sp)
	if h1.Digest != crypto.Keccak256Hash(ct1) || h1.Seq != 1 || h1.BlockNumber != r1.BlockNumber.Uint64() {
		t.Fatalf("head %+v after first push in block %d", h1, r1.BlockNumber)
	}
	// The ciphertext is in no event and in no storage: the event data is the four words.
	if len(r1.Logs[0].Data) != 4*32 || bytes.Contains(r1.Logs[0].Data, ct1) {
		t.Fatalf("event data %x", r1.Logs[0].Data)
	}

	f.sim.Commit() // an empty block in between, so prevBlock is not simply block-1
	ct2 := []byte("second epoch")
	r2 := f.mustSend(f.owner, f.anchor.PackPush(owner, sp, h1.Digest, ct2))
	ev2 := f.epochEvent(r2)
	if ev2.Seq != 2 || ev2.Prev != h1.Digest || ev2.Digest != crypto.Keccak256Hash(ct2) || ev2.PrevBlock != h1.BlockNumber {
		t.Fatalf("second event %+v", ev2)
	}
	h2 := f.head(owner, sp)
	if h2.Seq != 2 || h2.BlockNumber != r2.BlockNumber.Uint64() || h2.BlockNumber == h1.BlockNumber+1 {
		t.Fatalf("head %+v", h2)
	}

	// Other spaces and other owners are independent.
	if h := f.head(owner, spaceOf("beta")); h.Seq != 0 {
		t.Fatalf("beta head %+v", h)
	}
	if h := f.head(addrOf(f.other), sp); h.Seq != 0 {
		t.Fatalf("other owner's head %+v", h)
	}
	r3 := f.mustSend(f.other, f.anchor.PackPush(addrOf(f.other), sp, common.Hash{}, ct1))
	if ev := f.epochEvent(r3); ev.Seq != 1 || ev.Owner != addrOf(f.other) {
		t.Fatalf("other owner's first event %+v", ev)
	}
}

func TestPushCheckOrder(t *testing.T) {
	f := newFixture(t)
	owner := addrOf(f.owner)
	sp := spaceOf("order")
	bogus := common.HexToHash("0xbad")

	// A stranger with an empty ct and a wrong prev: authorization is checked first.
	_, err := f.send(f.other, f.anchor.PackPush(owner, sp, bogus, nil))
	f.wantRevert(err, "NotAuthorized")
	// The owner with an empty ct and a wrong prev: the empty payload comes next.
	_, err = f.send(f.owner, f.anchor.PackPush(owner, sp, bogus, nil))
	f.wantRevert(err, "EmptyCiphertext")
	// The owner with a wrong prev.
	_, err = f.send(f.owner, f.anchor.PackPush(owner, sp, bogus, []byte{1}))
	args := f.wantRevert(err, "StaleHead")
	if args[0].([32]byte) != ([32]byte{}) || args[1].([32]byte) != bogus {
		t.Fatalf("StaleHead(%x, %x), want (0, %x)", args[0], args[1], bogus)
	}

	r := f.mustSend(f.owner, f.anchor.PackPush(owner, sp, common.Hash{}, []byte{0}))
	digest := f.epochEvent(r).Digest
	// Replaying the first push (prev = 0) is now stale: expected is the head, got is 0.
	_, err = f.send(f.owner, f.anchor.PackPush(owner, sp, common.Hash{}, []byte{0}))
	args = f.wantRevert(err, "StaleHead")
	if args[0].([32]byte) != digest || args[1].([32]byte) != ([32]byte{}) {
		t.Fatalf("StaleHead(%x, %x), want (%x, 0)", args[0], args[1], digest)
	}
	// A mined revert changes nothing.
	rr := f.sendRaw(f.owner, f.anchor.PackPush(owner, sp, bogus, []byte{2}), 100_000)
	if rr.Status != types.ReceiptStatusFailed || len(rr.Logs) != 0 {
		t.Fatalf("stale push mined with status %d", rr.Status)
	}
	if h := f.head(owner, sp); h.Seq != 1 || h.Digest != digest {
		t.Fatalf("head moved: %+v", h)
	}
}

func TestSessionKeyExpiresAtTheExactSecond(t *testing.T) {
	f := newFixture(t)
	owner, key := addrOf(f.owner), addrOf(f.key)
	sp := spaceOf("expiry")

	if f.canWrite(owner, key) || !f.canWrite(owner, owner) {
		t.Fatal("canWrite before authorization")
	}
	expiry := f.latestTime() + 1000
	r := f.mustSend(f.owner, f.anchor.PackSetSessionKey(key, expiry))
	ev, err := f.anchor.UnpackSessionKeySetEvent(r.Logs[0])
	if err != nil || ev.Owner != owner || ev.Key != key || ev.Expiry != expiry {
		t.Fatalf("SessionKeySet %+v, %v", ev, err)
	}
	if got := f.expiry(owner, key); got != expiry {
		t.Fatalf("sessionKeyExpiry %d, want %d", got, expiry)
	}
	if f.nonce(owner) != 1 {
		t.Fatal("setSessionKey did not consume the nonce")
	}

	// The next block is at expiry-2; a push mined right after lands at expiry-1.
	f.setTime(expiry - 2)
	r = f.mustSend(f.key, f.anchor.PackPush(owner, sp, common.Hash{}, []byte("by key")))
	if tm := f.latestTime(); tm != expiry-1 {
		t.Fatalf("push landed at %d, want %d", tm, expiry-1)
	}
	if e := f.epochEvent(r); e.Writer != key || e.Owner != owner {
		t.Fatalf("event %+v", e)
	}
	if !f.canWrite(owner, key) {
		t.Fatal("canWrite false at expiry-1")
	}
	digest := f.head(owner, sp).Digest

	// The block at exactly expiry: the key can no longer write.
	f.setTime(expiry)
	if f.canWrite(owner, key) {
		t.Fatal("canWrite true at expiry")
	}
	_, err = f.call(key, f.anchor.PackPush(owner, sp, digest, []byte("late")))
	f.wantRevert(err, "NotAuthorized")
	rr := f.sendRaw(f.key, f.anchor.PackPush(owner, sp, digest, []byte("late")), 200_000)
	if rr.Status != types.ReceiptStatusFailed {
		t.Fatal("expired key pushed")
	}
	// The owner always can.
	f.mustSend(f.owner, f.anchor.PackPush(owner, sp, digest, []byte("owner")))
}

func TestRevokeSessionKey(t *testing.T) {
	f := newFixture(t)
	owner, key := addrOf(f.owner), addrOf(f.key)
	sp := spaceOf("revoke")

	f.mustSend(f.owner, f.anchor.PackSetSessionKey(key, f.latestTime()+86400))
	r := f.mustSend(f.key, f.anchor.PackPush(owner, sp, common.Hash{}, []byte("x")))
	digest := f.epochEvent(r).Digest

	r = f.mustSend(f.owner, f.anchor.PackRevokeSessionKey(key))
	ev, err := f.anchor.UnpackSessionKeySetEvent(r.Logs[0])
	if err != nil || ev.Owner != owner || ev.Key != key || ev.Expiry != 0 {
		t.Fatalf("revoke event %+v, %v", ev, err)
	}
	if f.canWrite(owner, key) || f.expiry(owner, key) != 0 {
		t.Fatal("key still authorized after revoke")
	}
	if n := f.nonce(owner); n != 2 {
		t.Fatalf("nonce %d after set and revoke, want 2", n)
	}
	_, err = f.send(f.key, f.anchor.PackPush(owner, sp, digest, []byte("y")))
	f.wantRevert(err, "NotAuthorized")

	// A key of one owner is nothing to another owner.
	f.mustSend(f.owner, f.anchor.PackSetSessionKey(key, f.latestTime()+86400))
	if f.canWrite(addrOf(f.other), key) {
		t.Fatal("key authorized for a different owner")
	}
	_, err = f.send(f.key, f.anchor.PackPush(addrOf(f.other), sp, common.Hash{}, []byte("y")))
	f.wantRevert(err, "NotAuthorized")
	// setSessionKey(key, 0) revokes too.
	f.mustSend(f.owner, f.anchor.PackSetSessionKey(key, 0))
	if f.canWrite(owner, key) {
		t.Fatal("expiry 0 still authorizes")
	}
}

func TestDomainSeparatorAndDigest(t *testing.T) {
	f := newFixture(t)
	owner, key := addrOf(f.owner), addrOf(f.key)

	sep, err := bind.Call(f.inst, nil, f.anchor.PackDOMAINSEPARATOR(), f.anchor.UnpackDOMAINSEPARATOR)
	if err != nil {
		t.Fatal(err)
	}
	typed := apitypes.TypedData{
		Types: apitypes.Types{
			"EIP712Domain": {
				{Name: "name", Type: "string"}, {Name: "version", Type: "string"},
				{Name: "chainId", Type: "uint256"}, {Name: "verifyingContract", Type: "address"},
			},
			"SessionKeyAuthorization": {
				{Name: "owner", Type: "address"}, {Name: "key", Type: "address"}, {Name: "expiry", Type: "uint64"},
				{Name: "nonce", Type: "uint256"}, {Name: "deadline", Type: "uint256"},
			},
		},
		PrimaryType: "SessionKeyAuthorization",
		Domain: apitypes.TypedDataDomain{
			Name: "kint EpochAnchor", Version: "1",
			ChainId: (*math.HexOrDecimal256)(f.chainID), VerifyingContract: f.addr.Hex(),
		},
		Message: apitypes.TypedDataMessage{
			"owner": owner.Hex(), "key": key.Hex(), "expiry": "1893456000",
			"nonce": "7", "deadline": "1893456300",
		},
	}
	wantSep, err := typed.HashStruct("EIP712Domain", typed.Domain.Map())
	if err != nil {
		t.Fatal(err)
	}
	if common.Hash(sep) != common.BytesToHash(wantSep) {
		t.Fatalf("DOMAIN_SEPARATOR %x, want %x", sep, wantSep)
	}
	wantDigest, _, err := apitypes.TypedDataAndHash(typed)
	if err != nil {
		t.Fatal(err)
	}
	got, err := bind.Call(f.inst, nil, f.anchor.PackAuthorizationDigest(owner, key, 1893456000, big.NewInt(7), big.NewInt(1893456300)), f.anchor.UnpackAuthorizationDigest)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:], wantDigest) {
		t.Fatalf("authorizationDigest %x, want %x", got, wantDigest)
	}
}

func TestSetSessionKeyBySig(t *testing.T) {
	f := newFixture(t)
	owner, key := addrOf(f.owner), addrOf(f.key)
	now := f.latestTime()
	expiry := now + 30*86400
	deadline := new(big.Int).SetUint64(now + 300)

	sig := f.signAuthorization(f.owner, owner, key, expiry, deadline)
	call := f.anchor.PackSetSessionKeyBySig(owner, key, expiry, deadline, sig)

	// Variants of the same signature that must be refused.
	highS := append([]byte(nil), sig...)
	s := new(big.Int).SetBytes(sig[32:64])
	new(big.Int).Sub(crypto.S256().Params().N, s).FillBytes(highS[32:64])
	highS[64] ^= 1 // 27 <-> 28: the malleable twin recovers the same address
	badV := append([]byte(nil), sig...)
	badV[64] = 29
	for name, bad := range map[string][]byte{
		"high-S":  highS,
		"v=29":    badV,
		"64 byte": sig[:64],
		"66 byte": append(append([]byte(nil), sig...), 0),
		"empty":   nil,
	} {
		_, err := f.call(key, f.anchor.PackSetSessionKeyBySig(owner, key, expiry, deadline, bad))
		if got, _ := f.revert(err); got != "BadSignature" {
			t.Errorf("%s signature: %s, want BadSignature", name, got)
		}
	}
	// Signed by someone else, or for other parameters.
	other := f.signAuthorization(f.other, owner, key, expiry, deadline)
	_, err := f.call(key, f.anchor.PackSetSessionKeyBySig(owner, key, expiry, deadline, other))
	f.wantRevert(err, "BadSignature")
	_, err = f.call(key, f.anchor.PackSetSessionKeyBySig(owner, key, expiry+1, deadline, sig))
	f.wantRevert(err, "BadSignature")
	_, err = f.call(key, f.anchor.PackSetSessionKeyBySig(owner, addrOf(f.other), expiry, deadline, sig))
	f.wantRevert(err, "BadSignature")

	// v as 0/1 is the same signature. Submitted by the session key, which pays.
	low := append([]byte(nil), sig...)
	low[64] -= 27
	r := f.mustSend(f.key, f.anchor.PackSetSessionKeyBySig(owner, key, expiry, deadline, low))
	ev, err := f.anchor.UnpackSessionKeySetEvent(r.Logs[0])
	if err != nil || ev.Owner != owner || ev.Key != key || ev.Expiry != expiry {
		t.Fatalf("SessionKeySet %+v, %v", ev, err)
	}
	if f.expiry(owner, key) != expiry || !f.canWrite(owner, key) || f.nonce(owner) != 1 {
		t.Fatal("authorization by signature did not take")
	}

	// Replay, in either v encoding, is refused: the nonce has moved on.
	_, err = f.send(f.other, call)
	f.wantRevert(err, "BadSignature")
	_, err = f.send(f.key, f.anchor.PackSetSessionKeyBySig(owner, key, expiry, deadline, low))
	f.wantRevert(err, "BadSignature")
}

func TestSetSessionKeyBySigDeadline(t *testing.T) {
	f := newFixture(t)
	owner, key := addrOf(f.owner), addrOf(f.key)
	now := f.latestTime()
	expiry := now + 86400
	deadline := now + 100

	sig := f.signAuthorization(f.owner, owner, key, expiry, new(big.Int).SetUint64(deadline))

	// Past the deadline the expiry error wins, even over a garbage signature.
	f.setTime(deadline + 1)
	_, err := f.call(key, f.anchor.PackSetSessionKeyBySig(owner, key, expiry, new(big.Int).SetUint64(deadline), sig))
	f.wantRevert(err, "AuthorizationExpired")
	_, err = f.call(key, f.anchor.PackSetSessionKeyBySig(owner, key, expiry, new(big.Int).SetUint64(deadline), []byte{1, 2, 3}))
	f.wantRevert(err, "AuthorizationExpired")

	// At the deadline itself it is still valid.
	f2 := newFixture(t)
	now = f2.latestTime()
	deadline = now + 100
	sig = f2.signAuthorization(f2.owner, owner, key, expiry, new(big.Int).SetUint64(deadline))
	f2.setTime(deadline - 1) // the transaction lands at the deadline
	f2.mustSend(f2.key, f2.anchor.PackSetSessionKeyBySig(owner, key, expiry, new(big.Int).SetUint64(deadline), sig))
	if f2.latestTime() != deadline || !f2.canWrite(owner, key) {
		t.Fatal("authorization at the deadline refused")
	}
}

func TestSetSessionKeyBySigZeroOwner(t *testing.T) {
	f := newFixture(t)
	deadline := new(big.Int).SetUint64(f.latestTime() + 300)
	// r = s = 0 makes ecrecover return the zero address, which must never count as the
	// signer, not even for owner = 0.
	sig := make([]byte, 65)
	sig[64] = 27
	_, err := f.call(addrOf(f.key), f.anchor.PackSetSessionKeyBySig(common.Address{}, addrOf(f.key), 1<<40, deadline, sig))
	f.wantRevert(err, "BadSignature")
	// Nor an otherwise unrecoverable signature.
	for i := 0; i < 64; i++ {
		sig[i] = 0xff
	}
	_, err = f.call(addrOf(f.key), f.anchor.PackSetSessionKeyBySig(common.Address{}, addrOf(f.key), 1<<40, deadline, sig))
	f.wantRevert(err, "BadSignature")
}

func TestOwnerActionsConsumeTheNonce(t *testing.T) {
	for _, action := range []string{"setSessionKey", "revokeSessionKey"} {
		t.Run(action, func(t *testing.T) {
			f := newFixture(t)
			owner, key := addrOf(f.owner), addrOf(f.key)
			expiry := f.latestTime() + 86400
			deadline := new(big.Int).SetUint64(f.latestTime() + 3600)
			// Signed, then held back.
			sig := f.signAuthorization(f.owner, owner, key, expiry, deadline)

			if action == "setSessionKey" {
				f.mustSend(f.owner, f.anchor.PackSetSessionKey(addrOf(f.other), expiry))
			} else {
				f.mustSend(f.owner, f.anchor.PackRevokeSessionKey(key))
			}
			if f.nonce(owner) != 1 {
				t.Fatalf("%s did not consume the nonce", action)
			}
			_, err := f.send(f.key, f.anchor.PackSetSessionKeyBySig(owner, key, expiry, deadline, sig))
			f.wantRevert(err, "BadSignature")
			if f.canWrite(owner, key) {
				t.Fatal("withheld authorization re-armed the key")
			}
		})
	}
}

func TestERC1271Owner(t *testing.T) {
	f := newFixture(t)
	walletSigner := testKey("wallet-signer")
	waddr, tx, err := contracts.DeployTestWallet(f.opts(f.owner), f.client, addrOf(walletSigner))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.mine(tx); err != nil {
		t.Fatal(err)
	}
	wallet := contracts.NewTestWallet()
	setMode := func(m uint8) {
		t.Helper()
		if _, err := f.sendTo(f.owner, waddr, wallet.PackSetMode(m)); err != nil {
			t.Fatal(err)
		}
	}
	key := addrOf(f.key)
	expiry := f.latestTime() + 86400
	deadline := new(big.Int).SetUint64(f.latestTime() + 3600)

	sig := f.signAuthorization(walletSigner, waddr, key, expiry, deadline)
	data := f.anchor.PackSetSessionKeyBySig(waddr, key, expiry, deadline, sig)

	// The wallet refuses, reverts, or answers with two bytes: BadSignature every time.
	for _, m := range []uint8{2, 3, 4} {
		setMode(m)
		_, err := f.call(key, data)
		f.wantRevert(err, "BadSignature")
	}
	// A signature from the wrong key, checked by the wallet itself.
	setMode(0)
	bad := f.signAuthorization(f.other, waddr, key, expiry, deadline)
	_, err = f.call(key, f.anchor.PackSetSessionKeyBySig(waddr, key, expiry, deadline, bad))
	f.wantRevert(err, "BadSignature")

	// The wallet accepts its signer's signature.
	f.mustSend(f.key, data)
	if !f.canWrite(waddr, key) || f.nonce(waddr) != 1 {
		t.Fatal("ERC-1271 authorization did not take")
	}
	// Replay: the digest is over the old nonce, the wallet's signer did not sign the new one.
	_, err = f.send(f.key, data)
	f.wantRevert(err, "BadSignature")

	// A wallet in accept-all mode takes anything, even an empty signature.
	setMode(1)
	key2 := addrOf(f.other)
	f.mustSend(f.key, f.anchor.PackSetSessionKeyBySig(waddr, key2, expiry, deadline, nil))
	if !f.canWrite(waddr, key2) {
		t.Fatal("accept-all wallet refused")
	}

	// The wallet as an owner can act on its own account too.
	inner := f.anchor.PackRevokeSessionKey(key2)
	if _, err := f.sendTo(f.owner, waddr, wallet.PackExecute(f.addr, inner)); err != nil {
		t.Fatal(err)
	}
	if f.canWrite(waddr, key2) || f.nonce(waddr) != 3 {
		t.Fatal("wallet revoke did not take")
	}
}

func TestSetStartSeqIsMonotone(t *testing.T) {
	f := newFixture(t)
	owner := addrOf(f.owner)
	sp := spaceOf("start")
	get := func(o common.Address, s common.Hash) uint64 {
		v, err := bind.Call(f.inst, nil, f.anchor.PackStartSeq(o, s), f.anchor.UnpackStartSeq)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if get(owner, sp) != 0 {
		t.Fatal("fresh startSeq not 0")
	}
	r := f.mustSend(f.owner, f.anchor.PackSetStartSeq(sp, 5))
	ev, err := f.anchor.UnpackStartSeqSetEvent(r.Logs[0])
	if err != nil || ev.Owner != owner || ev.Space != sp || ev.Seq != 5 {
		t.Fatalf("StartSeqSet %+v, %v", ev, err)
	}
	f.mustSend(f.owner, f.anchor.PackSetStartSeq(sp, 5)) // the same value again is fine
	_, err = f.send(f.owner, f.anchor.PackSetStartSeq(sp, 4))
	f.wantRevert(err, "SeqNotMonotone")
	f.mustSend(f.owner, f.anchor.PackSetStartSeq(sp, 9))
	if get(owner, sp) != 9 {
		t.Fatal("startSeq not 9")
	}
	// Per owner and per space; and it does not touch push.
	if get(owner, spaceOf("other")) != 0 || get(addrOf(f.other), sp) != 0 {
		t.Fatal("startSeq leaked across owner or space")
	}
	f.mustSend(f.other, f.anchor.PackSetStartSeq(sp, 1))
	if get(owner, sp) != 9 {
		t.Fatal("another owner moved this owner's startSeq")
	}
	f.mustSend(f.owner, f.anchor.PackPush(owner, sp, common.Hash{}, []byte("x")))
	if h := f.head(owner, sp); h.Seq != 1 {
		t.Fatalf("push after setStartSeq gave seq %d", h.Seq)
	}
}

func TestNoETHAndNoFallback(t *testing.T) {
	f := newFixture(t)
	value := big.NewInt(params.GWei)
	_, err := f.client.EstimateGas(f.ctx, ethereum.CallMsg{From: addrOf(f.owner), To: &f.addr, Value: value})
	if err == nil {
		t.Fatal("plain ETH transfer to the anchor accepted")
	}
	_, err = f.client.EstimateGas(f.ctx, ethereum.CallMsg{From: addrOf(f.owner), To: &f.addr, Data: []byte{1, 2, 3, 4}})
	if err == nil {
		t.Fatal("unknown selector accepted")
	}
	_, err = f.client.EstimateGas(f.ctx, ethereum.CallMsg{From: addrOf(f.owner), To: &f.addr, Value: value,
		Data: f.anchor.PackSetStartSeq(spaceOf("x"), 1)})
	if err == nil {
		t.Fatal("value sent with a call accepted")
	}
	if bal, err := f.client.BalanceAt(f.ctx, f.addr, nil); err != nil || bal.Sign() != 0 {
		t.Fatalf("anchor balance %v, %v", bal, err)
	}
}

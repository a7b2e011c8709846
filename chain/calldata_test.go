package chain

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

func TestPushCalldataRoundTrip(t *testing.T) {
	owner := common.HexToAddress("0xC635e6Eb223aE14143E23cEEa9440bC773dc87Ec")
	space := common.HexToHash("0xbd2a3b5b8f3fb4c81658d863b90018f1af511c28b33356fc81c2de406be98cb0")
	prev := common.HexToHash("0x7df5378a8c4fa8664365cf8956033cac2f4e3cbf7a4767a377d759b262f01a13")
	for _, n := range []int{1, 31, 32, 33, 4248} {
		ct := bytes.Repeat([]byte{0xa5}, n)
		data := EncodePushCalldata(owner, space, prev, ct)
		if hexutil.Encode(data[:4]) != "0xa2483825" {
			t.Fatalf("selector %x", data[:4])
		}
		if want := 4 + 5*32 + (n+31)/32*32; len(data) != want {
			t.Fatalf("calldata of a %d-byte ct is %d bytes, want %d", n, len(data), want)
		}
		o, s, p, c, err := DecodePushCalldata(data)
		if err != nil || o != owner || s != space || p != prev || !bytes.Equal(c, ct) {
			t.Fatalf("round trip of %d bytes: %v", n, err)
		}
	}
	for name, data := range map[string][]byte{
		"empty":     nil,
		"selector":  anchor.PackSetStartSeq(common.Hash{}, 1),
		"truncated": EncodePushCalldata(owner, space, prev, []byte("abc"))[:100],
	} {
		if _, _, _, _, err := DecodePushCalldata(data); !errors.Is(err, ErrNotPush) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDecodeRevert(t *testing.T) {
	stale := append(common.FromHex("0x7fe83496"), make([]byte, 64)...)
	stale[4+31] = 1
	e := DecodeRevert(stale)
	if e.Name != "StaleHead" || e.Error() != "StaleHead(expected 0x0000000000000000000000000000000000000000000000000000000000000001, got 0x0000000000000000000000000000000000000000000000000000000000000000)" {
		t.Fatalf("%q", e.Error())
	}
	if !errors.Is(e, ErrStaleHead) || errors.Is(e, ErrBadSignature) {
		t.Fatal("sentinel matching")
	}
	// Error(string) and unknown data.
	reason := common.FromHex("0x08c379a0" +
		"0000000000000000000000000000000000000000000000000000000000000020" +
		"0000000000000000000000000000000000000000000000000000000000000002" +
		"6869000000000000000000000000000000000000000000000000000000000000")
	if e := DecodeRevert(reason); e.Error() != `Error("hi")` {
		t.Fatalf("%q", e.Error())
	}
	if e := DecodeRevert([]byte{1, 2, 3, 4, 5}); e.Name != "" || e.Error() != "execution reverted with unknown data 0x0102030405" {
		t.Fatalf("%q", e.Error())
	}
}

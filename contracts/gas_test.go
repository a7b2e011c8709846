package contracts_test

import (
	"bytes"
	"crypto/ecdsa"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm/runtime"
	"github.com/ethereum/go-ethereum/params"

	"kintfs/chain/devchain"
	"kintfs/contracts"
)

// The sealed-epoch sizes: a header of 59 bytes plus 77 per key wrap, then the AES-GCM
// ciphertext of a padded bucket (bucket + 16 bytes of tag).
var buckets = []int{4096, 8192, 16384, 32768, 65536, 98304}

const (
	headerBytes = 59
	wrapBytes   = 77
	tagBytes    = 16
)

// calldataFloor is EIP-7623's floor for a transaction carrying data.
func calldataFloor(data []byte) (floor, zeros, nonzeros uint64) {
	zeros = uint64(bytes.Count(data, []byte{0}))
	nonzeros = uint64(len(data)) - zeros
	return params.TxGas + params.TxCostFloorPerToken*(zeros+params.TxTokenPerNonZeroByte*nonzeros), zeros, nonzeros
}

// standardGas is what the transaction would cost without the floor: the intrinsic cost
// (21000 + 4 gas per zero byte + 16 per nonzero byte) plus the execution gas.
func standardGas(zeros, nonzeros, exec uint64) uint64 {
	return params.TxGas + params.TxDataZeroGas*zeros + params.TxDataNonZeroGasEIP2028*nonzeros + exec
}

// execMeter replays the same sequence of calls in go-ethereum's EVM runtime, where the
// execution gas of one call (without the intrinsic cost or the floor) can be read off.
type execMeter struct {
	t      *testing.T
	cfg    *runtime.Config
	anchor common.Address
}

func newExecMeter(t *testing.T, owner common.Address) *execMeter {
	st, err := state.New(types.EmptyRootHash, state.NewDatabaseForTesting())
	if err != nil {
		t.Fatal(err)
	}
	cfg := &runtime.Config{
		ChainConfig: devchain.ChainConfig(),
		Origin:      owner,
		BlockNumber: big.NewInt(100),
		Time:        1_800_000_000,
		GasLimit:    30_000_000,
		State:       st,
	}
	_, addr, _, err := runtime.Create(contracts.EpochAnchorBytecode(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	st.Finalise(cfg.ChainConfig.Rules(cfg.BlockNumber, true, cfg.Time))
	return &execMeter{t: t, cfg: cfg, anchor: addr}
}

// call runs data from origin as a transaction of its own and returns its execution gas.
func (m *execMeter) call(origin common.Address, data []byte) uint64 {
	m.cfg.Origin = origin
	m.cfg.BlockNumber = new(big.Int).Add(m.cfg.BlockNumber, common.Big1)
	m.cfg.Time++
	_, left, err := runtime.Call(m.anchor, data, m.cfg)
	if err != nil {
		m.t.Fatalf("runtime call: %v", err)
	}
	m.cfg.State.Finalise(m.cfg.ChainConfig.Rules(m.cfg.BlockNumber, true, m.cfg.Time))
	return m.cfg.GasLimit - left
}

type gasRow struct {
	label     string
	writer    string
	ctLen     int
	calldata  int
	zeros, nz uint64
	floor     uint64 // of the second push
	second    uint64 // gasUsed of the second push
	firstOver int64  // gasUsed - floor of the first push (its own calldata)
	thirdOver int64  // gasUsed - floor of the third push
	exec      uint64 // execution gas of the second push
}

func TestGasTable(t *testing.T) {
	f := newFixture(t)
	owner, key := addrOf(f.owner), addrOf(f.key)
	f.mustSend(f.owner, f.anchor.PackSetSessionKey(key, f.latestTime()+365*86400))

	meter := newExecMeter(t, owner)
	meter.call(owner, f.anchor.PackSetSessionKey(key, 1<<62))

	type size struct {
		label string
		n     int
	}
	var sizes []size
	for _, b := range buckets {
		sizes = append(sizes, size{fmt.Sprintf("%dK, 1 wrap", b/1024), b + tagBytes + headerBytes + wrapBytes})
	}
	sizes = append(sizes,
		size{"4K, no wrap", 4096 + tagBytes + headerBytes},
		size{"4K, 2 wraps", 4096 + tagBytes + headerBytes + 2*wrapBytes},
		size{"96K, 4 wraps", 98304 + tagBytes + headerBytes + 4*wrapBytes},
	)

	var rows []gasRow
	seed := int64(1)
	for _, sz := range sizes {
		for _, w := range []struct {
			name string
			key  *ecdsa.PrivateKey
		}{{"session key", f.key}, {"owner", f.owner}} {
			sp := spaceOf(fmt.Sprintf("gas-%s-%s", sz.label, w.name))
			row := gasRow{label: sz.label, writer: w.name, ctLen: sz.n}
			var prev common.Hash
			for i := 0; i < 3; i++ {
				seed++
				ct := randomBytes(seed, sz.n)
				data := f.anchor.PackPush(owner, sp, prev, ct)
				r := f.mustSend(w.key, data)
				floor, zeros, nz := calldataFloor(data)
				exec := meter.call(addrOf(w.key), data)
				switch i {
				case 0:
					row.firstOver = int64(r.GasUsed) - int64(floor)
				case 1:
					row.second, row.calldata, row.zeros, row.nz, row.floor, row.exec = r.GasUsed, len(data), zeros, nz, floor, exec
				case 2:
					row.thirdOver = int64(r.GasUsed) - int64(floor)
				}
				if i > 0 && r.GasUsed != floor {
					t.Errorf("%s by %s, push %d: gasUsed %d, want the calldata floor %d (exec %d, standard %d)",
						sz.label, w.name, i+1, r.GasUsed, floor, exec, standardGas(zeros, nz, exec))
				}
				prev = f.epochEvent(r).Digest
			}
			rows = append(rows, row)
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "EpochAnchor.push gas (EIP-7623 floor = 21000 + 10*(zero + 4*nonzero calldata bytes); random ct)\n")
	fmt.Fprintf(&b, "%-13s %-11s %6s %8s %5s %7s %9s %9s %7s %7s %6s %9s\n",
		"epoch", "writer", "ct", "calldata", "zeros", "nonzero", "floor", "gasUsed", "1st-fl", "3rd-fl", "exec", "headroom")
	for _, r := range rows {
		std := standardGas(r.zeros, r.nz, r.exec)
		fmt.Fprintf(&b, "%-13s %-11s %6d %8d %5d %7d %9d %9d %7d %7d %6d %9d\n",
			r.label, r.writer, r.ctLen, r.calldata, r.zeros, r.nz, r.floor, r.second, r.firstOver, r.thirdOver, r.exec, int64(r.floor)-int64(std))
	}
	fmt.Fprintf(&b, "floor, gasUsed, exec: the second push of the space; 1st-fl, 3rd-fl: gasUsed - floor of the first and third push\n")
	fmt.Fprintf(&b, "exec: EVM execution gas alone; headroom: floor - (21000 + 4*zero + 16*nonzero + exec), > 0 means the floor is the bill\n")

	// Below some size the execution outweighs the floor's surcharge; where, for random data.
	smallest := 0
	for n := 1; n <= 4096; n++ {
		data := f.anchor.PackPush(owner, spaceOf("probe"), common.Hash{1}, randomBytes(int64(n), n))
		floor, zeros, nz := calldataFloor(data)
		if floor >= standardGas(zeros, nz, rows[0].exec) {
			smallest = n
			break
		}
	}
	fmt.Fprintf(&b, "with a session key writer the floor binds from a ct of about %d random bytes up\n", smallest)

	t.Log("\n" + b.String())
	fmt.Print(b.String())
}

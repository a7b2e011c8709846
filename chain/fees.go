package chain

import (
	"context"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"
)

// GasPriceOracle is the OP-stack predeploy that prices a transaction's L1 data fee on Base.
var GasPriceOracle = common.HexToAddress("0x420000000000000000000000000000000000000F")

// getL1FeeSelector is the selector of GasPriceOracle.getL1Fee(bytes).
var getL1FeeSelector = []byte{0x49, 0x94, 0x8e, 0x0e}

// FeeQuote is what transactions would cost at the chain's current prices.
type FeeQuote struct {
	// GasPrice is the latest block's base fee plus the suggested tip: what a transaction sent
	// now pays per gas.
	GasPrice *big.Int
	// L1Fees are the L1 data fees of the transactions asked about, in order; nil when the chain
	// reports none, and L1Note then says why.
	L1Fees []*big.Int
	L1Note string
}

// FeeQuote reads the current gas price and, where the chain has the GasPriceOracle, the L1
// data fee of a push carrying each of calldatas to the contract. A chain without the oracle
// (the dev chain, an L1) is no error: L1Note says so.
func (c *Client) FeeQuote(ctx context.Context, calldatas [][]byte) (*FeeQuote, error) {
	var (
		header *types.Header
		tip    hexutil.Big
		code   hexutil.Bytes
	)
	elems := []rpc.BatchElem{
		{Method: "eth_getBlockByNumber", Args: []any{"latest", false}, Result: &header},
		{Method: "eth_maxPriorityFeePerGas", Result: &tip},
		{Method: "eth_getCode", Args: []any{GasPriceOracle, "latest"}, Result: &code},
	}
	if err := c.batch(ctx, elems); err != nil {
		return nil, fmt.Errorf("read gas price: %w", err)
	}
	for _, el := range elems[:2] {
		if el.Error != nil {
			return nil, fmt.Errorf("read gas price: %s: %w", el.Method, el.Error)
		}
	}
	if header == nil || header.BaseFee == nil {
		return nil, fmt.Errorf("read gas price: the latest block has no base fee")
	}
	q := &FeeQuote{GasPrice: new(big.Int).Add(header.BaseFee, (*big.Int)(&tip))}
	if elems[2].Error != nil || len(code) == 0 {
		q.L1Note = "no L1 data fee reported: no GasPriceOracle at " + GasPriceOracle.Hex() + " on chain " + fmt.Sprint(c.chainID)
		return q, nil
	}
	if len(calldatas) == 0 {
		return q, nil
	}
	fees := make([]hexutil.Bytes, len(calldatas))
	calls := make([]rpc.BatchElem, len(calldatas))
	for i, data := range calldatas {
		raw, err := c.unsignedPush(data, q.GasPrice)
		if err != nil {
			return nil, err
		}
		arg := map[string]any{"to": GasPriceOracle, "input": hexutil.Bytes(encodeBytesCall(getL1FeeSelector, raw))}
		calls[i] = rpc.BatchElem{Method: "eth_call", Args: []any{arg, "latest"}, Result: &fees[i]}
	}
	if err := c.batch(ctx, calls); err != nil {
		return nil, fmt.Errorf("read the L1 data fee: %w", err)
	}
	for i, el := range calls {
		if el.Error != nil || len(fees[i]) != 32 {
			why := "an answer that is not one number"
			if el.Error != nil {
				why = el.Error.Error()
			}
			q.L1Note = "no L1 data fee reported: GasPriceOracle.getL1Fee: " + strings.TrimSpace(why)
			return q, nil
		}
		q.L1Fees = append(q.L1Fees, new(big.Int).SetBytes(fees[i]))
	}
	return q, nil
}

// unsignedPush is the serialized transaction of a push carrying data, unsigned (the oracle
// prices its bytes; a signature adds the same few bytes to every one).
func (c *Client) unsignedPush(data []byte, price *big.Int) ([]byte, error) {
	to := c.contract
	tx := types.NewTx(&types.DynamicFeeTx{ChainID: new(big.Int).SetUint64(c.chainID), Nonce: 1, GasTipCap: price,
		GasFeeCap: price, Gas: CalldataFloor(data), To: &to, Data: data})
	return tx.MarshalBinary()
}

// encodeBytesCall is the calldata of a function taking one bytes argument.
func encodeBytesCall(selector, arg []byte) []byte {
	out := append([]byte(nil), selector...)
	out = append(out, common.LeftPadBytes([]byte{0x20}, 32)...)
	out = append(out, common.LeftPadBytes(new(big.Int).SetInt64(int64(len(arg))).Bytes(), 32)...)
	out = append(out, arg...)
	if pad := len(arg) % 32; pad != 0 {
		out = append(out, make([]byte, 32-pad)...)
	}
	return out
}

// CalldataFloor is EIP-7623's floor for a transaction carrying data, what the chain charges
// when it is more than the calldata's standard cost plus the execution, as it is for every
// push: 21000 + 10 * (zero bytes + 4 * nonzero bytes).
func CalldataFloor(data []byte) uint64 {
	var tokens uint64
	for _, b := range data {
		if b == 0 {
			tokens++
		} else {
			tokens += 4
		}
	}
	return 21000 + 10*tokens
}

// FormatETH writes an amount of wei in ETH, with every significant decimal and no more:
// "0.000003950967656580" is "0.00000395096765658".
func FormatETH(wei *big.Int) string { return formatUnits(wei, 18) }

// FormatGwei writes wei as gwei, with as many decimals as it needs ("0.012").
func FormatGwei(wei *big.Int) string { return formatUnits(wei, 9) }

// formatUnits writes wei in units of 10^decimals wei, with as many decimals as it needs.
func formatUnits(wei *big.Int, decimals int) string {
	if wei == nil {
		return "0"
	}
	neg := wei.Sign() < 0
	s := new(big.Int).Abs(wei).String()
	for len(s) <= decimals {
		s = "0" + s
	}
	whole, frac := s[:len(s)-decimals], strings.TrimRight(s[len(s)-decimals:], "0")
	out := whole
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

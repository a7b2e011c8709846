package rpcproxy

import (
	"encoding/json"

	"github.com/ethereum/go-ethereum/common/hexutil"
)

// LogRange reads the block range of the params of an eth_getLogs call, for a Rewrite or a
// Refuse that plays a provider's limits or lies about some blocks.
func LogRange(params json.RawMessage) (from, to uint64, ok bool) {
	var ps []struct {
		FromBlock hexutil.Uint64 `json:"fromBlock"`
		ToBlock   hexutil.Uint64 `json:"toBlock"`
	}
	if json.Unmarshal(params, &ps) != nil || len(ps) != 1 {
		return 0, 0, false
	}
	return uint64(ps[0].FromBlock), uint64(ps[0].ToBlock), true
}

// RangedLogs reports whether a call is eth_getLogs over more than one block.
func RangedLogs(method string, params json.RawMessage) bool {
	from, to, ok := LogRange(params)
	return method == "eth_getLogs" && ok && from != to
}

// EditLogs passes each log of an eth_getLogs answer through f, which returns the logs to
// answer in its place (none drops it). An answer that is not a list of logs is kept as it is.
func EditLogs(result json.RawMessage, f func(l map[string]any) []map[string]any) json.RawMessage {
	var all []map[string]any
	if err := json.Unmarshal(result, &all); err != nil {
		return result
	}
	out := []map[string]any{}
	for _, l := range all {
		out = append(out, f(l)...)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return result
	}
	return b
}

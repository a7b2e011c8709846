package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
)

type rpcReq struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int    `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

type rpcResp struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func rpcBatch(url string, reqs []rpcReq) (map[int]json.RawMessage, error) {
	body, _ := json.Marshal(reqs)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []rpcResp
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	m := map[int]json.RawMessage{}
	for _, r := range out {
		if r.Error != nil {
			return nil, fmt.Errorf("rpc id %d: %s", r.ID, r.Error.Message)
		}
		m[r.ID] = r.Result
	}
	return m, nil
}

func hexUint(s string) uint64 {
	n, _ := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	return n
}

type pushGas struct {
	Seq      uint64  `json:"seq"`
	Calldata int     `json:"calldata_bytes"`
	Zeros    int     `json:"zeros"`
	GasUsed  uint64  `json:"gas_used"`
	Floor    uint64  `json:"floor"`
	Ratio    float64 `json:"ratio"`
}

// cmdGas reads each push transaction and its receipt and compares the gas used with the
// EIP-7623 calldata floor, 21000 + 10 * (zeros + 4 * nonzeros).
func cmdGas(args []string) error {
	fl := flag.NewFlagSet("gas", flag.ExitOnError)
	url := fl.String("rpc", "", "JSON-RPC URL")
	blocks := fl.String("blocks", "", "the mount's .kint/blocks (lines: seq block tx [time])")
	fromSeq := fl.Uint64("from-seq", 2, "first seq to check (the vault's first push pays for new storage)")
	fl.Parse(args)
	f, err := os.Open(*blocks)
	if err != nil {
		return err
	}
	type ep struct {
		seq uint64
		tx  string
	}
	var eps []ep
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 {
			continue
		}
		seq, _ := strconv.ParseUint(fs[0], 10, 64)
		if seq >= *fromSeq {
			eps = append(eps, ep{seq, fs[2]})
		}
	}
	f.Close()
	var all []pushGas
	const batch = 50
	for start := 0; start < len(eps); start += batch {
		end := min(start+batch, len(eps))
		var reqs []rpcReq
		for i, e := range eps[start:end] {
			reqs = append(reqs, rpcReq{"2.0", 2 * i, "eth_getTransactionByHash", []any{e.tx}},
				rpcReq{"2.0", 2*i + 1, "eth_getTransactionReceipt", []any{e.tx}})
		}
		res, err := rpcBatch(*url, reqs)
		if err != nil {
			return err
		}
		for i, e := range eps[start:end] {
			var tx struct {
				Input string `json:"input"`
			}
			var rc struct {
				GasUsed string `json:"gasUsed"`
				Status  string `json:"status"`
			}
			if err := json.Unmarshal(res[2*i], &tx); err != nil {
				return fmt.Errorf("tx %s: %w", e.tx, err)
			}
			if err := json.Unmarshal(res[2*i+1], &rc); err != nil {
				return fmt.Errorf("receipt %s: %w", e.tx, err)
			}
			data, err := hex.DecodeString(strings.TrimPrefix(tx.Input, "0x"))
			if err != nil {
				return fmt.Errorf("tx %s input: %w", e.tx, err)
			}
			zeros := bytes.Count(data, []byte{0})
			floor := uint64(21000 + 10*(zeros+4*(len(data)-zeros)))
			g := hexUint(rc.GasUsed)
			all = append(all, pushGas{Seq: e.seq, Calldata: len(data), Zeros: zeros, GasUsed: g, Floor: floor,
				Ratio: float64(g) / float64(floor)})
		}
	}
	if len(all) == 0 {
		return fmt.Errorf("no pushes from seq %d in %s", *fromSeq, *blocks)
	}
	ratios := make([]float64, len(all))
	atFloor := 0
	var off []pushGas
	for i, p := range all {
		ratios[i] = p.Ratio
		if p.GasUsed == p.Floor {
			atFloor++
		} else {
			off = append(off, p)
		}
	}
	sort.Slice(off, func(i, j int) bool { return off[i].Ratio > off[j].Ratio })
	if len(off) > 8 {
		off = off[:8]
	}
	sorted := append([]float64(nil), ratios...)
	sort.Float64s(sorted)
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"pushes": len(all), "at_floor": atFloor, "ratio_min": sorted[0], "ratio_median": median(ratios),
		"ratio_max": sorted[len(sorted)-1], "worst_off_floor": off,
	})
}

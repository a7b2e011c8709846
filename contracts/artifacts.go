// Package contracts holds the EpochAnchor contract (Solidity source, compiled artifacts and
// abigen v2 bindings) and TestWallet, a minimal ERC-1271 account used by tests (its bytecode
// and deployment are in export_test.go, for the tests only).
//
// Rebuild with `make contracts`; `make contracts-check` fails when the committed artifacts
// differ from a fresh compile.
package contracts

import (
	_ "embed"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

var (
	//go:embed build/EpochAnchor.abi.json
	epochAnchorABI []byte
	//go:embed build/EpochAnchor.bin
	epochAnchorBin string
)

// EpochAnchorABIJSON returns the compiled ABI of EpochAnchor, byte-identical to the
// specification's EpochAnchor.abi.json.
func EpochAnchorABIJSON() []byte { return append([]byte(nil), epochAnchorABI...) }

// EpochAnchorBytecode returns the init code of EpochAnchor (no constructor arguments).
func EpochAnchorBytecode() []byte { return common.FromHex(strings.TrimSpace(epochAnchorBin)) }

// DeployEpochAnchor sends the creation transaction of a new EpochAnchor.
func DeployEpochAnchor(opts *bind.TransactOpts, backend bind.ContractBackend) (common.Address, *types.Transaction, error) {
	return bind.DeployContract(opts, EpochAnchorBytecode(), backend, nil)
}

package contracts

import (
	_ "embed"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// TestWallet's compiled code, for the tests only: kintfs never deploys it.
//
//go:embed build/TestWallet.bin
var testWalletBin string

// WalletBytecode is the init code of TestWallet without its constructor argument.
func WalletBytecode() []byte { return common.FromHex(strings.TrimSpace(testWalletBin)) }

// DeployTestWallet sends the creation transaction of a TestWallet whose signer is signer.
func DeployTestWallet(opts *bind.TransactOpts, backend bind.ContractBackend, signer common.Address) (common.Address, *types.Transaction, error) {
	return bind.DeployContract(opts, WalletBytecode(), backend, NewTestWallet().PackConstructor(signer))
}

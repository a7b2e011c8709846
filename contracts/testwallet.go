// Code generated via abigen V2 - DO NOT EDIT.
// This file is a generated binding and any manual changes will be lost.

package contracts

import (
	"bytes"
	"errors"
	"math/big"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Reference imports to suppress errors if they are not otherwise used.
var (
	_ = bytes.Equal
	_ = errors.New
	_ = big.NewInt
	_ = common.Big1
	_ = types.BloomLookup
	_ = abi.ConvertType
)

// TestWalletMetaData contains all meta data concerning the TestWallet contract.
var TestWalletMetaData = bind.MetaData{
	ABI: "[{\"type\":\"constructor\",\"inputs\":[{\"name\":\"signer_\",\"type\":\"address\",\"internalType\":\"address\"}],\"stateMutability\":\"nonpayable\"},{\"type\":\"function\",\"name\":\"MODE_ACCEPT\",\"inputs\":[],\"outputs\":[{\"name\":\"\",\"type\":\"uint8\",\"internalType\":\"uint8\"}],\"stateMutability\":\"view\"},{\"type\":\"function\",\"name\":\"MODE_REFUSE\",\"inputs\":[],\"outputs\":[{\"name\":\"\",\"type\":\"uint8\",\"internalType\":\"uint8\"}],\"stateMutability\":\"view\"},{\"type\":\"function\",\"name\":\"MODE_REVERT\",\"inputs\":[],\"outputs\":[{\"name\":\"\",\"type\":\"uint8\",\"internalType\":\"uint8\"}],\"stateMutability\":\"view\"},{\"type\":\"function\",\"name\":\"MODE_SHORT\",\"inputs\":[],\"outputs\":[{\"name\":\"\",\"type\":\"uint8\",\"internalType\":\"uint8\"}],\"stateMutability\":\"view\"},{\"type\":\"function\",\"name\":\"MODE_SIGNER\",\"inputs\":[],\"outputs\":[{\"name\":\"\",\"type\":\"uint8\",\"internalType\":\"uint8\"}],\"stateMutability\":\"view\"},{\"type\":\"function\",\"name\":\"execute\",\"inputs\":[{\"name\":\"target\",\"type\":\"address\",\"internalType\":\"address\"},{\"name\":\"data\",\"type\":\"bytes\",\"internalType\":\"bytes\"}],\"outputs\":[{\"name\":\"\",\"type\":\"bytes\",\"internalType\":\"bytes\"}],\"stateMutability\":\"nonpayable\"},{\"type\":\"function\",\"name\":\"isValidSignature\",\"inputs\":[{\"name\":\"hash\",\"type\":\"bytes32\",\"internalType\":\"bytes32\"},{\"name\":\"signature\",\"type\":\"bytes\",\"internalType\":\"bytes\"}],\"outputs\":[{\"name\":\"\",\"type\":\"bytes4\",\"internalType\":\"bytes4\"}],\"stateMutability\":\"view\"},{\"type\":\"function\",\"name\":\"mode\",\"inputs\":[],\"outputs\":[{\"name\":\"\",\"type\":\"uint8\",\"internalType\":\"uint8\"}],\"stateMutability\":\"view\"},{\"type\":\"function\",\"name\":\"setMode\",\"inputs\":[{\"name\":\"mode_\",\"type\":\"uint8\",\"internalType\":\"uint8\"}],\"outputs\":[],\"stateMutability\":\"nonpayable\"},{\"type\":\"function\",\"name\":\"setSigner\",\"inputs\":[{\"name\":\"signer_\",\"type\":\"address\",\"internalType\":\"address\"}],\"outputs\":[],\"stateMutability\":\"nonpayable\"},{\"type\":\"function\",\"name\":\"signer\",\"inputs\":[],\"outputs\":[{\"name\":\"\",\"type\":\"address\",\"internalType\":\"address\"}],\"stateMutability\":\"view\"}]",
	ID:  "TestWallet",
	Bin: "0x6080604052348015600e575f5ffd5b50604051610687380380610687833981016040819052602b91604e565b5f80546001600160a01b0319166001600160a01b03929092169190911790556079565b5f60208284031215605d575f5ffd5b81516001600160a01b03811681146072575f5ffd5b9392505050565b610601806100865f395ff3fe608060405234801561000f575f5ffd5b50600436106100a6575f3560e01c80634e6bd63d1161006e5780634e6bd63d14610179578063540ee911146101815780636c19e78314610189578063a98a1fc3146101b8578063c5014fcb146101bf578063e47eaf4e146101c7575f5ffd5b80631626ba7e146100aa5780631cff79cd146100db57806321175b4a146100fb578063238ac9331461012a578063295a521214610154575b5f5ffd5b6100bd6100b836600461045b565b6101cf565b6040516001600160e01b031990911681526020015b60405180910390f35b6100ee6100e93660046104be565b61039f565b6040516100d291906104f4565b610128610109366004610529565b5f805460ff909216600160a01b0260ff60a01b19909216919091179055565b005b5f5461013c906001600160a01b031681565b6040516001600160a01b0390911681526020016100d2565b5f5461016790600160a01b900460ff1681565b60405160ff90911681526020016100d2565b610167600281565b610167600381565b610128610197366004610549565b5f80546001600160a01b0319166001600160a01b0392909216919091179055565b6101675f81565b610167600481565b610167600181565b5f8054600160a01b900460ff165f1981016101f45750630b135d3f60e11b9050610398565b60011960ff82160161021157506001600160e01b03199050610398565b60021960ff82160161025f5760405162461bcd60e51b815260206004820152601360248201527215195cdd15d85b1b195d0e881c99599d5cd959606a1b604482015260640160405180910390fd5b60031960ff82160161027a57630b135d3f60e11b5f5260025ff35b6041831461029357506001600160e01b03199050610398565b5f848460408181106102a7576102a7610562565b919091013560f81c915050601b8110156102c9576102c6601b82610576565b90505b5f600187836102db6020858a8c6105a1565b6102e4916105c8565b6102f2604060208b8d6105a1565b6102fb916105c8565b604080515f8152602081018083529590955260ff909316928401929092526060830152608082015260a0016020604051602081039080840390855afa158015610346573d5f5f3e3d5ffd5b5050604051601f1901519150506001600160a01b0381161580159061037757505f546001600160a01b038281169116145b610389576001600160e01b0319610392565b630b135d3f60e11b5b93505050505b9392505050565b60605f5f856001600160a01b031685856040516103bd9291906105e5565b5f604051808303815f865af19150503d805f81146103f6576040519150601f19603f3d011682016040523d82523d5f602084013e6103fb565b606091505b50915091508161040d57805160208201fd5b95945050505050565b5f5f83601f840112610426575f5ffd5b50813567ffffffffffffffff81111561043d575f5ffd5b602083019150836020828501011115610454575f5ffd5b9250929050565b5f5f5f6040848603121561046d575f5ffd5b83359250602084013567ffffffffffffffff81111561048a575f5ffd5b61049686828701610416565b9497909650939450505050565b80356001600160a01b03811681146104b9575f5ffd5b919050565b5f5f5f604084860312156104d0575f5ffd5b6104d9846104a3565b9250602084013567ffffffffffffffff81111561048a575f5ffd5b602081525f82518060208401528060208501604085015e5f604082850101526040601f19601f83011684010191505092915050565b5f60208284031215610539575f5ffd5b813560ff81168114610398575f5ffd5b5f60208284031215610559575f5ffd5b610398826104a3565b634e487b7160e01b5f52603260045260245ffd5b60ff818116838216019081111561059b57634e487b7160e01b5f52601160045260245ffd5b92915050565b5f5f858511156105af575f5ffd5b838611156105bb575f5ffd5b5050820193919092039150565b8035602083101561059b575f19602084900360031b1b1692915050565b818382375f910190815291905056fea164736f6c634300081c000a",
}

// TestWallet is an auto generated Go binding around an Ethereum contract.
type TestWallet struct {
	abi abi.ABI
}

// GetABI returns the ABI associated with this contract binding.
func (c *TestWallet) GetABI() abi.ABI {
	return c.abi
}

// NewTestWallet creates a new instance of TestWallet.
func NewTestWallet() *TestWallet {
	parsed, err := TestWalletMetaData.ParseABI()
	if err != nil {
		panic(errors.New("invalid ABI: " + err.Error()))
	}
	return &TestWallet{abi: *parsed}
}

// Instance creates a wrapper for a deployed contract instance at the given address.
// Use this to create the instance object passed to abigen v2 library functions Call, Transact, etc.
func (c *TestWallet) Instance(backend bind.ContractBackend, addr common.Address) *bind.BoundContract {
	return bind.NewBoundContract(addr, c.abi, backend, backend, backend)
}

// PackConstructor is the Go binding used to pack the parameters required for
// contract deployment.
//
// Solidity: constructor(address signer_) returns()
func (testWallet *TestWallet) PackConstructor(signer_ common.Address) []byte {
	enc, err := testWallet.abi.Pack("", signer_)
	if err != nil {
		panic(err)
	}
	return enc
}

// PackMODEACCEPT is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xe47eaf4e.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function MODE_ACCEPT() view returns(uint8)
func (testWallet *TestWallet) PackMODEACCEPT() []byte {
	enc, err := testWallet.abi.Pack("MODE_ACCEPT")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackMODEACCEPT is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xe47eaf4e.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function MODE_ACCEPT() view returns(uint8)
func (testWallet *TestWallet) TryPackMODEACCEPT() ([]byte, error) {
	return testWallet.abi.Pack("MODE_ACCEPT")
}

// UnpackMODEACCEPT is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xe47eaf4e.
//
// Solidity: function MODE_ACCEPT() view returns(uint8)
func (testWallet *TestWallet) UnpackMODEACCEPT(data []byte) (uint8, error) {
	out, err := testWallet.abi.Unpack("MODE_ACCEPT", data)
	if err != nil {
		return *new(uint8), err
	}
	out0 := *abi.ConvertType(out[0], new(uint8)).(*uint8)
	return out0, nil
}

// PackMODEREFUSE is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x4e6bd63d.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function MODE_REFUSE() view returns(uint8)
func (testWallet *TestWallet) PackMODEREFUSE() []byte {
	enc, err := testWallet.abi.Pack("MODE_REFUSE")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackMODEREFUSE is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x4e6bd63d.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function MODE_REFUSE() view returns(uint8)
func (testWallet *TestWallet) TryPackMODEREFUSE() ([]byte, error) {
	return testWallet.abi.Pack("MODE_REFUSE")
}

// UnpackMODEREFUSE is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x4e6bd63d.
//
// Solidity: function MODE_REFUSE() view returns(uint8)
func (testWallet *TestWallet) UnpackMODEREFUSE(data []byte) (uint8, error) {
	out, err := testWallet.abi.Unpack("MODE_REFUSE", data)
	if err != nil {
		return *new(uint8), err
	}
	out0 := *abi.ConvertType(out[0], new(uint8)).(*uint8)
	return out0, nil
}

// PackMODEREVERT is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x540ee911.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function MODE_REVERT() view returns(uint8)
func (testWallet *TestWallet) PackMODEREVERT() []byte {
	enc, err := testWallet.abi.Pack("MODE_REVERT")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackMODEREVERT is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x540ee911.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function MODE_REVERT() view returns(uint8)
func (testWallet *TestWallet) TryPackMODEREVERT() ([]byte, error) {
	return testWallet.abi.Pack("MODE_REVERT")
}

// UnpackMODEREVERT is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x540ee911.
//
// Solidity: function MODE_REVERT() view returns(uint8)
func (testWallet *TestWallet) UnpackMODEREVERT(data []byte) (uint8, error) {
	out, err := testWallet.abi.Unpack("MODE_REVERT", data)
	if err != nil {
		return *new(uint8), err
	}
	out0 := *abi.ConvertType(out[0], new(uint8)).(*uint8)
	return out0, nil
}

// PackMODESHORT is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xc5014fcb.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function MODE_SHORT() view returns(uint8)
func (testWallet *TestWallet) PackMODESHORT() []byte {
	enc, err := testWallet.abi.Pack("MODE_SHORT")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackMODESHORT is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xc5014fcb.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function MODE_SHORT() view returns(uint8)
func (testWallet *TestWallet) TryPackMODESHORT() ([]byte, error) {
	return testWallet.abi.Pack("MODE_SHORT")
}

// UnpackMODESHORT is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xc5014fcb.
//
// Solidity: function MODE_SHORT() view returns(uint8)
func (testWallet *TestWallet) UnpackMODESHORT(data []byte) (uint8, error) {
	out, err := testWallet.abi.Unpack("MODE_SHORT", data)
	if err != nil {
		return *new(uint8), err
	}
	out0 := *abi.ConvertType(out[0], new(uint8)).(*uint8)
	return out0, nil
}

// PackMODESIGNER is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa98a1fc3.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function MODE_SIGNER() view returns(uint8)
func (testWallet *TestWallet) PackMODESIGNER() []byte {
	enc, err := testWallet.abi.Pack("MODE_SIGNER")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackMODESIGNER is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa98a1fc3.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function MODE_SIGNER() view returns(uint8)
func (testWallet *TestWallet) TryPackMODESIGNER() ([]byte, error) {
	return testWallet.abi.Pack("MODE_SIGNER")
}

// UnpackMODESIGNER is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xa98a1fc3.
//
// Solidity: function MODE_SIGNER() view returns(uint8)
func (testWallet *TestWallet) UnpackMODESIGNER(data []byte) (uint8, error) {
	out, err := testWallet.abi.Unpack("MODE_SIGNER", data)
	if err != nil {
		return *new(uint8), err
	}
	out0 := *abi.ConvertType(out[0], new(uint8)).(*uint8)
	return out0, nil
}

// PackExecute is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x1cff79cd.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function execute(address target, bytes data) returns(bytes)
func (testWallet *TestWallet) PackExecute(target common.Address, data []byte) []byte {
	enc, err := testWallet.abi.Pack("execute", target, data)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackExecute is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x1cff79cd.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function execute(address target, bytes data) returns(bytes)
func (testWallet *TestWallet) TryPackExecute(target common.Address, data []byte) ([]byte, error) {
	return testWallet.abi.Pack("execute", target, data)
}

// UnpackExecute is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x1cff79cd.
//
// Solidity: function execute(address target, bytes data) returns(bytes)
func (testWallet *TestWallet) UnpackExecute(data []byte) ([]byte, error) {
	out, err := testWallet.abi.Unpack("execute", data)
	if err != nil {
		return *new([]byte), err
	}
	out0 := *abi.ConvertType(out[0], new([]byte)).(*[]byte)
	return out0, nil
}

// PackIsValidSignature is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x1626ba7e.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function isValidSignature(bytes32 hash, bytes signature) view returns(bytes4)
func (testWallet *TestWallet) PackIsValidSignature(hash [32]byte, signature []byte) []byte {
	enc, err := testWallet.abi.Pack("isValidSignature", hash, signature)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackIsValidSignature is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x1626ba7e.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function isValidSignature(bytes32 hash, bytes signature) view returns(bytes4)
func (testWallet *TestWallet) TryPackIsValidSignature(hash [32]byte, signature []byte) ([]byte, error) {
	return testWallet.abi.Pack("isValidSignature", hash, signature)
}

// UnpackIsValidSignature is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x1626ba7e.
//
// Solidity: function isValidSignature(bytes32 hash, bytes signature) view returns(bytes4)
func (testWallet *TestWallet) UnpackIsValidSignature(data []byte) ([4]byte, error) {
	out, err := testWallet.abi.Unpack("isValidSignature", data)
	if err != nil {
		return *new([4]byte), err
	}
	out0 := *abi.ConvertType(out[0], new([4]byte)).(*[4]byte)
	return out0, nil
}

// PackMode is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x295a5212.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function mode() view returns(uint8)
func (testWallet *TestWallet) PackMode() []byte {
	enc, err := testWallet.abi.Pack("mode")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackMode is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x295a5212.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function mode() view returns(uint8)
func (testWallet *TestWallet) TryPackMode() ([]byte, error) {
	return testWallet.abi.Pack("mode")
}

// UnpackMode is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x295a5212.
//
// Solidity: function mode() view returns(uint8)
func (testWallet *TestWallet) UnpackMode(data []byte) (uint8, error) {
	out, err := testWallet.abi.Unpack("mode", data)
	if err != nil {
		return *new(uint8), err
	}
	out0 := *abi.ConvertType(out[0], new(uint8)).(*uint8)
	return out0, nil
}

// PackSetMode is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x21175b4a.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function setMode(uint8 mode_) returns()
func (testWallet *TestWallet) PackSetMode(mode uint8) []byte {
	enc, err := testWallet.abi.Pack("setMode", mode)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSetMode is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x21175b4a.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function setMode(uint8 mode_) returns()
func (testWallet *TestWallet) TryPackSetMode(mode uint8) ([]byte, error) {
	return testWallet.abi.Pack("setMode", mode)
}

// PackSetSigner is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x6c19e783.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function setSigner(address signer_) returns()
func (testWallet *TestWallet) PackSetSigner(signer common.Address) []byte {
	enc, err := testWallet.abi.Pack("setSigner", signer)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSetSigner is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x6c19e783.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function setSigner(address signer_) returns()
func (testWallet *TestWallet) TryPackSetSigner(signer common.Address) ([]byte, error) {
	return testWallet.abi.Pack("setSigner", signer)
}

// PackSigner is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x238ac933.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function signer() view returns(address)
func (testWallet *TestWallet) PackSigner() []byte {
	enc, err := testWallet.abi.Pack("signer")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSigner is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x238ac933.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function signer() view returns(address)
func (testWallet *TestWallet) TryPackSigner() ([]byte, error) {
	return testWallet.abi.Pack("signer")
}

// UnpackSigner is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x238ac933.
//
// Solidity: function signer() view returns(address)
func (testWallet *TestWallet) UnpackSigner(data []byte) (common.Address, error) {
	out, err := testWallet.abi.Unpack("signer", data)
	if err != nil {
		return *new(common.Address), err
	}
	out0 := *abi.ConvertType(out[0], new(common.Address)).(*common.Address)
	return out0, nil
}

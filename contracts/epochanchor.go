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

// EpochAnchorMetaData contains all meta data concerning the EpochAnchor contract.
var EpochAnchorMetaData = bind.MetaData{
	ABI: "[{\"type\":\"function\",\"name\":\"DOMAIN_SEPARATOR\",\"inputs\":[],\"outputs\":[{\"name\":\"\",\"type\":\"bytes32\",\"internalType\":\"bytes32\"}],\"stateMutability\":\"view\"},{\"type\":\"function\",\"name\":\"authNonce\",\"inputs\":[{\"name\":\"owner\",\"type\":\"address\",\"internalType\":\"address\"}],\"outputs\":[{\"name\":\"nonce\",\"type\":\"uint256\",\"internalType\":\"uint256\"}],\"stateMutability\":\"view\"},{\"type\":\"function\",\"name\":\"authorizationDigest\",\"inputs\":[{\"name\":\"owner\",\"type\":\"address\",\"internalType\":\"address\"},{\"name\":\"key\",\"type\":\"address\",\"internalType\":\"address\"},{\"name\":\"expiry\",\"type\":\"uint64\",\"internalType\":\"uint64\"},{\"name\":\"nonce\",\"type\":\"uint256\",\"internalType\":\"uint256\"},{\"name\":\"deadline\",\"type\":\"uint256\",\"internalType\":\"uint256\"}],\"outputs\":[{\"name\":\"\",\"type\":\"bytes32\",\"internalType\":\"bytes32\"}],\"stateMutability\":\"view\"},{\"type\":\"function\",\"name\":\"canWrite\",\"inputs\":[{\"name\":\"owner\",\"type\":\"address\",\"internalType\":\"address\"},{\"name\":\"writer\",\"type\":\"address\",\"internalType\":\"address\"}],\"outputs\":[{\"name\":\"\",\"type\":\"bool\",\"internalType\":\"bool\"}],\"stateMutability\":\"view\"},{\"type\":\"function\",\"name\":\"head\",\"inputs\":[{\"name\":\"owner\",\"type\":\"address\",\"internalType\":\"address\"},{\"name\":\"space\",\"type\":\"bytes32\",\"internalType\":\"bytes32\"}],\"outputs\":[{\"name\":\"digest\",\"type\":\"bytes32\",\"internalType\":\"bytes32\"},{\"name\":\"seq\",\"type\":\"uint64\",\"internalType\":\"uint64\"},{\"name\":\"blockNumber\",\"type\":\"uint64\",\"internalType\":\"uint64\"}],\"stateMutability\":\"view\"},{\"type\":\"function\",\"name\":\"push\",\"inputs\":[{\"name\":\"owner\",\"type\":\"address\",\"internalType\":\"address\"},{\"name\":\"space\",\"type\":\"bytes32\",\"internalType\":\"bytes32\"},{\"name\":\"prev\",\"type\":\"bytes32\",\"internalType\":\"bytes32\"},{\"name\":\"ct\",\"type\":\"bytes\",\"internalType\":\"bytes\"}],\"outputs\":[{\"name\":\"digest\",\"type\":\"bytes32\",\"internalType\":\"bytes32\"},{\"name\":\"seq\",\"type\":\"uint64\",\"internalType\":\"uint64\"}],\"stateMutability\":\"nonpayable\"},{\"type\":\"function\",\"name\":\"revokeSessionKey\",\"inputs\":[{\"name\":\"key\",\"type\":\"address\",\"internalType\":\"address\"}],\"outputs\":[],\"stateMutability\":\"nonpayable\"},{\"type\":\"function\",\"name\":\"sessionKeyExpiry\",\"inputs\":[{\"name\":\"owner\",\"type\":\"address\",\"internalType\":\"address\"},{\"name\":\"key\",\"type\":\"address\",\"internalType\":\"address\"}],\"outputs\":[{\"name\":\"expiry\",\"type\":\"uint64\",\"internalType\":\"uint64\"}],\"stateMutability\":\"view\"},{\"type\":\"function\",\"name\":\"setSessionKey\",\"inputs\":[{\"name\":\"key\",\"type\":\"address\",\"internalType\":\"address\"},{\"name\":\"expiry\",\"type\":\"uint64\",\"internalType\":\"uint64\"}],\"outputs\":[],\"stateMutability\":\"nonpayable\"},{\"type\":\"function\",\"name\":\"setSessionKeyBySig\",\"inputs\":[{\"name\":\"owner\",\"type\":\"address\",\"internalType\":\"address\"},{\"name\":\"key\",\"type\":\"address\",\"internalType\":\"address\"},{\"name\":\"expiry\",\"type\":\"uint64\",\"internalType\":\"uint64\"},{\"name\":\"deadline\",\"type\":\"uint256\",\"internalType\":\"uint256\"},{\"name\":\"signature\",\"type\":\"bytes\",\"internalType\":\"bytes\"}],\"outputs\":[],\"stateMutability\":\"nonpayable\"},{\"type\":\"function\",\"name\":\"setStartSeq\",\"inputs\":[{\"name\":\"space\",\"type\":\"bytes32\",\"internalType\":\"bytes32\"},{\"name\":\"seq\",\"type\":\"uint64\",\"internalType\":\"uint64\"}],\"outputs\":[],\"stateMutability\":\"nonpayable\"},{\"type\":\"function\",\"name\":\"startSeq\",\"inputs\":[{\"name\":\"owner\",\"type\":\"address\",\"internalType\":\"address\"},{\"name\":\"space\",\"type\":\"bytes32\",\"internalType\":\"bytes32\"}],\"outputs\":[{\"name\":\"seq\",\"type\":\"uint64\",\"internalType\":\"uint64\"}],\"stateMutability\":\"view\"},{\"type\":\"event\",\"name\":\"Epoch\",\"inputs\":[{\"name\":\"owner\",\"type\":\"address\",\"indexed\":true,\"internalType\":\"address\"},{\"name\":\"space\",\"type\":\"bytes32\",\"indexed\":true,\"internalType\":\"bytes32\"},{\"name\":\"writer\",\"type\":\"address\",\"indexed\":true,\"internalType\":\"address\"},{\"name\":\"seq\",\"type\":\"uint64\",\"indexed\":false,\"internalType\":\"uint64\"},{\"name\":\"prev\",\"type\":\"bytes32\",\"indexed\":false,\"internalType\":\"bytes32\"},{\"name\":\"digest\",\"type\":\"bytes32\",\"indexed\":false,\"internalType\":\"bytes32\"},{\"name\":\"prevBlock\",\"type\":\"uint64\",\"indexed\":false,\"internalType\":\"uint64\"}],\"anonymous\":false},{\"type\":\"event\",\"name\":\"SessionKeySet\",\"inputs\":[{\"name\":\"owner\",\"type\":\"address\",\"indexed\":true,\"internalType\":\"address\"},{\"name\":\"key\",\"type\":\"address\",\"indexed\":true,\"internalType\":\"address\"},{\"name\":\"expiry\",\"type\":\"uint64\",\"indexed\":false,\"internalType\":\"uint64\"}],\"anonymous\":false},{\"type\":\"event\",\"name\":\"StartSeqSet\",\"inputs\":[{\"name\":\"owner\",\"type\":\"address\",\"indexed\":true,\"internalType\":\"address\"},{\"name\":\"space\",\"type\":\"bytes32\",\"indexed\":true,\"internalType\":\"bytes32\"},{\"name\":\"seq\",\"type\":\"uint64\",\"indexed\":false,\"internalType\":\"uint64\"}],\"anonymous\":false},{\"type\":\"error\",\"name\":\"AuthorizationExpired\",\"inputs\":[]},{\"type\":\"error\",\"name\":\"BadSignature\",\"inputs\":[]},{\"type\":\"error\",\"name\":\"EmptyCiphertext\",\"inputs\":[]},{\"type\":\"error\",\"name\":\"NotAuthorized\",\"inputs\":[]},{\"type\":\"error\",\"name\":\"SeqNotMonotone\",\"inputs\":[]},{\"type\":\"error\",\"name\":\"StaleHead\",\"inputs\":[{\"name\":\"expected\",\"type\":\"bytes32\",\"internalType\":\"bytes32\"},{\"name\":\"got\",\"type\":\"bytes32\",\"internalType\":\"bytes32\"}]}]",
	ID:  "EpochAnchor",
	Bin: "0x6080604052348015600e575f5ffd5b50610dce8061001c5f395ff3fe608060405234801561000f575f5ffd5b50600436106100b1575f3560e01c8063580da3101161006e578063580da310146101ab5780636844536f146101be57806384f4fc6a146101ff5780638b524b7a14610212578063a24838251461023a578063edf2c3871461026a575f5ffd5b806309c9881f146100b55780631408deb9146100db57806315e2058b1461010657806324e8393d1461011b5780633644e515146101905780635247dcff14610198575b5f5ffd5b6100c86100c3366004610a81565b61028d565b6040519081526020015b60405180910390f35b6100ee6100e9366004610ad2565b610352565b6040516001600160401b0390911681526020016100d2565b610119610114366004610afa565b610385565b005b61016b610129366004610ad2565b6001600160a01b03919091165f9081526020818152604080832093835292905220805460019091015490916001600160401b0380831692600160401b90041690565b604080519384526001600160401b0392831660208501529116908201526060016100d2565b6100c861043a565b6101196101a6366004610b68565b6104de565b6101196101b9366004610be1565b610566565b6100ee6101cc366004610c09565b6001600160a01b039182165f9081526001602090815260408083209390941682529190915220546001600160401b031690565b61011961020d366004610c31565b610575565b6100c8610220366004610c31565b6001600160a01b03165f9081526002602052604090205490565b61024d610248366004610c4a565b610583565b604080519283526001600160401b039091166020830152016100d2565b61027d610278366004610c09565b610708565b60405190151581526020016100d2565b604080517f1ef5c3706cd9045d333b6838b2f1f05eaa16cb97b68f72a6c8b0fc6a42a31b0c6020808301919091526001600160a01b0388811683850152871660608301526001600160401b038616608083015260a0820185905260c08083018590528351808403909101815260e090920190925280519101205f9061031061043a565b60405161190160f01b60208201526022810191909152604281018290526062016040516020818303038152906040528051906020012091505095945050505050565b6001600160a01b0382165f9081526003602090815260408083208484529091529020546001600160401b03165b92915050565b335f9081526003602090815260408083208584529091529020546001600160401b0390811690821610156103cc57604051632431801760e11b815260040160405180910390fd5b335f818152600360209081526040808320868452825291829020805467ffffffffffffffff19166001600160401b03861690811790915591519182528492917f429767075b5fba88ebcab612058dbfc8613825fa68a59fa886f002c46636fa3e910160405180910390a35050565b604080517f8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f60208201527f70b78be51156575d04ba24642400c150725748d2c0b609d41e313cf998bca33f918101919091527fc89efdaa54c0f20c7adf612882df0950f5a951637e0307cdcb4c672f298b8bc660608201524660808201523060a08201525f9060c00160405160208183030381529060405280519060200120905090565b824211156104ff57604051630f05f5bf60e01b815260040160405180910390fd5b6001600160a01b0386165f90815260026020526040812054610527908890889088908861028d565b90506105358782858561075e565b61055257604051635cd5d23360e01b815260040160405180910390fd5b61055d8787876109c4565b50505050505050565b6105713383836109c4565b5050565b61058033825f6109c4565b50565b5f5f61058f8733610708565b6105ac5760405163ea8e4eb560e01b815260040160405180910390fd5b5f8390036105cd57604051631b7c19af60e31b815260040160405180910390fd5b6001600160a01b0387165f908152602081815260408083208984529091529020805486811461061d57604051633ff41a4b60e11b8152600481018290526024810188905260440160405180910390fd5b6001820154604051600160401b9091046001600160401b0316906106449088908890610cac565b604051908190039020600180850154919650610669916001600160401b031690610ccf565b8584556001840180546001600160401b038381166fffffffffffffffffffffffffffffffff199092168217600160401b438316021790925560408051918252602082018c90528101889052908316606082015290945033908a906001600160a01b038d16907f86da9d02e15b0a4ed66c7fca89e82bdb54f4f39993c59a4c9a5256f0eedf86bc9060800160405180910390a45050509550959350505050565b5f826001600160a01b0316826001600160a01b0316148061075757506001600160a01b038084165f90815260016020908152604080832093861683529290522054426001600160401b03909116115b9392505050565b5f6001600160a01b0385163b1561085b576040515f9081906001600160a01b03881690630b135d3f60e11b9061079c90899089908990602401610cee565b60408051601f198184030181529181526020820180516001600160e01b03166001600160e01b03199094169390931790925290516107da9190610d23565b5f60405180830381855afa9150503d805f8114610812576040519150601f19603f3d011682016040523d82523d5f602084013e610817565b606091505b509150915081801561082b57506020815110155b801561085257508051630b135d3f60e11b906108509083016020908101908401610d39565b145b925050506109bc565b6041821461086a57505f6109bc565b5f6108786020828587610d50565b61088191610d77565b90505f610892604060208688610d50565b61089b91610d77565b90505f858560408181106108b1576108b1610d94565b919091013560f81c915050601b8110156108d3576108d0601b82610da8565b90505b8060ff16601b141580156108eb57508060ff16601c14155b156108fb575f93505050506109bc565b7f7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a082111561092e575f93505050506109bc565b604080515f808252602082018084528a905260ff841692820192909252606081018590526080810184905260019060a0016020604051602081039080840390855afa15801561097f573d5f5f3e3d5ffd5b5050604051601f1901519150506001600160a01b038116158015906109b55750886001600160a01b0316816001600160a01b0316145b9450505050505b949350505050565b6001600160a01b038381165f818152600160208181526040808420958816808552958252808420805467ffffffffffffffff19166001600160401b0389169081179091558585526002835293819020805490930190925590519182527f0775f7c38a29f43cd7fbc9f49b6e6ce64501452fd077c83ed52fa3e847da5625910160405180910390a3505050565b80356001600160a01b0381168114610a66575f5ffd5b919050565b80356001600160401b0381168114610a66575f5ffd5b5f5f5f5f5f60a08688031215610a95575f5ffd5b610a9e86610a50565b9450610aac60208701610a50565b9350610aba60408701610a6b565b94979396509394606081013594506080013592915050565b5f5f60408385031215610ae3575f5ffd5b610aec83610a50565b946020939093013593505050565b5f5f60408385031215610b0b575f5ffd5b82359150610b1b60208401610a6b565b90509250929050565b5f5f83601f840112610b34575f5ffd5b5081356001600160401b03811115610b4a575f5ffd5b602083019150836020828501011115610b61575f5ffd5b9250929050565b5f5f5f5f5f5f60a08789031215610b7d575f5ffd5b610b8687610a50565b9550610b9460208801610a50565b9450610ba260408801610a6b565b93506060870135925060808701356001600160401b03811115610bc3575f5ffd5b610bcf89828a01610b24565b979a9699509497509295939492505050565b5f5f60408385031215610bf2575f5ffd5b610bfb83610a50565b9150610b1b60208401610a6b565b5f5f60408385031215610c1a575f5ffd5b610c2383610a50565b9150610b1b60208401610a50565b5f60208284031215610c41575f5ffd5b61075782610a50565b5f5f5f5f5f60808688031215610c5e575f5ffd5b610c6786610a50565b9450602086013593506040860135925060608601356001600160401b03811115610c8f575f5ffd5b610c9b88828901610b24565b969995985093965092949392505050565b818382375f9101908152919050565b634e487b7160e01b5f52601160045260245ffd5b6001600160401b03818116838216019081111561037f5761037f610cbb565b83815260406020820152816040820152818360608301375f818301606090810191909152601f909201601f1916010192915050565b5f82518060208501845e5f920191825250919050565b5f60208284031215610d49575f5ffd5b5051919050565b5f5f85851115610d5e575f5ffd5b83861115610d6a575f5ffd5b5050820193919092039150565b8035602083101561037f575f19602084900360031b1b1692915050565b634e487b7160e01b5f52603260045260245ffd5b60ff818116838216019081111561037f5761037f610cbb56fea164736f6c634300081c000a",
}

// EpochAnchor is an auto generated Go binding around an Ethereum contract.
type EpochAnchor struct {
	abi abi.ABI
}

// GetABI returns the ABI associated with this contract binding.
func (c *EpochAnchor) GetABI() abi.ABI {
	return c.abi
}

// NewEpochAnchor creates a new instance of EpochAnchor.
func NewEpochAnchor() *EpochAnchor {
	parsed, err := EpochAnchorMetaData.ParseABI()
	if err != nil {
		panic(errors.New("invalid ABI: " + err.Error()))
	}
	return &EpochAnchor{abi: *parsed}
}

// Instance creates a wrapper for a deployed contract instance at the given address.
// Use this to create the instance object passed to abigen v2 library functions Call, Transact, etc.
func (c *EpochAnchor) Instance(backend bind.ContractBackend, addr common.Address) *bind.BoundContract {
	return bind.NewBoundContract(addr, c.abi, backend, backend, backend)
}

// PackDOMAINSEPARATOR is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x3644e515.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function DOMAIN_SEPARATOR() view returns(bytes32)
func (epochAnchor *EpochAnchor) PackDOMAINSEPARATOR() []byte {
	enc, err := epochAnchor.abi.Pack("DOMAIN_SEPARATOR")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackDOMAINSEPARATOR is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x3644e515.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function DOMAIN_SEPARATOR() view returns(bytes32)
func (epochAnchor *EpochAnchor) TryPackDOMAINSEPARATOR() ([]byte, error) {
	return epochAnchor.abi.Pack("DOMAIN_SEPARATOR")
}

// UnpackDOMAINSEPARATOR is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x3644e515.
//
// Solidity: function DOMAIN_SEPARATOR() view returns(bytes32)
func (epochAnchor *EpochAnchor) UnpackDOMAINSEPARATOR(data []byte) ([32]byte, error) {
	out, err := epochAnchor.abi.Unpack("DOMAIN_SEPARATOR", data)
	if err != nil {
		return *new([32]byte), err
	}
	out0 := *abi.ConvertType(out[0], new([32]byte)).(*[32]byte)
	return out0, nil
}

// PackAuthNonce is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x8b524b7a.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function authNonce(address owner) view returns(uint256 nonce)
func (epochAnchor *EpochAnchor) PackAuthNonce(owner common.Address) []byte {
	enc, err := epochAnchor.abi.Pack("authNonce", owner)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackAuthNonce is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x8b524b7a.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function authNonce(address owner) view returns(uint256 nonce)
func (epochAnchor *EpochAnchor) TryPackAuthNonce(owner common.Address) ([]byte, error) {
	return epochAnchor.abi.Pack("authNonce", owner)
}

// UnpackAuthNonce is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x8b524b7a.
//
// Solidity: function authNonce(address owner) view returns(uint256 nonce)
func (epochAnchor *EpochAnchor) UnpackAuthNonce(data []byte) (*big.Int, error) {
	out, err := epochAnchor.abi.Unpack("authNonce", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackAuthorizationDigest is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x09c9881f.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function authorizationDigest(address owner, address key, uint64 expiry, uint256 nonce, uint256 deadline) view returns(bytes32)
func (epochAnchor *EpochAnchor) PackAuthorizationDigest(owner common.Address, key common.Address, expiry uint64, nonce *big.Int, deadline *big.Int) []byte {
	enc, err := epochAnchor.abi.Pack("authorizationDigest", owner, key, expiry, nonce, deadline)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackAuthorizationDigest is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x09c9881f.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function authorizationDigest(address owner, address key, uint64 expiry, uint256 nonce, uint256 deadline) view returns(bytes32)
func (epochAnchor *EpochAnchor) TryPackAuthorizationDigest(owner common.Address, key common.Address, expiry uint64, nonce *big.Int, deadline *big.Int) ([]byte, error) {
	return epochAnchor.abi.Pack("authorizationDigest", owner, key, expiry, nonce, deadline)
}

// UnpackAuthorizationDigest is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x09c9881f.
//
// Solidity: function authorizationDigest(address owner, address key, uint64 expiry, uint256 nonce, uint256 deadline) view returns(bytes32)
func (epochAnchor *EpochAnchor) UnpackAuthorizationDigest(data []byte) ([32]byte, error) {
	out, err := epochAnchor.abi.Unpack("authorizationDigest", data)
	if err != nil {
		return *new([32]byte), err
	}
	out0 := *abi.ConvertType(out[0], new([32]byte)).(*[32]byte)
	return out0, nil
}

// PackCanWrite is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xedf2c387.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function canWrite(address owner, address writer) view returns(bool)
func (epochAnchor *EpochAnchor) PackCanWrite(owner common.Address, writer common.Address) []byte {
	enc, err := epochAnchor.abi.Pack("canWrite", owner, writer)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackCanWrite is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xedf2c387.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function canWrite(address owner, address writer) view returns(bool)
func (epochAnchor *EpochAnchor) TryPackCanWrite(owner common.Address, writer common.Address) ([]byte, error) {
	return epochAnchor.abi.Pack("canWrite", owner, writer)
}

// UnpackCanWrite is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xedf2c387.
//
// Solidity: function canWrite(address owner, address writer) view returns(bool)
func (epochAnchor *EpochAnchor) UnpackCanWrite(data []byte) (bool, error) {
	out, err := epochAnchor.abi.Unpack("canWrite", data)
	if err != nil {
		return *new(bool), err
	}
	out0 := *abi.ConvertType(out[0], new(bool)).(*bool)
	return out0, nil
}

// PackHead is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x24e8393d.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function head(address owner, bytes32 space) view returns(bytes32 digest, uint64 seq, uint64 blockNumber)
func (epochAnchor *EpochAnchor) PackHead(owner common.Address, space [32]byte) []byte {
	enc, err := epochAnchor.abi.Pack("head", owner, space)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackHead is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x24e8393d.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function head(address owner, bytes32 space) view returns(bytes32 digest, uint64 seq, uint64 blockNumber)
func (epochAnchor *EpochAnchor) TryPackHead(owner common.Address, space [32]byte) ([]byte, error) {
	return epochAnchor.abi.Pack("head", owner, space)
}

// HeadOutput serves as a container for the return parameters of contract
// method Head.
type HeadOutput struct {
	Digest      [32]byte
	Seq         uint64
	BlockNumber uint64
}

// UnpackHead is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x24e8393d.
//
// Solidity: function head(address owner, bytes32 space) view returns(bytes32 digest, uint64 seq, uint64 blockNumber)
func (epochAnchor *EpochAnchor) UnpackHead(data []byte) (HeadOutput, error) {
	out, err := epochAnchor.abi.Unpack("head", data)
	outstruct := new(HeadOutput)
	if err != nil {
		return *outstruct, err
	}
	outstruct.Digest = *abi.ConvertType(out[0], new([32]byte)).(*[32]byte)
	outstruct.Seq = *abi.ConvertType(out[1], new(uint64)).(*uint64)
	outstruct.BlockNumber = *abi.ConvertType(out[2], new(uint64)).(*uint64)
	return *outstruct, nil
}

// PackPush is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa2483825.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function push(address owner, bytes32 space, bytes32 prev, bytes ct) returns(bytes32 digest, uint64 seq)
func (epochAnchor *EpochAnchor) PackPush(owner common.Address, space [32]byte, prev [32]byte, ct []byte) []byte {
	enc, err := epochAnchor.abi.Pack("push", owner, space, prev, ct)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackPush is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa2483825.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function push(address owner, bytes32 space, bytes32 prev, bytes ct) returns(bytes32 digest, uint64 seq)
func (epochAnchor *EpochAnchor) TryPackPush(owner common.Address, space [32]byte, prev [32]byte, ct []byte) ([]byte, error) {
	return epochAnchor.abi.Pack("push", owner, space, prev, ct)
}

// PushOutput serves as a container for the return parameters of contract
// method Push.
type PushOutput struct {
	Digest [32]byte
	Seq    uint64
}

// UnpackPush is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xa2483825.
//
// Solidity: function push(address owner, bytes32 space, bytes32 prev, bytes ct) returns(bytes32 digest, uint64 seq)
func (epochAnchor *EpochAnchor) UnpackPush(data []byte) (PushOutput, error) {
	out, err := epochAnchor.abi.Unpack("push", data)
	outstruct := new(PushOutput)
	if err != nil {
		return *outstruct, err
	}
	outstruct.Digest = *abi.ConvertType(out[0], new([32]byte)).(*[32]byte)
	outstruct.Seq = *abi.ConvertType(out[1], new(uint64)).(*uint64)
	return *outstruct, nil
}

// PackRevokeSessionKey is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x84f4fc6a.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function revokeSessionKey(address key) returns()
func (epochAnchor *EpochAnchor) PackRevokeSessionKey(key common.Address) []byte {
	enc, err := epochAnchor.abi.Pack("revokeSessionKey", key)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackRevokeSessionKey is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x84f4fc6a.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function revokeSessionKey(address key) returns()
func (epochAnchor *EpochAnchor) TryPackRevokeSessionKey(key common.Address) ([]byte, error) {
	return epochAnchor.abi.Pack("revokeSessionKey", key)
}

// PackSessionKeyExpiry is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x6844536f.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function sessionKeyExpiry(address owner, address key) view returns(uint64 expiry)
func (epochAnchor *EpochAnchor) PackSessionKeyExpiry(owner common.Address, key common.Address) []byte {
	enc, err := epochAnchor.abi.Pack("sessionKeyExpiry", owner, key)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSessionKeyExpiry is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x6844536f.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function sessionKeyExpiry(address owner, address key) view returns(uint64 expiry)
func (epochAnchor *EpochAnchor) TryPackSessionKeyExpiry(owner common.Address, key common.Address) ([]byte, error) {
	return epochAnchor.abi.Pack("sessionKeyExpiry", owner, key)
}

// UnpackSessionKeyExpiry is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x6844536f.
//
// Solidity: function sessionKeyExpiry(address owner, address key) view returns(uint64 expiry)
func (epochAnchor *EpochAnchor) UnpackSessionKeyExpiry(data []byte) (uint64, error) {
	out, err := epochAnchor.abi.Unpack("sessionKeyExpiry", data)
	if err != nil {
		return *new(uint64), err
	}
	out0 := *abi.ConvertType(out[0], new(uint64)).(*uint64)
	return out0, nil
}

// PackSetSessionKey is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x580da310.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function setSessionKey(address key, uint64 expiry) returns()
func (epochAnchor *EpochAnchor) PackSetSessionKey(key common.Address, expiry uint64) []byte {
	enc, err := epochAnchor.abi.Pack("setSessionKey", key, expiry)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSetSessionKey is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x580da310.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function setSessionKey(address key, uint64 expiry) returns()
func (epochAnchor *EpochAnchor) TryPackSetSessionKey(key common.Address, expiry uint64) ([]byte, error) {
	return epochAnchor.abi.Pack("setSessionKey", key, expiry)
}

// PackSetSessionKeyBySig is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x5247dcff.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function setSessionKeyBySig(address owner, address key, uint64 expiry, uint256 deadline, bytes signature) returns()
func (epochAnchor *EpochAnchor) PackSetSessionKeyBySig(owner common.Address, key common.Address, expiry uint64, deadline *big.Int, signature []byte) []byte {
	enc, err := epochAnchor.abi.Pack("setSessionKeyBySig", owner, key, expiry, deadline, signature)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSetSessionKeyBySig is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x5247dcff.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function setSessionKeyBySig(address owner, address key, uint64 expiry, uint256 deadline, bytes signature) returns()
func (epochAnchor *EpochAnchor) TryPackSetSessionKeyBySig(owner common.Address, key common.Address, expiry uint64, deadline *big.Int, signature []byte) ([]byte, error) {
	return epochAnchor.abi.Pack("setSessionKeyBySig", owner, key, expiry, deadline, signature)
}

// PackSetStartSeq is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x15e2058b.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function setStartSeq(bytes32 space, uint64 seq) returns()
func (epochAnchor *EpochAnchor) PackSetStartSeq(space [32]byte, seq uint64) []byte {
	enc, err := epochAnchor.abi.Pack("setStartSeq", space, seq)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSetStartSeq is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x15e2058b.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function setStartSeq(bytes32 space, uint64 seq) returns()
func (epochAnchor *EpochAnchor) TryPackSetStartSeq(space [32]byte, seq uint64) ([]byte, error) {
	return epochAnchor.abi.Pack("setStartSeq", space, seq)
}

// PackStartSeq is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x1408deb9.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function startSeq(address owner, bytes32 space) view returns(uint64 seq)
func (epochAnchor *EpochAnchor) PackStartSeq(owner common.Address, space [32]byte) []byte {
	enc, err := epochAnchor.abi.Pack("startSeq", owner, space)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackStartSeq is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x1408deb9.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function startSeq(address owner, bytes32 space) view returns(uint64 seq)
func (epochAnchor *EpochAnchor) TryPackStartSeq(owner common.Address, space [32]byte) ([]byte, error) {
	return epochAnchor.abi.Pack("startSeq", owner, space)
}

// UnpackStartSeq is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x1408deb9.
//
// Solidity: function startSeq(address owner, bytes32 space) view returns(uint64 seq)
func (epochAnchor *EpochAnchor) UnpackStartSeq(data []byte) (uint64, error) {
	out, err := epochAnchor.abi.Unpack("startSeq", data)
	if err != nil {
		return *new(uint64), err
	}
	out0 := *abi.ConvertType(out[0], new(uint64)).(*uint64)
	return out0, nil
}

// EpochAnchorEpoch represents a Epoch event raised by the EpochAnchor contract.
type EpochAnchorEpoch struct {
	Owner     common.Address
	Space     [32]byte
	Writer    common.Address
	Seq       uint64
	Prev      [32]byte
	Digest    [32]byte
	PrevBlock uint64
	Raw       *types.Log // Blockchain specific contextual infos
}

const EpochAnchorEpochEventName = "Epoch"

// ContractEventName returns the user-defined event name.
func (EpochAnchorEpoch) ContractEventName() string {
	return EpochAnchorEpochEventName
}

// UnpackEpochEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event Epoch(address indexed owner, bytes32 indexed space, address indexed writer, uint64 seq, bytes32 prev, bytes32 digest, uint64 prevBlock)
func (epochAnchor *EpochAnchor) UnpackEpochEvent(log *types.Log) (*EpochAnchorEpoch, error) {
	event := "Epoch"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != epochAnchor.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(EpochAnchorEpoch)
	if len(log.Data) > 0 {
		if err := epochAnchor.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range epochAnchor.abi.Events[event].Inputs {
		if arg.Indexed {
			indexed = append(indexed, arg)
		}
	}
	if err := abi.ParseTopics(out, indexed, log.Topics[1:]); err != nil {
		return nil, err
	}
	out.Raw = log
	return out, nil
}

// EpochAnchorSessionKeySet represents a SessionKeySet event raised by the EpochAnchor contract.
type EpochAnchorSessionKeySet struct {
	Owner  common.Address
	Key    common.Address
	Expiry uint64
	Raw    *types.Log // Blockchain specific contextual infos
}

const EpochAnchorSessionKeySetEventName = "SessionKeySet"

// ContractEventName returns the user-defined event name.
func (EpochAnchorSessionKeySet) ContractEventName() string {
	return EpochAnchorSessionKeySetEventName
}

// UnpackSessionKeySetEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event SessionKeySet(address indexed owner, address indexed key, uint64 expiry)
func (epochAnchor *EpochAnchor) UnpackSessionKeySetEvent(log *types.Log) (*EpochAnchorSessionKeySet, error) {
	event := "SessionKeySet"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != epochAnchor.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(EpochAnchorSessionKeySet)
	if len(log.Data) > 0 {
		if err := epochAnchor.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range epochAnchor.abi.Events[event].Inputs {
		if arg.Indexed {
			indexed = append(indexed, arg)
		}
	}
	if err := abi.ParseTopics(out, indexed, log.Topics[1:]); err != nil {
		return nil, err
	}
	out.Raw = log
	return out, nil
}

// EpochAnchorStartSeqSet represents a StartSeqSet event raised by the EpochAnchor contract.
type EpochAnchorStartSeqSet struct {
	Owner common.Address
	Space [32]byte
	Seq   uint64
	Raw   *types.Log // Blockchain specific contextual infos
}

const EpochAnchorStartSeqSetEventName = "StartSeqSet"

// ContractEventName returns the user-defined event name.
func (EpochAnchorStartSeqSet) ContractEventName() string {
	return EpochAnchorStartSeqSetEventName
}

// UnpackStartSeqSetEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event StartSeqSet(address indexed owner, bytes32 indexed space, uint64 seq)
func (epochAnchor *EpochAnchor) UnpackStartSeqSetEvent(log *types.Log) (*EpochAnchorStartSeqSet, error) {
	event := "StartSeqSet"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != epochAnchor.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(EpochAnchorStartSeqSet)
	if len(log.Data) > 0 {
		if err := epochAnchor.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range epochAnchor.abi.Events[event].Inputs {
		if arg.Indexed {
			indexed = append(indexed, arg)
		}
	}
	if err := abi.ParseTopics(out, indexed, log.Topics[1:]); err != nil {
		return nil, err
	}
	out.Raw = log
	return out, nil
}

// UnpackError attempts to decode the provided error data using user-defined
// error definitions.
func (epochAnchor *EpochAnchor) UnpackError(raw []byte) (any, error) {
	if bytes.Equal(raw[:4], epochAnchor.abi.Errors["AuthorizationExpired"].ID.Bytes()[:4]) {
		return epochAnchor.UnpackAuthorizationExpiredError(raw[4:])
	}
	if bytes.Equal(raw[:4], epochAnchor.abi.Errors["BadSignature"].ID.Bytes()[:4]) {
		return epochAnchor.UnpackBadSignatureError(raw[4:])
	}
	if bytes.Equal(raw[:4], epochAnchor.abi.Errors["EmptyCiphertext"].ID.Bytes()[:4]) {
		return epochAnchor.UnpackEmptyCiphertextError(raw[4:])
	}
	if bytes.Equal(raw[:4], epochAnchor.abi.Errors["NotAuthorized"].ID.Bytes()[:4]) {
		return epochAnchor.UnpackNotAuthorizedError(raw[4:])
	}
	if bytes.Equal(raw[:4], epochAnchor.abi.Errors["SeqNotMonotone"].ID.Bytes()[:4]) {
		return epochAnchor.UnpackSeqNotMonotoneError(raw[4:])
	}
	if bytes.Equal(raw[:4], epochAnchor.abi.Errors["StaleHead"].ID.Bytes()[:4]) {
		return epochAnchor.UnpackStaleHeadError(raw[4:])
	}
	return nil, errors.New("Unknown error")
}

// EpochAnchorAuthorizationExpired represents a AuthorizationExpired error raised by the EpochAnchor contract.
type EpochAnchorAuthorizationExpired struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error AuthorizationExpired()
func EpochAnchorAuthorizationExpiredErrorID() common.Hash {
	return common.HexToHash("0x0f05f5bfa72101059ba5651871d96682a3f2a996379bb3603e7e1b277b73f5ac")
}

// UnpackAuthorizationExpiredError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error AuthorizationExpired()
func (epochAnchor *EpochAnchor) UnpackAuthorizationExpiredError(raw []byte) (*EpochAnchorAuthorizationExpired, error) {
	out := new(EpochAnchorAuthorizationExpired)
	if err := epochAnchor.abi.UnpackIntoInterface(out, "AuthorizationExpired", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// EpochAnchorBadSignature represents a BadSignature error raised by the EpochAnchor contract.
type EpochAnchorBadSignature struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error BadSignature()
func EpochAnchorBadSignatureErrorID() common.Hash {
	return common.HexToHash("0x5cd5d2335541c4f2ed05fbe44f397e8b79f8e2333157122d2dab06e378ef7685")
}

// UnpackBadSignatureError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error BadSignature()
func (epochAnchor *EpochAnchor) UnpackBadSignatureError(raw []byte) (*EpochAnchorBadSignature, error) {
	out := new(EpochAnchorBadSignature)
	if err := epochAnchor.abi.UnpackIntoInterface(out, "BadSignature", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// EpochAnchorEmptyCiphertext represents a EmptyCiphertext error raised by the EpochAnchor contract.
type EpochAnchorEmptyCiphertext struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error EmptyCiphertext()
func EpochAnchorEmptyCiphertextErrorID() common.Hash {
	return common.HexToHash("0xdbe0cd78af56659a52d8244121fb66f83380f1db5494cf1a6989717a6eb61f79")
}

// UnpackEmptyCiphertextError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error EmptyCiphertext()
func (epochAnchor *EpochAnchor) UnpackEmptyCiphertextError(raw []byte) (*EpochAnchorEmptyCiphertext, error) {
	out := new(EpochAnchorEmptyCiphertext)
	if err := epochAnchor.abi.UnpackIntoInterface(out, "EmptyCiphertext", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// EpochAnchorNotAuthorized represents a NotAuthorized error raised by the EpochAnchor contract.
type EpochAnchorNotAuthorized struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error NotAuthorized()
func EpochAnchorNotAuthorizedErrorID() common.Hash {
	return common.HexToHash("0xea8e4eb51685727b38a21cb154eb3ebd023f607c62908e0f6f0b645d782af2a4")
}

// UnpackNotAuthorizedError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error NotAuthorized()
func (epochAnchor *EpochAnchor) UnpackNotAuthorizedError(raw []byte) (*EpochAnchorNotAuthorized, error) {
	out := new(EpochAnchorNotAuthorized)
	if err := epochAnchor.abi.UnpackIntoInterface(out, "NotAuthorized", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// EpochAnchorSeqNotMonotone represents a SeqNotMonotone error raised by the EpochAnchor contract.
type EpochAnchorSeqNotMonotone struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error SeqNotMonotone()
func EpochAnchorSeqNotMonotoneErrorID() common.Hash {
	return common.HexToHash("0x4863002e90dbbf30eee3ee3e4f9338e2b9a08e5d6f511e5250e6b4a4574232f9")
}

// UnpackSeqNotMonotoneError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error SeqNotMonotone()
func (epochAnchor *EpochAnchor) UnpackSeqNotMonotoneError(raw []byte) (*EpochAnchorSeqNotMonotone, error) {
	out := new(EpochAnchorSeqNotMonotone)
	if err := epochAnchor.abi.UnpackIntoInterface(out, "SeqNotMonotone", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// EpochAnchorStaleHead represents a StaleHead error raised by the EpochAnchor contract.
type EpochAnchorStaleHead struct {
	Expected [32]byte
	Got      [32]byte
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error StaleHead(bytes32 expected, bytes32 got)
func EpochAnchorStaleHeadErrorID() common.Hash {
	return common.HexToHash("0x7fe83496d95154ab8a42c1616b38dad0546c5359a6ed8e21c531cac045bf53c8")
}

// UnpackStaleHeadError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error StaleHead(bytes32 expected, bytes32 got)
func (epochAnchor *EpochAnchor) UnpackStaleHeadError(raw []byte) (*EpochAnchorStaleHead, error) {
	out := new(EpochAnchorStaleHead)
	if err := epochAnchor.abi.UnpackIntoInterface(out, "StaleHead", raw); err != nil {
		return nil, err
	}
	return out, nil
}

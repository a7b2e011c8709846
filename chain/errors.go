package chain

import (
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"
)

// Errors the contract raises, matchable with errors.Is on any error that carries a
// *RevertError (for example one from PreparePush).
var (
	ErrNotAuthorized        = errors.New("NotAuthorized")
	ErrEmptyCiphertext      = errors.New("EmptyCiphertext")
	ErrStaleHead            = errors.New("StaleHead")
	ErrAuthorizationExpired = errors.New("AuthorizationExpired")
	ErrBadSignature         = errors.New("BadSignature")
	ErrSeqNotMonotone       = errors.New("SeqNotMonotone")
)

var contractErrors = map[string]error{
	"NotAuthorized":        ErrNotAuthorized,
	"EmptyCiphertext":      ErrEmptyCiphertext,
	"StaleHead":            ErrStaleHead,
	"AuthorizationExpired": ErrAuthorizationExpired,
	"BadSignature":         ErrBadSignature,
	"SeqNotMonotone":       ErrSeqNotMonotone,
}

var (
	// ErrWouldRevert wraps every gas-estimate failure that is a revert: the transaction was
	// not sent.
	ErrWouldRevert = errors.New("transaction would revert")
	// ErrTxFailed: a transaction was mined with status 0.
	ErrTxFailed = errors.New("transaction failed")
	// ErrNoContract: there is no code at the contract address.
	ErrNoContract = errors.New("no contract at this address")

	// Reading epochs back: what FetchBlobs and WaitPush refuse, and ErrBrokenChain for a walk
	// whose epochs do not link.
	ErrNotPush          = errors.New("transaction is not a push call")
	ErrWrongContract    = errors.New("transaction is not addressed to the contract")
	ErrCalldataMismatch = errors.New("push calldata does not match the Epoch event")
	ErrDigestMismatch   = errors.New("keccak256 of the ciphertext does not match the Epoch event digest")
	ErrTxNotFound       = errors.New("transaction not found")
	ErrTxMismatch       = errors.New("RPC returned a different transaction than asked for")
	ErrBrokenChain      = errors.New("epochs do not chain")
	ErrEventMismatch    = errors.New("the Epoch event does not match what was sent")
	ErrNoEvent          = errors.New("no Epoch event")
)

// ErrUnreachable: the RPC could not be reached (connections refused, answers lost or late)
// after the bounded retries of one call.
var ErrUnreachable = errors.New("cannot reach the RPC")

// UnreachableError is a transport failure that outlasted the retries. It keeps the last
// cause (errors.Is(err, syscall.ECONNREFUSED) still holds) and matches ErrUnreachable.
// Endpoint is the RPC as scheme://host (never its path or query, which may hold a key).
type UnreachableError struct {
	Err      error
	Endpoint string
}

func (e *UnreachableError) Error() string {
	if e.Endpoint == "" {
		return "cannot reach the RPC: " + e.Err.Error()
	}
	return "cannot reach the RPC " + e.Endpoint + ": " + e.Err.Error()
}
func (e *UnreachableError) Unwrap() error        { return e.Err }
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// namedError carries its own message and matches its sentinel with errors.Is, for
// messages that already say what the sentinel says.
type namedError struct {
	sentinel error
	msg      string
}

func (e *namedError) Error() string { return e.msg }
func (e *namedError) Unwrap() error { return e.sentinel }

// NoEventError: the exact-block log query did not return the Epoch event of the wanted
// seq. The RPC may be pruned, or lying. errors.Is(err, ErrNoEvent) holds.
type NoEventError struct {
	Seq   uint64
	Block uint64
}

func (e *NoEventError) Error() string {
	return fmt.Sprintf("no Epoch event for seq %d at block %d", e.Seq, e.Block)
}

func (e *NoEventError) Is(target error) bool { return target == ErrNoEvent }

// RevertError is a decoded revert: one of EpochAnchor's custom errors, a Solidity
// Error(string) or Panic(uint256), or raw data that matched none of them.
type RevertError struct {
	Name     string   // "StaleHead", "Error", "Panic"; empty when the data did not decode
	Args     []any    // decoded arguments, in order
	ArgNames []string // their names in the ABI
	Data     []byte   // the raw revert data
}

func (e *RevertError) Error() string {
	if e.Name == "" {
		if len(e.Data) == 0 {
			return "execution reverted without data"
		}
		return "execution reverted with unknown data " + hexutil.Encode(e.Data)
	}
	parts := make([]string, len(e.Args))
	for i, a := range e.Args {
		v := formatArg(a)
		if i < len(e.ArgNames) && e.ArgNames[i] != "" {
			v = e.ArgNames[i] + " " + v
		}
		parts[i] = v
	}
	return e.Name + "(" + strings.Join(parts, ", ") + ")"
}

// Is makes errors.Is(err, ErrStaleHead) and the like work.
func (e *RevertError) Is(target error) bool {
	s, ok := contractErrors[e.Name]
	return ok && s == target
}

func formatArg(a any) string {
	switch v := a.(type) {
	case [32]byte:
		return common.Hash(v).Hex()
	case common.Address:
		return v.Hex()
	case string:
		return fmt.Sprintf("%q", v)
	case []byte:
		return hexutil.Encode(v)
	default:
		return fmt.Sprint(v)
	}
}

// DecodeRevert decodes revert data with the EpochAnchor ABI.
func DecodeRevert(data []byte) *RevertError {
	e := &RevertError{Data: data}
	if len(data) < 4 {
		return e
	}
	for name, ae := range anchorABI.Errors {
		if string(ae.ID[:4]) != string(data[:4]) {
			continue
		}
		args, err := ae.Inputs.Unpack(data[4:])
		if err != nil {
			return e
		}
		e.Name, e.Args = name, args
		for _, in := range ae.Inputs {
			e.ArgNames = append(e.ArgNames, in.Name)
		}
		return e
	}
	name := ""
	switch hexutil.Encode(data[:4]) {
	case "0x08c379a0":
		name = "Error"
	case "0x4e487b71":
		name = "Panic"
	}
	if name != "" {
		if reason, err := abi.UnpackRevert(data); err == nil {
			e.Name, e.Args = name, []any{reason}
		}
	}
	return e
}

// revertFromError extracts the revert carried by a JSON-RPC error (eth_call or
// eth_estimateGas), or returns nil when err is not a revert.
func revertFromError(err error) *RevertError {
	var de rpc.DataError
	if errors.As(err, &de) {
		if s, ok := de.ErrorData().(string); ok {
			if data, derr := hexutil.Decode(s); derr == nil {
				return DecodeRevert(data)
			}
		}
	}
	if strings.Contains(err.Error(), "execution reverted") {
		return &RevertError{}
	}
	return nil
}

// ErrInsufficientFunds: the session key cannot pay for a transaction.
var ErrInsufficientFunds = errors.New("insufficient funds")

// FundsError is a transaction the node refused because its sender cannot pay for it: the
// address to fund, what it holds and what the transaction may cost at most (gas limit times
// fee cap, plus value). errors.Is(err, ErrInsufficientFunds) holds.
type FundsError struct {
	Address    common.Address
	Have, Want *big.Int
}

func (e *FundsError) Error() string {
	short := new(big.Int).Sub(e.Want, e.Have)
	if short.Sign() < 0 {
		short.SetInt64(0)
	}
	return fmt.Sprintf("the session key %s holds %s ETH, %s ETH short of the %s ETH this transaction may cost: fund %s with at least %s ETH",
		e.Address.Hex(), FormatETH(e.Have), FormatETH(short), FormatETH(e.Want), e.Address.Hex(), FormatETH(short))
}

func (e *FundsError) Is(target error) bool { return target == ErrInsufficientFunds }

// Endpoint is an RPC URL as scheme://host: its path and query, which may carry an API key,
// are left out.
func Endpoint(rpcURL string) string {
	u, err := url.Parse(rpcURL)
	if err != nil || u.Host == "" {
		return "<unparsable RPC URL>"
	}
	return u.Scheme + "://" + u.Host
}

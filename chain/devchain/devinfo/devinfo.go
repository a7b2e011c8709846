// Package devinfo holds what a client of the development chain needs to know about it,
// without the go-ethereum node that runs it (package devchain): kintfs links this package
// and starts the node as a separate program, kintfs-devchain, so a mount's executable
// carries none of the node's code.
package devinfo

import (
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// ChainID is the chain id of the dev chain (go-ethereum's dev-mode id).
const ChainID = 1337

// DefaultMaxLead is the MaxLead of the dev chains kintfs runs for a user: a burst of a few
// blocks (a push and its confirmations) is sealed at once, and block times stay within a
// few seconds of the wall clock under any load.
const DefaultMaxLead = 2 * time.Second

// InfoFile is the name of the file a running dev chain writes into its data directory.
const InfoFile = "devchain.json"

// Account is a funded dev account. The keys are derived from a fixed seed and are
// public: never send anything of value to them.
type Account struct {
	Address    string `json:"address"`
	PrivateKey string `json:"private_key"`
}

// Info is what a client needs, written to InfoFile and printed by kintfs-devchain.
type Info struct {
	RPC      string    `json:"rpc"`
	WS       string    `json:"ws"` // the same JSON-RPC over websocket (eth_subscribe)
	ChainID  uint64    `json:"chain_id"`
	Contract string    `json:"contract"`
	Accounts []Account `json:"accounts"`
}

// Program is the name of the executable that runs the dev chain; kintfs looks for it beside
// its own executable, then on PATH.
const Program = "kintfs-devchain"

// Options are the command line of Program.
type Options struct {
	DataDir string        // where the chain is kept; required
	HTTP    string        // the JSON-RPC listen address, loopback only
	Period  uint64        // seconds between blocks; 0 seals a block per transaction
	ChainID uint64        // fixed when the chain is created
	MaxLead time.Duration // how far block times may run ahead of the wall clock; 0: no bound
}

// DefaultOptions are the options of a dev chain kintfs runs for a user, without its DataDir.
func DefaultOptions() Options {
	return Options{HTTP: "127.0.0.1:8545", ChainID: ChainID, MaxLead: DefaultMaxLead}
}

// Args are the arguments that give Program these options.
func (o Options) Args() []string {
	return []string{"--datadir", o.DataDir, "--http", o.HTTP, "--period", strconv.FormatUint(o.Period, 10),
		"--chain-id", strconv.FormatUint(o.ChainID, 10), "--max-lead", o.MaxLead.String()}
}

// Flags defines the options on fs, with o's values as their defaults.
func (o *Options) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "datadir", o.DataDir, "where the chain is kept (default KINT_HOME/devchain)")
	fs.StringVar(&o.HTTP, "http", o.HTTP, "JSON-RPC listen address (loopback only)")
	fs.Uint64Var(&o.Period, "period", o.Period, "seconds between blocks (0: a block per transaction)")
	fs.Uint64Var(&o.ChainID, "chain-id", o.ChainID, "the chain id, fixed when the chain is created (8453 lets tools bound to Base's id read a dev vault; it is still not Base)")
	fs.DurationVar(&o.MaxLead, "max-lead", o.MaxLead, "how far block times may run ahead of the wall clock before sealing waits for it (0: no bound)")
}

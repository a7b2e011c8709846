package devchain

import (
	"github.com/ethereum/go-ethereum/params"
)

// ChainConfig returns the fork configuration of the dev chain: go-ethereum's dev-mode
// configuration (every fork through Osaka active from genesis, so EIP-7623's calldata floor
// applies) without its experimental Bogota fork, whose instruction set reprices storage
// access and would make gas on the dev chain differ from a production chain.
func ChainConfig() *params.ChainConfig {
	cfg := *params.AllDevChainProtocolChanges
	cfg.BogotaTime = nil
	return &cfg
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain/devchain/devinfo"
	"kintfs/replica"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
)

// A cold start (no watermark yet) trusts no single RPC: a second, independent one must give
// the same head, as kint requires. The dev chain is exempt: it has one node.

const (
	baseRPC       = "https://mainnet.base.org"
	baseRPCSecond = "https://base-rpc.publicnode.com"
)

// errSingleRPC refuses a cold start that has no second opinion.
var errSingleRPC = errors.New("cold start needs a second, independent RPC")

// secondRPC is KINT_RPC_URL_2, else the public Base endpoint that is not the primary.
func secondRPC(set settings, primary string) string {
	if u := set.given("KINT_RPC_URL_2"); u != "" {
		return u
	}
	if sameEndpoint(primary, baseRPC) {
		return baseRPCSecond
	}
	return baseRPC
}

// sameEndpoint: two URLs name one endpoint when host, port and path match (a trailing slash
// aside).
func sameEndpoint(a, b string) bool {
	ua, erra := url.Parse(a)
	ub, errb := url.Parse(b)
	if erra != nil || errb != nil {
		return a == b
	}
	return strings.EqualFold(ua.Host, ub.Host) && strings.TrimSuffix(ua.Path, "/") == strings.TrimSuffix(ub.Path, "/")
}

// redactURL keeps an RPC URL's scheme, host and port: paths and queries carry API keys.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "<unparsable URL>"
	}
	if p.Path != "" && p.Path != "/" || p.RawQuery != "" {
		return p.Scheme + "://" + p.Host + "/<redacted>"
	}
	return p.Scheme + "://" + p.Host
}

// coldStartCheck is the check for a vault on chainID, nil on the dev chain.
func coldStartCheck(set settings, v *homedir.VaultConfig) func(ctx context.Context, head vault.Head) error {
	if v.ChainID == devinfo.ChainID {
		return nil
	}
	return func(ctx context.Context, head vault.Head) error {
		return checkSecondRPC(ctx, set, v.RPC, v.Contract, v.ChainID, v.Owner, v.Space, head)
	}
}

// checkSecondRPC asks the second RPC for the head and compares it with the primary's.
// KINT_ALLOW_SINGLE_RPC=1 goes ahead when there is no second one to ask.
func checkSecondRPC(ctx context.Context, set settings, primary string, contract common.Address, chainID uint64, owner common.Address, space common.Hash, head vault.Head) error {
	allowSingle := set.on("KINT_ALLOW_SINGLE_RPC")
	second := secondRPC(set, primary)
	if sameEndpoint(primary, second) {
		if allowSingle {
			return nil
		}
		return fmt.Errorf("%w, and KINT_RPC_URL_2 resolves to the same endpoint as the primary (KINT_ALLOW_SINGLE_RPC=1 accepts one)", errSingleRPC)
	}
	c, err := dialChain(ctx, set, second, contract)
	if err != nil {
		if allowSingle {
			return nil
		}
		return fmt.Errorf("%w: the second RPC %s cannot be reached (set KINT_RPC_URL_2, or KINT_ALLOW_SINGLE_RPC=1 to accept one)", errSingleRPC, redactURL(second))
	}
	defer c.Close()
	if c.ChainID() != chainID {
		return fmt.Errorf("%w: the second RPC %s serves chain %d, the vault lives on chain %d", replica.ErrStaleRPC, redactURL(second), c.ChainID(), chainID)
	}
	h, err := c.Head(ctx, owner, space)
	if err != nil {
		return fmt.Errorf("%w: the second RPC %s: read head: %v", errSingleRPC, redactURL(second), err)
	}
	if h.Seq != head.Seq || h.Digest != head.Digest {
		return fmt.Errorf("%w: on a cold start the two RPCs disagree on the head: %s says seq %d (%s), %s says seq %d (%s)",
			replica.ErrStaleRPC, redactURL(primary), head.Seq, head.Digest.Hex()[:14], redactURL(second), h.Seq, h.Digest.Hex()[:14])
	}
	return nil
}

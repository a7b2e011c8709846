package main

import (
	"context"

	"kintfs/chain"
	"kintfs/replica"
	"kintfs/replica/homedir"
)

// liveURL is the websocket a mount subscribes on: KINT_WS_URL, else the RPC URL itself when
// it is ws:// or wss://; "" when there is none (the mount polls).
func liveURL(set settings, v *homedir.VaultConfig) string {
	if u := set.given("KINT_WS_URL"); u != "" {
		return u
	}
	if chain.IsWebsocketURL(v.RPC) {
		return v.RPC
	}
	return ""
}

// liveSubscriber subscribes to the vault's Epoch logs on wsURL; nil when wsURL is "".
func liveSubscriber(v *homedir.VaultConfig, wsURL string) func(ctx context.Context) (replica.Subscription, error) {
	if wsURL == "" {
		return nil
	}
	return func(ctx context.Context) (replica.Subscription, error) {
		sub, err := chain.SubscribeEpochs(ctx, wsURL, v.ChainID, v.Contract, v.Owner, v.Space)
		if err != nil {
			return nil, err
		}
		return sub, nil
	}
}

package main

import (
	"context"
	"fmt"

	"kintfs/replica"
	"kintfs/replica/vault"
)

// vault-model shows or sets what the vault may anchor: kint (the default: only what kint's
// store can hold) or full (the wire format's whole model, for a vault kint never opens). It
// is kept in vault.json; a running mount changes at once.
func init() {
	register(&command{
		name:  "vault-model",
		usage: "[kint | full]",
		short: "show or set what the vault may anchor: kint (default: what kint's store can hold) or full (status and meta on every tier, deleting any row but the journal's)",
		run:   runVaultModel,
	})
}

func runVaultModel(ctx context.Context, cio *cmdIO, args []string) error {
	if len(args) > 1 || len(args) == 1 && args[0] != vault.ModelKint && args[0] != vault.ModelFull {
		return usagef("vault-model [kint | full]")
	}
	if e := cio.env; e != nil {
		// inside the mount: the engine changes with vault.json
		if len(args) == 1 {
			if err := e.rep.SetVaultModel(args[0]); err != nil {
				return err
			}
		}
		fmt.Fprintln(cio.out, e.rep.Model())
		return nil
	}
	home, err := defaultHome(cio.set)
	if err != nil {
		return err
	}
	if len(args) == 1 {
		if err := replica.SaveVaultModel(home, args[0]); err != nil {
			return err
		}
	}
	v, err := home.LoadVault()
	if err != nil {
		return err
	}
	fmt.Fprintln(cio.out, modelName(v.Model))
	return nil
}

// modelName is the vault model vault.json names ("" is kint).
func modelName(m string) string {
	if m == "" {
		return vault.ModelKint
	}
	return m
}

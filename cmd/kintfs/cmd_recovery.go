package main

import (
	"context"
	"errors"
	"fmt"

	"kintfs/replica"
	"kintfs/replica/homedir"
	"kintfs/seal"
)

func init() {
	register(&command{
		name:  "recovery-code",
		short: "write the recovery file again from the cached data key (KINT_OFFLINE=1: without reading the head)",
		run:   runRecoveryCode,
	})
}

// offline is KINT_OFFLINE=1: the commands kint lets skip reading the chain do so.
func offline(set settings) bool { return set.on("KINT_OFFLINE") }

// offlineIn is offline for a command that may run inside a mount, where the caller's
// KINT_OFFLINE counts, not the mount's own.
func offlineIn(ctx context.Context, cio *cmdIO) bool {
	if c := cio; c.env != nil {
		return c.offline
	}
	return offline(cio.set)
}

func runRecoveryCode(ctx context.Context, cio *cmdIO, args []string) error {
	if len(args) > 0 {
		return usagef("recovery-code takes no arguments")
	}
	home, v, err := loadHomeVault(cio.set)
	if err != nil {
		return err
	}
	dek, err := home.LoadDEK(v.Space)
	if errors.Is(err, homedir.ErrKeyMissing) || errors.Is(err, homedir.ErrKeyExpired) {
		return usagef("no data key cached on this machine: kintfs init first (%v)", err)
	}
	if err != nil {
		return err
	}
	id := seal.DEKID(dek)
	if offline(cio.set) {
		// the vault config names the key this machine last sealed or adopted
		if v.DekID != fmt.Sprintf("%x", id[:]) {
			return usagef("the cached data key is not the vault's current key %s: kintfs init again first", v.DekID)
		}
	} else {
		c, err := dialVaultChain(ctx, cio.set, v)
		if err != nil {
			return fmt.Errorf("%w: %v (KINT_OFFLINE=1 checks against the vault config instead)", replica.ErrOffline, err)
		}
		defer c.Close()
		headID, seq, err := replica.HeadDekID(ctx, c, v.Owner, v.Space)
		if err != nil {
			return err
		}
		if seq > 0 && headID != id {
			return usagef("the cached data key %x is not the key %x epoch %d was sealed with (a rekey happened elsewhere): kintfs init again first", id[:], headID[:], seq)
		}
	}
	path, err := home.WriteRecoveryFile(v, dek)
	if err != nil {
		return err
	}
	fmt.Fprintf(cio.out, "wrote the recovery code to %s (mode 0600): copy it off this machine\n", path)
	return nil
}

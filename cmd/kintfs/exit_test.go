package main

import (
	"fmt"
	"testing"

	"kintfs/chain"
	"kintfs/replica"
	"kintfs/seal"
)

// TestExitCodesOfSizeRefusals: compact over the single-epoch cap is a refusal (2), as the
// README's table says; a row too large for one epoch is a push refusal (5).
func TestExitCodesOfSizeRefusals(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("push: %w", &seal.SnapshotTooLargeError{NRows: 3, Size: 120000}), exitUsage},
		{fmt.Errorf("push: %w", &seal.RowTooLargeError{Row: seal.Row{Tier: "state", Key: "w"}}), exitRefused},
		{fmt.Errorf("push: %w", &seal.RowTooLargeError{Row: seal.Row{Tier: "state", Key: "w"}, Plain: 50 << 20}), exitRefused},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.err, got, tc.want)
		}
	}
}

// TestExitCodesMovedAndStale: kint's 4 (the chain moved, a fork) and 6 (a stale or lying
// RPC), through the wrapping the replica and the cold-start check put around them, and a
// code a mount decided passed through as it is.
func TestExitCodesMovedAndStale(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("push: %w", replica.ErrChainMoved), exitMoved},
		{fmt.Errorf("push: %w: %w", replica.ErrChainMoved, chain.ErrStaleHead), exitMoved},
		{fmt.Errorf("pull: %w", replica.ErrFork), exitMoved},
		{fmt.Errorf("pull: %w: the RPC says the head is seq 1", replica.ErrStaleRPC), exitStaleRPC},
		{fmt.Errorf("walk: %w", chain.ErrNoEvent), exitStaleRPC},
		{exitCodeError{code: exitMoved, quiet: true}, exitMoved},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.err, got, tc.want)
		}
	}
}

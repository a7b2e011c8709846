package main

import (
	"fmt"
	"testing"

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

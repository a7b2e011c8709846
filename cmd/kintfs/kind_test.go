package main

import (
	"syscall"
	"testing"

	"kintfs/fs"
	"kintfs/replica"
)

// TestCtlErrnoReadsBackItsCause: for each cause with an errno, the errno a ctl writer gets,
// read back by unmount, exits as the CLI exits on the cause itself.
func TestCtlErrnoReadsBackItsCause(t *testing.T) {
	for k := replica.KindUnknown + 1; k <= replica.KindHistoryIncomplete; k++ {
		en := fs.ErrnoOfKind(k)
		if en == 0 || en == syscall.EROFS {
			continue // no errno of its own; a read-only mount has nothing to anchor
		}
		want, ok := exitCodes[k]
		if !ok {
			want = exitFailure
		}
		if fs.KindOfErrno(en) != k {
			continue // an errno two causes share (macOS: EPERM), read back as the ctl refusal
		}
		if got := exitCode(ctlExitError(en)); got != want {
			t.Errorf("kind %d: errno %v exits %d through unmount, want %d", k, en, got, want)
		}
	}
}

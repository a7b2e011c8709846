package seal

import (
	"errors"
	"strings"
	"testing"
)

// A plaintext past MaxPlaintext might compress into a bucket, but Open would refuse it: Seal
// refuses it first. At the limit it is measured, not refused.
func TestSealRefusesPlaintextNoReaderOpens(t *testing.T) {
	p := &Plaintext{Tenant: "t", Seq: 1, CreatedAt: "2026-12-01T10:00:00Z", NRows: 1}
	over := len(EncodePlaintext(&Plaintext{Tenant: "t", Seq: 1, CreatedAt: "2026-12-01T10:00:00Z", NRows: 1,
		Rows: []Row{{Tier: TierState, Key: "k", Body: BodyString("")}}}))
	for _, tc := range []struct {
		n       int
		refused bool
	}{{MaxPlaintext - over, false}, {MaxPlaintext - over + 1, true}} {
		body := strings.Repeat("a", tc.n)
		p.Rows = []Row{{Tier: TierState, Key: "k", Body: bodyp(&body)}}
		if got := len(EncodePlaintext(p)); (got > MaxPlaintext) != tc.refused {
			t.Fatalf("the test is off: %d bytes", got)
		}
		if !tc.refused {
			continue // sealing 128 MiB is slow; the check is that the size test is exact
		}
		_, err := Seal(p, EpochContext{Seq: 1}, [32]byte{}, nil, 0, [12]byte{})
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than the 134217728 a reader opens") {
			t.Fatalf("seal: %v", err)
		}
		if strings.Contains(err.Error(), "aaaa") {
			t.Fatal("the message shows the body")
		}
	}
}

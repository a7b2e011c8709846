package seal

import (
	"testing"
	"time"
)

// TestCreatedAtRoundTrip: ParseCreatedAt reads what FormatCreatedAt writes, to the second,
// and gives the zero time for what is not a created_at.
func TestCreatedAtRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.FixedZone("x", 3600))
	s := FormatCreatedAt(at.Add(900 * time.Millisecond))
	if s != "2026-12-01T09:00:00Z" {
		t.Fatalf("formatted %q", s)
	}
	if got := ParseCreatedAt(s); !got.Equal(at) {
		t.Fatalf("parsed %v, want %v", got, at)
	}
	for _, bad := range []string{"", "2026-12-01 09:00:00", "2026-12-01T09:00:00+01:00"} {
		if got := ParseCreatedAt(bad); !got.IsZero() {
			t.Fatalf("%q parsed as %v", bad, got)
		}
	}
}

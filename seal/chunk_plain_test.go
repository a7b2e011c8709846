package seal

import (
	"errors"
	"strings"
	"testing"
)

// TestChunkPlainBound: a chunk's uncompressed document stays within MaxChunkPlain, however
// well its rows compress. Rows that compress to almost nothing but together pass the bound
// go to epochs of their own; one row over it alone is a *RowTooLargeError naming its size.
func TestChunkPlainBound(t *testing.T) {
	row := func(key string, n int) Row {
		body := strings.Repeat("c", n)
		return Row{Tier: TierState, Key: key, Body: bodyp(&body)}
	}
	// the encoded row is its body plus the framing: find the largest body that fits alone
	framing := len(appendChunkDoc(nil, []Row{row("w", 0)}, nil))
	fits := MaxChunkPlain - framing
	for _, tc := range []struct {
		name   string
		size   int
		chunks int
		plain  bool
	}{
		{"below", fits - 1, 1, false},
		{"at", fits, 1, false},
		{"above", fits + 1, 0, true},
	} {
		chunks, err := ChunkDiff([]Row{row("w", tc.size)}, nil)
		var big *RowTooLargeError
		switch {
		case tc.plain && (!errors.As(err, &big) || big.Plain <= tc.size || big.Plain > tc.size+framing):
			t.Errorf("%s: %d bytes: %v, want a RowTooLargeError with its uncompressed size", tc.name, tc.size, err)
		case tc.plain && !strings.Contains(err.Error(), "bytes uncompressed, more than the 16777216 bytes one epoch sealed here carries"):
			t.Errorf("%s: message %q", tc.name, err)
		case !tc.plain && (err != nil || len(chunks) != tc.chunks):
			t.Errorf("%s: %d bytes: %d chunks, %v", tc.name, tc.size, len(chunks), err)
		}
		if !tc.plain && err == nil {
			if n := len(appendChunkDoc(nil, chunks[0].Rows, nil)); n > MaxChunkPlain {
				t.Errorf("%s: document of %d bytes", tc.name, n)
			}
		}
	}
	// three rows of 6 MiB: two fit one epoch, the third goes to the next
	rows := []Row{row("a", 6<<20), row("b", 6<<20), row("c", 6<<20)}
	chunks, err := ChunkDiff(rows, nil)
	if err != nil || len(chunks) != 2 || len(chunks[0].Rows) != 2 || len(chunks[1].Rows) != 1 {
		t.Fatalf("3 rows of 6 MiB: %d chunks, %v", len(chunks), err)
	}
}

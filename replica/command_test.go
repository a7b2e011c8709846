package replica

import (
	"errors"
	"strings"
	"testing"

	"kintfs/replica/vault"
)

func TestParseCommand(t *testing.T) {
	for in, want := range map[string]string{"flush\n": "flush", "  pull   full \n": "pull full", "compact": "compact", "refresh\r\n": "refresh", " no-flush\n": "no-flush", "flush-on-exit": "flush-on-exit"} {
		if got, err := ParseCommand(in); err != nil || got != want {
			t.Errorf("ParseCommand(%q) = %q, %v", in, got, err)
		}
	}
	_, err := ParseCommand("rm -rf /")
	if !errors.Is(err, vault.ErrInvalid) || !strings.Contains(err.Error(), `unknown command "rm -rf /" (one of: `+strings.Join(Commands, ", ")+")") ||
		!strings.Contains(err.Error(), "(one of: flush, flush dry-run, pull, pull full, compact, refresh") {
		t.Fatalf("garbage: %v", err)
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"flush", "pull full\n", "", "\x00\xff", strings.Repeat("a", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cmd, err := ParseCommand(s)
		if err == nil {
			found := false
			for _, c := range Commands {
				found = found || c == cmd
			}
			if !found {
				t.Fatalf("accepted %q as %q", s, cmd)
			}
		} else if len(err.Error()) > 256 {
			t.Fatalf("an error message that echoes unbounded input: %d bytes", len(err.Error()))
		}
	})
}

package devinfo

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestArgsParseBack: what Args gives the program, its Flags read back as the same options.
func TestArgsParseBack(t *testing.T) {
	for _, o := range []Options{
		{DataDir: "/home/u/.kint/devchain", HTTP: "127.0.0.1:0", ChainID: 8453, MaxLead: DefaultMaxLead},
		{DataDir: "/tmp/a b", HTTP: "127.0.0.1:8545", Period: 12, ChainID: ChainID, MaxLead: 0},
		{DataDir: "d", HTTP: "[::1]:9", Period: 1, ChainID: 1, MaxLead: 1500 * time.Millisecond},
	} {
		got := DefaultOptions()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		got.Flags(fs)
		if err := fs.Parse(o.Args()); err != nil {
			t.Fatalf("parse %q: %v", o.Args(), err)
		}
		if got != o {
			t.Errorf("%q parsed as %+v, want %+v", o.Args(), got, o)
		}
	}
}

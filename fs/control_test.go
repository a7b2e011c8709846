package fs

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"kintfs/replica"
)

func TestParseCtl(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"flush\n", []string{"flush"}},
		{"flush", []string{"flush"}},
		{"  pull   full \n", []string{"pull full"}},
		{"pull\tfull\n", []string{"pull full"}},
		{"pull\n", []string{"pull"}},
		{"compact\r\n", []string{"compact"}},
		{"refresh\n\nflush\n", []string{"refresh", "flush"}},
	} {
		got, err := parseCtl([]byte(c.in))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseCtl(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "\n", "bogus\n", "flush now\n", "FLUSH\n", "flush\nbogus\n", "pull full full", strings.Repeat("flush\n", 1000)} {
		if got, err := parseCtl([]byte(in)); !errors.Is(err, errUnknownCommand) {
			t.Errorf("parseCtl(%q) = %q, %v; want errUnknownCommand", in, got, err)
		}
	}
}

func FuzzCtlCommand(f *testing.F) {
	for _, s := range append(replica.Commands, "", "pull  full", "bogus", "flush\nflush") {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cmds, err := parseCtl(data)
		if err != nil {
			if len(cmds) != 0 {
				t.Fatalf("commands %q returned with error %v", cmds, err)
			}
			return
		}
		if len(cmds) == 0 {
			t.Fatal("no commands and no error")
		}
		for _, c := range cmds {
			found := false
			for _, k := range replica.Commands {
				found = found || k == c
			}
			if !found {
				t.Fatalf("parseCtl(%q) let %q through", data, c)
			}
		}
	})
}

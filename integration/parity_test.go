package integration

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestExport: every mirror row as one JSON line of the wire row's fields, the same from the
// mount and without it, a plaintext warning on stderr, and nothing unanchored.
func TestExport(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "export")
	a.connect("pass export")
	ma := a.mount()
	writeFile(t, ma.path("entity/people/ada"), `{"name":"Ada"}`)
	writeFile(t, ma.path("state/mood"), "calm\nline two")
	ma.mustCtl("flush")
	writeFile(t, ma.path("state/unanchored"), "staged only")

	out, errs, code := a.run("", "export")
	if code != 0 || !strings.Contains(errs, "plaintext") {
		t.Fatalf("export while mounted: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("export printed %d lines, want 2 (the anchored rows only):\n%s", len(lines), out)
	}
	want := []string{"tier", "key", "category", "status", "body", "meta", "ts", "evaluated", "acted", "forward", "extra"}
	bodies := map[string]string{}
	for _, l := range lines {
		var row map[string]*string
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatalf("export line %q: %v", l, err)
		}
		for _, k := range want {
			if _, ok := row[k]; !ok {
				t.Fatalf("export line %q has no %q", l, k)
			}
		}
		if len(row) != len(want) {
			t.Fatalf("export line %q: %d fields, want %d", l, len(row), len(want))
		}
		bodies[*row["tier"]+"/"+*row["key"]] = *row["body"]
	}
	if bodies["entity/ada"] != `{"name":"Ada"}` || bodies["state/mood"] != "calm\nline two" {
		t.Fatalf("exported bodies: %v", bodies)
	}
	if !strings.HasPrefix(lines[0], `{"tier":"entity","key":"ada","category":"people",`) {
		t.Fatalf("the entity line: %s", lines[0])
	}
	ma.unmount()
	// without the mount: the same rows (the staged one now anchored by the unmount's flush)
	out2, _, code := a.run("", "export")
	if code != 0 || !strings.Contains(out2, out) || !strings.Contains(out2, `"key":"unanchored"`) {
		t.Fatalf("export after unmount: exit %d:\n%s\nbefore:\n%s", code, out2, out)
	}
	if _, errs, code := a.run("", "export", "extra"); code != 2 || !strings.Contains(errs, "takes no arguments") {
		t.Fatalf("export with an argument: exit %d: %s", code, errs)
	}
}

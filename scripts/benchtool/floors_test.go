package main

import (
	"strings"
	"testing"
)

// The floors of the write targets count the round trips a new file waits for with the native
// durable write: at 14 µs a trip, 0.28 ms + 5 x 14 µs = 0.35 ms a file, and a native cp -r of
// 1,000 files with fsync that took 0.3 s gains 1,000 x 70 µs.
func TestFloorsOfNewFiles(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir, map[string]string{
		"params.json": `{"rows":10000,"row_bytes":1024,"cp_files":1000}`,
		"floors.json": `{"roundtrip_us":14,"open_close_mount_us":29,"open_close_native_us":1,"fsync_ms":0.28}`,
		"hf-cp.json":  `{"results":[{"command":"cp -r mount","median":0.65},{"command":"copy -fsync","median":0.3},{"command":"cp -r","median":0.08}]}`,
	})
	rp := &report{}
	r := results{dir}
	rp.floorsSection(r, r.json("params.json"))
	text := strings.Join(rp.lines, "\n")
	for _, want := range []string{
		"| `cp -r` into the mount vs native with fsync per file: native plus 5 round trips per file | 1.23x | <= 1.5x |",
		"| a new file durable at close: one durable write and the 5 round trips it waits for (GETATTR of its directory, LOOKUP, CREATE, WRITE, FLUSH) | 0.35 ms | <= 0.5 ms |",
		"| writing many new rows, per file: the same | 0.35 ms | <= 0.3 ms |",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the floors have no %q:\n%s", want, text)
		}
	}
}

package main

import (
	"maps"
	"math"
	"strings"
	"testing"

	mountfs "kintfs/fs"
)

// The floors of the write targets count the round trips a new file waits for with the native
// durable write: at 14 µs a trip, 0.28 ms + 5 x 14 µs = 0.35 ms a file, and a native cp -r of
// 1,000 files with fsync that took 0.3 s gains 1,000 x 70 µs.
func TestFloorsOfNewFiles(t *testing.T) {
	wantFloors(t, floorsWith(t, nil),
		"| `cp -r` into the mount vs native with fsync per file: native plus 5 round trips per file | 1.23x | <= 1.5x |",
		"| a new file durable at close: one durable write and the 5 round trips it waits for (GETATTR of its directory, LOOKUP, CREATE, WRITE, FLUSH) | 0.35 ms | <= 0.5 ms |",
		"| writing many new rows, per file: the same | 0.35 ms | <= 0.3 ms |")
}

// floorsWith is the floors section made from a run of 1,000 copied files (14 µs a round trip,
// a native durable write of 0.28 ms, cp -r with fsync 0.3 s) and the results files more.
func floorsWith(t *testing.T, more map[string]string) string {
	t.Helper()
	files := map[string]string{
		"params.json": `{"rows":10000,"row_bytes":1024,"cp_files":1000}`,
		"floors.json": `{"roundtrip_us":14,"open_close_mount_us":29,"open_close_native_us":1,"fsync_ms":0.28}`,
		"hf-cp.json":  `{"results":[{"command":"cp -r mount","median":0.65},{"command":"copy -fsync","median":0.3},{"command":"cp -r","median":0.08}]}`,
	}
	maps.Copy(files, more)
	dir := t.TempDir()
	writeResults(t, dir, files)
	rp := &report{}
	r := results{dir}
	rp.floorsSection(r, r.json("params.json"))
	return strings.Join(rp.lines, "\n")
}

// wantFloors fails t for each of wants the floors section text does not hold.
func wantFloors(t *testing.T, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("the floors have no %q:\n%s", want, text)
		}
	}
}

// The durable step splits a new file's time into the mount's own time on its requests, read
// from .kint/requests before and after, and their transport: RELEASE, which comes after close
// returns, is left out, and each kind's time is per file.
func TestOwnPartOfANewFile(t *testing.T) {
	before := map[string]mountfs.RequestTime{"LOOKUP": {Count: 1, Nanos: 1_000}, "RELEASE": {Count: 1, Nanos: 500}}
	after := map[string]mountfs.RequestTime{"LOOKUP": {Count: 1_001, Nanos: 11_001_000}, "CREATE": {Count: 1_000, Nanos: 50_000_000},
		"RELEASE": {Count: 1_001, Nanos: 2_000_500}}
	u := requestsBetween(before, after, 1_000)
	if u.trips != 2 || math.Abs(u.seconds-61e-6) > 1e-12 || math.Abs(u.byKind["LOOKUP"]-11e-6) > 1e-12 || u.byKind["RELEASE"] != 0 {
		t.Fatalf("requestsBetween: %+v, want 2 trips and 61 µs a file (LOOKUP 11 µs), RELEASE left out", u)
	}
	slow := u
	slow.seconds = 90e-6
	part := ownPart([]float64{0.0006, 0.0007, 0.00065}, []requestsUsed{u, u, slow})
	if got := part["transport_per_file"].(float64); math.Abs(got-(0.00065-90e-6)) > 1e-12 || part["own_per_file"].(float64) != 90e-6 {
		t.Fatalf("ownPart %v, want the median run (the third) split into its own 90 µs and the rest", part)
	}
	if ownPart([]float64{0.0006}, nil) != nil {
		t.Fatal("ownPart without the mount's counts made numbers up")
	}

	text := floorsWith(t, map[string]string{
		"durable.json": `{"mount_per_file":0.00065,"own_run_per_file":0.00065,"own_per_file":0.0004,"trips_per_file":5,"transport_per_file":0.00025,"own_by_kind":{"FLUSH":0.00033,"CREATE":0.00005,"LOOKUP":0.00002,"MKDIR":0.0000004,"STATFS":0.0000002}}`,
	})
	wantFloors(t, text,
		"| `cp -r` into the mount vs native with fsync per file: native plus each file's requests' transport as measured while the mount wrote (below) | 1.83x | <= 1.5x |",
		"| a new file durable at close: one durable write and its requests' transport as measured while the mount wrote (below) | 0.53 ms | <= 0.5 ms |",
		"650 µs a file, of which the mount's own 400 µs (FLUSH 330 µs, CREATE 50 µs, LOOKUP 20 µs, other kinds 0.6 µs) and the rest, the kernel's transport of its 5.0 requests with the copy's own few microseconds a file (reading its source), 250 µs, 50 µs a request, against 14.0 µs a round trip")
}

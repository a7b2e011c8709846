package fs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"testing"
)

// readRequestTimes reads .kint/requests.
func readRequestTimes(t *testing.T, tm *testMount) map[string]RequestTime {
	t.Helper()
	var rt map[string]RequestTime
	if err := json.Unmarshal([]byte(readFile(t, tm.path(".kint", "requests"))), &rt); err != nil {
		t.Fatalf(".kint/requests: %v", err)
	}
	return rt
}

// With TimeRequests, .kint/requests counts every request of the kinds a new file makes, with
// the mount's time on them, and grows by each file written.
func TestRequestTimes(t *testing.T) {
	tm := mountForTest(t, func(o *MountOptions) { o.TimeRequests = true })
	if err := os.Mkdir(tm.path("entity", "timed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if names := lsNames(t, tm.path(".kint")); !slices.Contains(names, "requests") {
		t.Fatalf(".kint lists %q, without requests", names)
	}
	before := readRequestTimes(t, tm)
	const files = 20
	for i := 0; i < files; i++ {
		if err := os.WriteFile(tm.path("entity", "timed", fmt.Sprintf("f%02d", i)), []byte(`{"n":1}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	after := readRequestTimes(t, tm)
	for _, kind := range []string{"LOOKUP", "CREATE", "WRITE", "FLUSH"} {
		n := after[kind].Count - before[kind].Count
		if n < files {
			t.Errorf("%s: %d more requests after %d new files, want at least %d", kind, n, files, files)
		}
		if after[kind].Nanos <= before[kind].Nanos {
			t.Errorf("%s: the time spent went from %d ns to %d ns", kind, before[kind].Nanos, after[kind].Nanos)
		}
	}
	// the read of .kint/requests itself is counted (its OPEN and READ), so it is never empty
	if after["OPEN"].Count == 0 || after["READ"].Count == 0 {
		t.Errorf("no OPEN or READ counted: %v", after)
	}
	if _, ok := after["SYMLINK"]; ok {
		t.Errorf("an untimed kind is listed: %v", after)
	}
}

// Without TimeRequests, the mount serves no .kint/requests.
func TestRequestTimesOff(t *testing.T) {
	tm := mountForTest(t)
	if _, err := os.Stat(tm.path(".kint", "requests")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf(".kint/requests without TimeRequests: %v", err)
	}
	if names := lsNames(t, tm.path(".kint")); slices.Contains(names, "requests") {
		t.Fatalf(".kint lists %q", names)
	}
}

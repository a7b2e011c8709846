package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestJSONAndHistoryPath: log, history, verify and doctor print JSON with --json, beside a
// mount (forwarded) and after it; history takes a path in the mount or tier/key as well as
// TIER KEY, and gives the same versions.
func TestJSONAndHistoryPath(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "json")
	a.connect("pw")
	mt := a.mount()
	writeFile(t, mt.path("entity/things/t0"), `{"n":0}`)
	writeFile(t, mt.path("state/x"), "one")
	mt.mustCtl("flush")
	writeFile(t, mt.path("state/x"), "two")
	mt.mustCtl("flush")

	var log []struct {
		Seq       uint64 `json:"seq"`
		Block     uint64 `json:"block"`
		Tx        string `json:"tx"`
		BlockTime string `json:"block_time"`
	}
	eventually(t, 60*time.Second, "log --json with block times", func() error {
		if err := json.Unmarshal([]byte(a.mustRun("", "log", "--json")), &log); err != nil {
			return err
		}
		if len(log) != 2 || log[1].Seq != 2 || log[1].Block == 0 || !strings.HasPrefix(log[1].Tx, "0x") || log[1].BlockTime == "" {
			return fmt.Errorf("log --json: %+v", log)
		}
		_, err := time.Parse(time.RFC3339, log[1].BlockTime)
		return err
	})

	var byKey, byPath, byTierKey []histVersion
	for _, c := range []struct {
		args []string
		into *[]histVersion
	}{
		{[]string{"history", "state", "x", "--json"}, &byKey},
		{[]string{"history", mt.path("state/x"), "--json"}, &byPath},
		{[]string{"history", "state/x", "--json"}, &byTierKey},
	} {
		out := a.mustRun("", c.args...)
		if err := json.Unmarshal([]byte(out), c.into); err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, out)
		}
	}
	if len(byKey) != 2 || byKey[0].Seq != 1 || byKey[1].Seq != 2 || byKey[1].Bytes != 3 || len(byKey[1].Leaf) != 64 {
		t.Fatalf("history state x --json: %+v", byKey)
	}
	if !equalVersions(byKey, byPath) || !equalVersions(byKey, byTierKey) {
		t.Fatalf("history by key %+v, by path %+v, by tier/key %+v", byKey, byPath, byTierKey)
	}
	ent := a.mustRun("", "history", "entity/things/t0")
	if !strings.Contains(ent, "seq 1 ") {
		t.Fatalf("history entity/things/t0: %s", ent)
	}
	if _, errs, code := a.run("", "history", "nosuchtier/k"); code != 2 || !strings.Contains(errs, "neither a file in a kintfs mount nor TIER/KEY") {
		t.Fatalf("history nosuchtier/k: exit %d: %s", code, errs)
	}

	var verify []struct {
		Path  string `json:"path"`
		OK    bool   `json:"ok"`
		Seq   uint64 `json:"seq"`
		Steps int    `json:"steps"`
	}
	out := a.mustRun("", "verify", "--json", mt.path("state/x"), mt.path("entity/things/t0"))
	if err := json.Unmarshal([]byte(out), &verify); err != nil || len(verify) != 2 || !verify[0].OK || !verify[1].OK || verify[0].Seq != 2 {
		t.Fatalf("verify --json: %v: %s", err, out)
	}

	var doctor struct {
		Checks []struct {
			Check   string `json:"check"`
			Result  string `json:"result"`
			Message string `json:"message"`
		} `json:"checks"`
		Failed int `json:"failed"`
	}
	out, errs, code := a.run("", "doctor", "--json")
	if err := json.Unmarshal([]byte(out), &doctor); err != nil || len(doctor.Checks) < 5 {
		t.Fatalf("doctor --json: exit %d, %v: %s%s", code, err, out, errs)
	}
	for _, c := range doctor.Checks {
		if c.Result != "ok" && c.Result != "warn" && c.Result != "fail" || c.Check == "" {
			t.Fatalf("doctor --json check %+v", c)
		}
	}
	if (code == 0) != (doctor.Failed == 0) {
		t.Fatalf("doctor --json: exit %d with %d failed", code, doctor.Failed)
	}

	// after the mount: the same commands, run by themselves
	mt.unmount()
	var after []histVersion
	if err := json.Unmarshal([]byte(a.mustRun("", "history", "state/x", "--json")), &after); err != nil || !equalVersions(after, byKey) {
		t.Fatalf("history state/x --json without a mount: %v %+v", err, after)
	}
}

// histVersion is one version as history --json prints it.
type histVersion struct {
	Seq     uint64 `json:"seq"`
	Block   uint64 `json:"block"`
	Deleted bool   `json:"deleted"`
	Bytes   int    `json:"bytes"`
	Leaf    string `json:"leaf"`
}

func equalVersions(a, b []histVersion) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

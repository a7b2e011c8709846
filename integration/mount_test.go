package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tree reads every regular file under dir (not following @ or .kint, which are never listed).
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func lastBlock(t *testing.T, mt *mounted) uint64 {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(readFile(t, mt.path(".kint/blocks"))), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) < 3 {
		t.Fatalf(".kint/blocks: %q", lines)
	}
	n, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMountEndToEnd writes rows through a mount with ordinary tools, anchors them, reads an old
// version under @<block>, and restores the same tree on a second machine.
func TestMountEndToEnd(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "e2e")
	a.connect("correct horse battery")
	mt := a.mount()

	// the kint vectors' rows, written with the shell
	sh(t, mt.dir, `mkdir -p entity/person &&
printf '%s' '{"name":"zeta","note":"the plain ascii control"}' > entity/person/zeta &&
printf '%s' '{"name":"hot"}' > 'entity/person/🔥hot' &&
printf '%s' '{"lang":"fr"}' > 'entity/café ünïcode' &&
printf '%s' 'ship the beta by friday' > state/goal &&
printf '%s' 'see the docs' > reference/doc%2Freadme &&
printf '%s' '{"ts":"2026-09-09T21:15:00Z","evaluated":"checked the plan","acted":"wrote it back","forward":null,"extra":"{\"tool\":\"kint\"}"}' > journal/new-event`)
	mt.mustCtl("flush")
	st := mt.status()
	if st["staged_rows"].(float64) != 0 {
		t.Fatalf("rows still staged after flush: %v", st)
	}
	first := lastBlock(t, mt)
	journal, err := os.ReadDir(mt.path("journal"))
	if err != nil || len(journal) != 1 || len(journal[0].Name()) != 64 {
		t.Fatalf("journal after flush: %v %v", journal, err)
	}

	// an edit with sed -i, anchored in a second epoch
	sh(t, mt.dir, `sed -i 's/plain ascii/edited/' entity/person/zeta`)
	mt.mustCtl("flush")
	// every push after a space's first costs exactly the EIP-7623 calldata floor
	anchored := mt.status()["last_push"].(map[string]any)["report"].(map[string]any)["anchored"].([]any)
	ep := anchored[0].(map[string]any)
	if ep["seq"].(float64) != 2 || ep["gas_used"] != ep["floor_gas"] {
		t.Fatalf("second push: gas_used %v, floor %v (%v)", ep["gas_used"], ep["floor_gas"], ep)
	}
	if got := readFile(t, mt.path("entity/person/zeta")); got != `{"name":"zeta","note":"the edited control"}` {
		t.Fatalf("after sed -i: %q", got)
	}
	old := readFile(t, mt.path(fmt.Sprintf("@%d/entity/person/zeta", first)))
	if old != `{"name":"zeta","note":"the plain ascii control"}` {
		t.Fatalf("@%d/entity/person/zeta = %q", first, old)
	}
	// every write under @<block> is refused with EROFS
	err = os.WriteFile(mt.path(fmt.Sprintf("@%d/state/goal", first)), []byte("x"), 0o644)
	if !errors.Is(err, syscall.EROFS) {
		t.Fatalf("write under @block: %v, want EROFS", err)
	}
	if err := os.Remove(mt.path(fmt.Sprintf("@%d/state/goal", first))); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("rm under @block: %v, want EROFS", err)
	}
	want := tree(t, mt.dir)
	mt.unmount()

	// a second machine restores the same tree from the chain
	b := newMachine(t, dc, "e2e")
	b.connect("correct horse battery")
	mb := b.mount()
	eventually(t, 30*time.Second, "second machine restores the tree", func() error {
		got := tree(t, mb.dir)
		if fmt.Sprint(sortedMap(got)) != fmt.Sprint(sortedMap(want)) {
			return fmt.Errorf("got %v\nwant %v", sortedMap(got), sortedMap(want))
		}
		return nil
	})

	// a third mount of the first machine sees the second's edit within a poll
	ma := a.mount()
	writeFile(t, mb.path("state/goal"), "ship the beta by monday")
	mb.mustCtl("flush")
	eventually(t, 20*time.Second, "first machine sees the edit", func() error {
		if got := readFile(t, ma.path("state/goal")); got != "ship the beta by monday" {
			return fmt.Errorf("state/goal = %q", got)
		}
		return nil
	})
}

func sortedMap(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// TestHeldRowsAreKept: a non-JSON entity body is held with its reason while the rest flushes.
func TestHeldRowsAreKept(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "held")
	a.connect("pass")
	mt := a.mount()
	writeFile(t, mt.path("entity/notes/bad"), "this is not json")
	writeFile(t, mt.path("entity/notes/good"), `{"ok":true}`)
	mt.mustCtl("flush")
	st := mt.status()
	held, _ := st["held"].([]any)
	if len(held) != 1 || !strings.Contains(fmt.Sprint(held[0]), "not a JSON value") {
		t.Fatalf("held = %v", st["held"])
	}
	if got := readFile(t, mt.path("entity/notes/bad")); got != "this is not json" {
		t.Fatalf("held body changed: %q", got)
	}
	out, err := exec.Command("getfattr", "--only-values", "-n", "user.kint.anchored", mt.path("entity/notes/bad")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "held") {
		t.Fatalf("user.kint.anchored of a held row: %q %v", out, err)
	}
	out, err = exec.Command("getfattr", "--only-values", "-n", "user.kint.anchored", mt.path("entity/notes/good")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "seq 1") {
		t.Fatalf("user.kint.anchored of an anchored row: %q %v", out, err)
	}
	// fixing the body lets it flush
	writeFile(t, mt.path("entity/notes/bad"), `"now it is json"`)
	mt.mustCtl("flush")
	if st := mt.status(); len(st["held"].([]any)) != 0 || st["staged_rows"].(float64) != 0 {
		t.Fatalf("after the fix: %v", st)
	}
}

// TestAttrWithoutXattrs: with --xattrs=false the kernel gets ENOSYS, and status and meta stay
// reachable through `kintfs attr`, run inside the mount.
func TestAttrWithoutXattrs(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "noxattr")
	a.connect("pass")
	mt := a.mount("--xattrs=false")
	p := mt.path("entity/notes/one")
	writeFile(t, p, `{"n":1}`)
	if out, err := exec.Command("getfattr", "-n", "user.kint.anchored", p).CombinedOutput(); err == nil {
		t.Fatalf("getfattr answered with xattrs off: %q", out)
	}
	a.mustRun("", "vault-model", "full") // status and meta on one entity
	a.mustRun("", "attr", p, "status", "--set", "active")
	a.mustRun("", "attr", p, "meta", "--set", `{"tags":["x"]}`)
	mt.mustCtl("flush")
	out := a.mustRun("", "attr", p)
	for _, want := range []string{"user.kint.key: one\n", "user.kint.status: active\n", `user.kint.meta: {"tags":["x"]}` + "\n", "user.kint.anchored: seq 1 block "} {
		if !strings.Contains(out, want) {
			t.Fatalf("attr lists %q, missing %q", out, want)
		}
	}
	if got := a.mustRun("", "attr", p, "user.kint.status"); got != "active\n" {
		t.Fatalf("attr status = %q", got)
	}
	// refusals: meta that is not JSON, a read-only name, an absent attribute
	if _, errs, code := a.run("", "attr", p, "meta", "--set", "not json"); code != 2 || !strings.Contains(errs, "invalid") {
		t.Fatalf("meta not JSON: exit %d, %q", code, errs)
	}
	if _, errs, code := a.run("", "attr", p, "leaf", "--set", "00"); code != 2 || !strings.Contains(errs, "only status and meta can be set") {
		t.Fatalf("set leaf: exit %d, %q", code, errs)
	}
	a.mustRun("", "attr", p, "status", "--unset")
	if _, errs, code := a.run("", "attr", p, "status"); code != 2 || !strings.Contains(errs, "no attribute user.kint.status") {
		t.Fatalf("unset status: exit %d, %q", code, errs)
	}
	if got := readFile(t, p); got != `{"n":1}` {
		t.Fatalf("attributes changed the body: %q", got)
	}
}

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// TestLastWriteWinsOnMount runs, on a real mount, the shell sequences that once lost a change
// made while a flush was in flight: a write back to the anchored content, rm and mv of a row
// being sealed, a row recreated with its anchored content, and tar extracting over its own
// tree. Each round starts the flush in the background and acts after a delay from 0 to 30 ms.
// Every file must read as the last operation left it, on the mount, after a remount, and on a
// second machine.
func TestLastWriteWinsOnMount(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "lastwrite")
	a.connect("pass lastwrite")
	// the full model: rm of an anchored state row (case 3) is what kint's model refuses
	ma := a.mount("--vault-model", "full")
	src := t.TempDir()
	const tarFiles = 200
	for i := 0; i < tarFiles; i++ {
		writeFile(t, filepath.Join(src, "tree", fmt.Sprintf("t%03d", i)), fmt.Sprintf("tar file %d\n", i))
	}
	archive := filepath.Join(src, "tree.tar")
	sh(t, filepath.Join(src, "tree"), "tar cf "+archive+" .")

	want := map[string]string{} // state/<name> -> content; absent: must not exist
	gone := map[string]bool{}
	const rounds = 20
	wrong := 0
	for round := 0; round < rounds; round++ {
		delay := fmt.Sprintf("0.%03d", round*30/(rounds-1))
		script := fmt.Sprintf(`set -e
D=%s; C=%s; S=%s; R=%d
flush() { echo flush >"$C"; }
# 1. a write back to the anchored content
printf 'A\n' >"$S/f$R"; flush; printf 'B\n' >"$S/f$R"; flush & sleep $D; printf 'A\n' >"$S/f$R"; wait
# 2. rm of a row only staged, and mv of one
printf '{}' >"$S/h$R"; printf 'g' >"$S/g$R"; flush & sleep $D; rm "$S/h$R"; mv "$S/g$R" "$S/g$R.moved"; wait
# 3. a deleted row recreated with its anchored content
printf 'K\n' >"$S/k$R"; flush; rm "$S/k$R"; flush & sleep $D; printf 'K\n' >"$S/k$R"; wait
# 4. tar over its own tree, a flush starting part way
tar -C "$S" -xf %s & sleep $D; flush; wait
`, delay, ma.path(".kint/ctl"), ma.path("state"), round, archive)
		sh(t, src, script)
		r := fmt.Sprint(round)
		want["f"+r], want["k"+r], want["g"+r+".moved"] = "A\n", "K\n", "g"
		gone["h"+r], gone["g"+r] = true, true
		for i := 0; i < tarFiles; i++ {
			want[fmt.Sprintf("t%03d", i)] = fmt.Sprintf("tar file %d\n", i)
		}
		wrong += countWrong(t, "round "+r+" at "+delay+" s", ma.path("state"), want, gone)
	}
	ma.mustCtl("flush")
	if wrong != 0 {
		t.Fatalf("%d wrong files over %d rounds", wrong, rounds)
	}
	ma.unmount()
	ma = a.mount()
	if n := countWrong(t, "after a remount", ma.path("state"), want, gone); n != 0 {
		t.Fatalf("%d wrong files after a remount", n)
	}
	b := newMachine(t, dc, "lastwrite")
	b.connect("pass lastwrite")
	b.pull()
	mb := b.mount()
	if n := countWrong(t, "on a second machine", mb.path("state"), want, gone); n != 0 {
		t.Fatalf("%d wrong files on a second machine", n)
	}
}

// countWrong compares the files in dir with want and gone, logging each difference.
func countWrong(t *testing.T, when, dir string, want map[string]string, gone map[string]bool) int {
	t.Helper()
	var bad []string
	for name, content := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", name, err))
		} else if string(got) != content {
			bad = append(bad, fmt.Sprintf("%s: %q, want %q", name, got, content))
		}
	}
	for name := range gone {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			bad = append(bad, name+": exists, want it gone")
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s: %s", when, b)
	}
	return len(bad)
}

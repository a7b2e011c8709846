package store

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// killEpochs are the two epochs of the SIGKILL test, built the same in both processes: 400
// rows, then 390 of them rewritten and one deleted.
func killEpochs() (p1, p2 *seal.Plaintext, rows []seal.Row) {
	state := map[string]seal.Row{}
	p1 = plaintextFor(state, 1, TinyRows(400, "o"), nil)
	rows = TinyRows(400, "n")
	p2 = plaintextFor(state, 2, rows[:390], []seal.Deleted{{Tier: seal.TierState, Key: rows[395].Key}})
	return p1, p2, rows
}

const killChildEnv = "KINT_TEST_APPLY_KILL_DIR"

// TestApplyKilledMidEpochChild is the process TestApplyKilledMidEpoch kills: it applies the
// second epoch in small batches and stops dead after the third, telling its parent.
func TestApplyKilledMidEpochChild(t *testing.T) {
	dir := os.Getenv(killChildEnv)
	if dir == "" {
		t.Skip("the child half of TestApplyKilledMidEpoch; it runs only when that test starts it")
	}
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	p1, p2, _ := killEpochs()
	if _, _, err := s.ApplyEpoch(vault.EpochInfo{Seq: 1, Block: 10, Digest: common.Hash{1}}, p1, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	s.batchLimits = idsPerBatch(50)
	s.applyHook = func(batch int) error {
		if batch == 3 {
			fmt.Println("KILL ME")
			time.Sleep(time.Hour)
		}
		return nil
	}
	s.ApplyEpoch(vault.EpochInfo{Seq: 2, Block: 20, Digest: common.Hash{2}}, p2, ApplyOptions{})
	t.Fatal("the apply was not stopped")
}

// TestApplyKilledMidEpoch: a process killed with SIGKILL part way through applying an epoch
// leaves a store that, reopened, serves the whole epoch: never half of it.
func TestApplyKilledMidEpoch(t *testing.T) {
	dir := t.TempDir()
	killChildAt(t, "^TestApplyKilledMidEpochChild$", killChildEnv+"="+dir, "the third batch", "")

	s, err := OpenStore(dir)
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer s.Close()
	var head vault.Head
	if err := s.db.View(func(txn *badger.Txn) error { _, err := getJSON(txn, kHead, &head); return err }); err != nil {
		t.Fatal(err)
	}
	if head.Seq != 2 || head.Digest != (common.Hash{2}) {
		t.Fatalf("head after the restart: %+v, want the killed epoch finished", head)
	}
	_, _, rows := killEpochs()
	CheckRows(t, s, rows[:390])
	if _, err := s.Get(rowKey(&rows[395])); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("the row the epoch deleted: %v", err)
	}
	if body, err := s.Content(rowKey(&rows[394])); err != nil || string(body) != "o" {
		t.Fatalf("a row the epoch left alone: %q, %v", body, err)
	}
}

// killChildAt runs the test named by run in a child process with env added, and kills it with
// SIGKILL once it prints "KILL ME" (it has reached what); it reports whether the child printed
// the line seen before that (never when seen is "").
func killChildAt(t *testing.T, run, env, what, seen string) bool {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run="+run, "-test.count=1")
	child.Env = append(os.Environ(), env)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	type result struct{ reached, saw bool }
	ready := make(chan result, 1)
	go func() {
		sc := bufio.NewScanner(out)
		saw := false
		for sc.Scan() {
			saw = saw || seen != "" && sc.Text() == seen
			if strings.Contains(sc.Text(), "KILL ME") {
				ready <- result{true, saw}
				return
			}
		}
		ready <- result{false, saw}
	}()
	var r result
	select {
	case r = <-ready:
		if !r.reached {
			child.Wait()
			t.Fatalf("the child ended before %s", what)
		}
	case <-time.After(2 * time.Minute):
		child.Process.Kill()
		t.Fatalf("the child never reached %s", what)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	return r.saw
}

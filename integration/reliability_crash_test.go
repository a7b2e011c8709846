package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"kintfs/chain/rpcproxy"
)

// crashContent is what the writer script puts in file i of a trial: JSON, so it would anchor
// in any tier, and long enough that a torn write would show.
func crashContent(trial, i int) string { return crashContentPadded(trial, i, 64) }

// crashContentPadded is crashContent with a pad of pad digits (the script's PAD).
func crashContentPadded(trial, i, pad int) string {
	return fmt.Sprintf(`{"trial":%d,"i":%d,"pad":"%s"}`, trial, i, strings.Repeat(strconv.Itoa(i%10), pad))
}

// crashWriter is the script: it writes files one by one with dd, which fails when write or
// close fails, and logs each file whose close returned to ack, after the close. PAD (64 when
// unset) is the length of the content's pad.
const crashWriter = `
i=0
while [ $i -lt $N ]; do
  i=$((i+1))
  if printf '{"trial":%d,"i":%d,"pad":"%s"}' $T $i "$(printf "%0${PAD:-64}d" 0 | tr 0 $((i%10)))" | dd of="$MNT/state/crash-$T-$i" status=none 2>/dev/null; then
    echo $i >> "$ACK"
  fi
done
`

func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
	}
	return n
}

// TestCrashDuringWrites kills the mount with SIGKILL at a random moment while a script writes
// files through it. After a remount, every file whose close had returned is there with its
// content: a write is durable once close returns. KINTFS_CRASH_TRIALS and KINTFS_CRASH_FILES
// raise the default 5 trials of 200 files.
func TestCrashDuringWrites(t *testing.T) {
	requireFUSE(t)
	trials := envCount("KINTFS_CRASH_TRIALS", 5)
	files := envCount("KINTFS_CRASH_FILES", 200)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	dc := startDevchain(t)
	m := newMachine(t, dc, "crash-writes")
	m.connect("crash writes passphrase")
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()

	acked, lost, torn, kept, empty := 0, 0, 0, 0, 0
	mt := m.mountAt(dir)
	for trial := 1; trial <= trials; trial++ {
		ack := filepath.Join(work, fmt.Sprintf("ack-%d", trial))
		script := exec.Command("sh", "-c", crashWriter)
		script.Env = append(os.Environ(), "N="+strconv.Itoa(files), "T="+strconv.Itoa(trial), "MNT="+dir, "ACK="+ack)
		if err := script.Start(); err != nil {
			t.Fatal(err)
		}
		// kill once a random share of the files is written, a few milliseconds into the next
		target := files/10 + rng.Intn(files*8/10)
		deadline := time.Now().Add(2 * time.Minute)
		for countLines(ack) < target && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.Intn(15)) * time.Millisecond)
		mt.kill() // SIGKILL: no flush, no unmount; then the dead mount is cleared
		if err := script.Wait(); err != nil {
			t.Fatalf("writer script: %v", err)
		}

		got := ackedSet(t, ack)
		mt = m.mountAt(dir)
		tl, tt, tk, te := 0, 0, 0, 0
		for i := 1; i <= files; i++ {
			b, err := os.ReadFile(mt.path(fmt.Sprintf("state/crash-%d-%d", trial, i)))
			switch {
			case got[i] && err != nil:
				tl++
				t.Errorf("trial %d: file %d was acknowledged but is gone after the crash: %v", trial, i, err)
			case err == nil && string(b) == crashContent(trial, i):
				if !got[i] {
					tk++ // written whole, killed before the script logged it
				}
			case err == nil && len(b) == 0 && !got[i]:
				te++ // created, killed before its write and close returned: like any file system
			case err == nil:
				tt++
				t.Errorf("trial %d: file %d (acknowledged: %v) reads %q after the crash", trial, i, got[i], b)
			}
		}
		t.Logf("trial %d: killed after %d of %d acknowledged writes; %d lost, %d torn, %d unacknowledged kept whole, %d created empty",
			trial, len(got), files, tl, tt, tk, te)
		acked, lost, torn, kept, empty = acked+len(got), lost+tl, torn+tt, kept+tk, empty+te
		mt.checkNoPanic()
	}
	// what survived the crashes anchors like anything else
	mt.mustCtl("flush")
	if st := mt.mustStatus(); st.StagedRows != 0 || len(st.Held) != 0 {
		t.Errorf("after the final flush: %d rows staged, held %v", st.StagedRows, st.Held)
	}
	mt.unmount()
	fmt.Printf("crash during writes: %d trials x %d files: writes acknowledged / lost: %d / %d (torn %d; unacknowledged: %d kept whole, %d created empty)\n",
		trials, files, acked, lost, torn, kept, empty)
	recordFigure(t, "trials x files", "%d x %d", trials, files)
	recordFigure(t, "writes acknowledged / lost", "%d / %d", acked, lost)
	recordFigure(t, "torn files", "%d", torn)
	recordFigure(t, "unacknowledged writes kept whole / created empty", "%d / %d", kept, empty)
	if lost > 0 || torn > 0 {
		t.Fatalf("%d acknowledged writes lost, %d torn", lost, torn)
	}
}

// pushStage is one moment of a flush at which TestCrashDuringPush kills the mount.
type pushStage struct {
	name   string
	hold   string // hold this method at the proxy and kill once it arrives; "" kills at random
	landed bool   // whether the epoch is on chain when the mount dies
}

// TestCrashDuringPush kills the mount (SIGKILL) at chosen stages of a flush, with a proxy in
// front of the node holding the call of that stage, and at random moments within a flush's
// time. After a restart, and an edit to a row the interrupted flush carried, the mirror agrees
// with the chain, the push journal is settled (its epoch adopted as this machine's own, or the
// same signed transaction sent again while the node shows it pending, then adopted), the edit
// stays a local change on top (never a conflict), the head seq counts exactly the epochs
// sealed (none duplicated), nothing is lost, and no fork is reported.
func TestCrashDuringPush(t *testing.T) {
	requireFUSE(t)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	crashDuringPush(t, rng, "crash-push", "kills", nil, func(mt *mounted, _ pushStage) string {
		mt.kill()
		return "killed"
	})
}

// crashDuringPush is TestCrashDuringPush with the crash made by die (the machine is up again
// once it returns, saying what it did), and named crashes in the figures. setUp, when given,
// runs on the machine before its vault is made.
func crashDuringPush(t *testing.T, rng *rand.Rand, tenant, crashes string, setUp func(m *machine), die func(mt *mounted, stage pushStage) string) {
	dc := startDevchain(t)
	c := dc.client(t)
	proxy := startRPCProxy(t, dc.info.RPC)
	m := newMachine(t, dc, tenant)
	if setUp != nil {
		setUp(m)
	}
	m.connect("crash push passphrase")
	m.useRPC(proxy.URL)
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stages := []pushStage{
		{name: "held before the transaction reaches the node", hold: "eth_sendRawTransaction"},
		{name: "sent, killed waiting for the receipt", hold: "eth_getTransactionReceipt", landed: true},
		{name: "random moment 1"}, {name: "random moment 2"}, {name: "random moment 3"}, {name: "random moment 4"},
	}
	mt := m.mountAt(dir)
	// a flush left alone, to time the random kills within one
	writeFile(t, mt.path("state/calibration"), "a flush left alone")
	start := time.Now()
	mt.mustCtl("flush")
	flushTime := time.Since(start)
	t.Logf("an uninterrupted flush takes %s", flushTime)
	var outcomes []string
	prevHead := uint64(1) // epoch 1 is the calibration flush
	for n0, stage := range stages {
		n := n0 + 1
		want := map[string]string{}
		for i := 0; i < 4; i++ {
			p := fmt.Sprintf("state/push-%d-%d", n, i)
			want[p] = fmt.Sprintf("stage %d row %d", n, i)
			writeFile(t, mt.path(p), want[p])
		}
		before := proxy.Seen(stage.hold)
		if stage.hold != "" {
			proxy.SetRule(stage.hold, rpcproxy.Rule{Hold: true})
		}
		flushed := make(chan error, 1)
		go func() { flushed <- mt.ctl("flush") }()
		if stage.hold != "" {
			eventually(t, 60*time.Second, "the flush reaches "+stage.hold, func() error {
				if proxy.Seen(stage.hold) <= before {
					return fmt.Errorf("no %s yet", stage.hold)
				}
				return nil
			})
		} else {
			time.Sleep(time.Duration(rng.Int63n(int64(flushTime))))
		}
		t.Logf("stage %q: %s", stage.name, die(mt, stage))
		completed := false
		select {
		case err := <-flushed:
			if err == nil && stage.hold != "" {
				t.Fatalf("stage %q: the flush finished although %s was held", stage.name, stage.hold)
			}
			completed = err == nil
		case <-time.After(30 * time.Second):
			t.Fatalf("stage %q: the ctl write did not return after the mount died", stage.name)
		}
		proxy.ClearRules()
		proxy.Release(false) // a held call is lost with the process that made it
		landed := chainHead(t, c, m).Seq > prevHead
		if stage.landed && !landed {
			// the node may seal the block a moment after it took the transaction
			eventually(t, 10*time.Second, "the sent epoch is mined", func() error {
				if landed = chainHead(t, c, m).Seq > prevHead; !landed {
					return fmt.Errorf("chain head still at seq %d", prevHead)
				}
				return nil
			})
		}
		if stage.hold != "" && landed != stage.landed {
			t.Fatalf("stage %q: epoch on chain after the kill: %v, want %v", stage.name, landed, stage.landed)
		}

		if !landed {
			// on a real chain the resent transaction waits in the pool for a while: the
			// proxy says so the first time it is asked about it
			var once sync.Once
			proxy.SetRewrite(func(method string, params, result json.RawMessage) json.RawMessage {
				out := result
				if method == "eth_getTransactionByHash" && string(result) != "null" {
					once.Do(func() { out = pendingTx(result) })
				}
				return out
			})
		}
		mt = m.mountAt(dir)
		// an edit after the crash, to a row the interrupted flush carried: it must stay a
		// local change on top of this machine's own epoch, never a conflict with it
		edited := fmt.Sprintf("state/push-%d-0", n)
		want[edited] = fmt.Sprintf("stage %d row 0, edited after the crash", n)
		writeFile(t, mt.path(edited), want[edited])
		mt.mustCtl("flush")
		proxy.SetRewrite(nil)
		st := waitIdle(t, c, m, mt, 60*time.Second)
		if st.StagedRows != 0 || st.StagedDels != 0 || len(st.Gaps) != 0 || len(st.Conflicts) != 0 {
			t.Fatalf("stage %q: after the restart: %d staged, %d deletions, gaps %v, conflicts %v", stage.name, st.StagedRows, st.StagedDels, st.Gaps, st.Conflicts)
		}
		log := mt.log.String()
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "push journal") {
				t.Logf("stage %q: %s", stage.name, l)
			}
		}
		journaled := strings.Contains(log, "push journal: adopted")
		outcome := "rows still staged, pushed after the restart"
		switch {
		case completed:
			outcome = "the flush had completed"
		case strings.Contains(log, "push journal: resent") && journaled:
			outcome = "journal: resent the same transaction, adopted"
		case journaled:
			outcome = "journal: adopted on restart"
		}
		if strings.Contains(log, "push journal: dropping") {
			t.Fatalf("stage %q: the push journal dropped this machine's own epoch:\n%s", stage.name, log)
		}
		if stage.hold != "" && !journaled {
			t.Fatalf("stage %q: the restart did not adopt the journaled epoch:\n%s", stage.name, log)
		}
		// one epoch for the interrupted flush when it got as far as sealing, one for the edit
		wantHead := prevHead + 1
		if landed || journaled || completed {
			wantHead++
		}
		if head := chainHead(t, c, m); head.Seq != wantHead {
			t.Fatalf("stage %q: the chain head is seq %d, want %d: an epoch was duplicated or lost", stage.name, head.Seq, wantHead)
		}
		prevHead = wantHead
		for p, body := range want {
			if got := readFile(t, mt.path(p)); got != body {
				t.Fatalf("stage %q: %s = %q, want %q", stage.name, p, got, body)
			}
		}
		if strings.Contains(strings.ToLower(log+st.errors()), "fork") {
			t.Fatalf("stage %q: a fork was reported:\n%s\n%s", stage.name, st.errors(), log)
		}
		outcomes = append(outcomes, fmt.Sprintf("%s: %s", stage.name, outcome))
		t.Logf("stage %q: epoch landed before the kill: %v; %s", stage.name, landed, outcome)
		mt.checkNoPanic()
	}
	// the epochs this machine holds are exactly the chain's, once each
	lines := strings.Split(strings.TrimSpace(readFile(t, mt.path(".kint/blocks"))), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 3 || seen[f[0]] {
			t.Fatalf(".kint/blocks: %q", lines)
		}
		seen[f[0]] = true
	}
	if uint64(len(lines)) != prevHead {
		t.Fatalf(".kint/blocks holds %d epochs, the chain %d", len(lines), prevHead)
	}
	mt.unmount()
	recordFigure(t, crashes+" during a flush", "%d (epochs on chain %d, duplicated 0, rows lost 0, forks 0)", len(stages), len(lines))
	for _, o := range outcomes {
		recordFigure(t, "stage", "%s", o)
	}
}

// pendingTx rewrites a mined transaction as the node shows one still in its pool.
func pendingTx(result json.RawMessage) json.RawMessage {
	var tx map[string]any
	if err := json.Unmarshal(result, &tx); err != nil {
		return result
	}
	tx["blockNumber"], tx["blockHash"], tx["transactionIndex"] = nil, nil, nil
	b, err := json.Marshal(tx)
	if err != nil {
		return result
	}
	return b
}

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCrashDuringBackToBackPush kills the mount (SIGKILL) while a flush of ten epochs, sent
// back to back, is at each of its epochs in turn: the k-th transaction is held at the proxy
// until the mount is dead, then never reaches the node, while the ones before it are on their
// way. After a restart and a flush, every row the flush carried is anchored in exactly one
// epoch, the epochs follow one another in order, the push journal is empty and nothing is lost.
func TestCrashDuringBackToBackPush(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	c := dc.client(t)
	proxy := startRPCProxy(t, dc.info.RPC)
	m := newMachine(t, dc, "crash-b2b")
	m.connect("crash b2b passphrase")
	m.useRPC(proxy.URL)
	// flushes only through ctl: a size or quiet trigger would anchor a round early
	m.extra = append(m.extra, "KINT_SIZE_TRIGGER_BYTES=1000000000", "KINT_QUIET_SECONDS=3600")
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mt := m.mountAt(dir)
	writeFile(t, mt.path("state/first"), "the vault's first epoch, bucket 4096")
	mt.mustCtl("flush")
	prev := chainHead(t, c, m).Seq
	want := map[string]string{}
	for k := 1; k <= 10; k++ {
		for i := range 40 { // 1 KB rows that do not compress: four to a 4096-byte epoch, ten epochs
			p := fmt.Sprintf("state/b2b-%02d-%02d", k, i)
			want[p] = string(randomText(t, 1024))
			writeFile(t, mt.path(p), want[p])
		}
		arrived, release := make(chan struct{}), make(chan struct{})
		var mu sync.Mutex
		sends := 0
		proxy.SetRefuse(func(method string, _ json.RawMessage) string {
			if method != "eth_sendRawTransaction" {
				return ""
			}
			mu.Lock()
			sends++
			n := sends
			mu.Unlock()
			if n != k {
				return ""
			}
			close(arrived)
			<-release
			return "the sender died (test)"
		})
		flushed := make(chan error, 1)
		go func() { flushed <- mt.ctl("flush") }()
		select {
		case <-arrived:
		case err := <-flushed:
			t.Fatalf("epoch %d: the flush ended (%v) after %d sends, before its %d-th", k, err, sends, k)
		case <-time.After(120 * time.Second):
			t.Fatalf("epoch %d: the flush never sent its %d-th epoch", k, k)
		}
		mt.kill()
		close(release)
		select {
		case <-flushed:
		case <-time.After(30 * time.Second):
			t.Fatalf("epoch %d: the ctl write did not return after the mount died", k)
		}
		proxy.SetRefuse(nil)
		mt = m.mountAt(dir)
		mt.mustCtl("flush")
		st := waitIdle(t, c, m, mt, 120*time.Second)
		if st.StagedRows != 0 || len(st.PendingPush) != 0 || len(st.Conflicts) != 0 || len(st.Gaps) != 0 {
			t.Fatalf("epoch %d: after the restart: %d staged, pending %v, conflicts %v, gaps %v", k, st.StagedRows, st.PendingPush, st.Conflicts, st.Gaps)
		}
		// every row of this round in exactly one epoch after prev, the epochs one after another
		head := chainHead(t, c, m).Seq
		rows, seqs := 0, []uint64{}
		for _, line := range strings.Split(m.mustRun("", "log"), "\n") {
			f := strings.Fields(line)
			if len(f) < 9 || f[0] != "seq" {
				continue
			}
			seq, _ := strconv.ParseUint(f[1], 10, 64)
			if seq <= prev {
				continue
			}
			n, _ := strconv.Atoi(f[6])
			rows += n
			seqs = append(seqs, seq)
		}
		for i, s := range seqs {
			if s != prev+uint64(i)+1 {
				t.Fatalf("epoch %d: seqs after %d: %v", k, prev, seqs)
			}
		}
		if rows != 40 || uint64(len(seqs)) != head-prev {
			t.Fatalf("epoch %d: epochs %d..%d carry %d rows (%d epochs logged), want the 40 written, each once\n%s\nlog:\n%s", k, prev+1, head, rows, len(seqs), m.mustRun("", "log"), mt.log.String())
		}
		t.Logf("killed at epoch %d: the round took epochs %d..%d", k, prev+1, head)
		prev = head
	}
	for p, body := range want {
		if got := readFile(t, mt.path(p)); got != body {
			t.Fatalf("%s: %d bytes, want the %d written", p, len(got), len(body))
		}
	}
	mt.unmount()
}

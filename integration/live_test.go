package integration

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// mirrorSeq is the mirror's seq in the mount's status.
func (mt *mounted) mirrorSeq() uint64 {
	mt.t.Helper()
	return uint64(mt.status()["mirror"].(map[string]any)["seq"].(float64))
}

// waitMirror waits until the mount's mirror reaches seq and says how long that took.
func (mt *mounted) waitMirror(seq uint64, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		if mt.mirrorSeq() >= seq {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return time.Since(start), fmt.Errorf("mirror at seq %d after %v, want %d", mt.mirrorSeq(), timeout, seq)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLiveSubscription: B mounts with a long --poll and KINT_WS_URL on the dev chain's
// websocket (through a TCP proxy). A change A flushes is on B's mount within 2 s, pulled
// because the subscription heard its event; then the socket drops, B's status says it polls
// and why, and the next change still arrives, by the poll.
func TestLiveSubscription(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	if !strings.HasPrefix(dc.info.WS, "ws://127.0.0.1:") {
		t.Fatalf("kintfs devchain printed ws %q", dc.info.WS)
	}
	a := newMachine(t, dc, "live")
	a.connect("live passphrase")
	ma := a.mount()
	writeFile(t, ma.path("state/one"), "first")
	ma.mustCtl("flush")

	u, err := url.Parse(dc.info.WS)
	if err != nil {
		t.Fatal(err)
	}
	ws := startTCPCut(t, u.Host)
	b := newMachine(t, dc, "live")
	b.mustRun("live passphrase\n", "init", "--owner", b.owner(), "--passphrase-stdin")
	b.extra = append(b.extra, "KINT_WS_URL=ws://"+ws.Addr())
	const poll = 12 * time.Second
	mb := b.mount("--poll", poll.String())
	eventually(t, 10*time.Second, "B subscribes", func() error {
		if live, _ := mb.status()["live"].(string); !strings.HasPrefix(live, "websocket: subscribed") {
			return fmt.Errorf("live %q", live)
		}
		return nil
	})
	if _, err := mb.waitMirror(1, 10*time.Second); err != nil {
		t.Fatal(err) // the start-up pull
	}

	writeFile(t, ma.path("state/two"), "second, heard by websocket")
	flushStart := time.Now()
	ma.mustCtl("flush")
	flushTook := time.Since(flushStart)
	took, err := mb.waitMirror(2, 2*time.Second)
	if err != nil {
		t.Fatalf("by websocket: %v\nB's log:\n%s", err, mb.log.String())
	}
	if got := readFile(t, mb.path("state/two")); got != "second, heard by websocket" {
		t.Fatalf("B reads state/two as %q", got)
	}
	if !strings.Contains(mb.log.String(), "live: an Epoch event in block") {
		t.Fatalf("B pulled seq 2 without the subscription's wake-up:\n%s", mb.log.String())
	}
	t.Logf("A's change on B's mount %v after A's flush returned, %v after it started (poll %v)",
		took.Round(time.Millisecond), (flushTook + took).Round(time.Millisecond), poll)
	recordFigure(t, "live update by websocket", "%v after the flush returned (%v after it started), --poll %v",
		took.Round(time.Millisecond), (flushTook + took).Round(time.Millisecond), poll)

	ws.Cut()
	eventually(t, 10*time.Second, "B's status says it polls", func() error {
		live, _ := mb.status()["live"].(string)
		if !strings.HasPrefix(live, "polling every 12s: websocket subscription to ws://127.0.0.1:") || !strings.Contains(live, "lost") {
			return fmt.Errorf("live %q", live)
		}
		return nil
	})
	// the status is noted just before the warning is logged: give the log a moment
	eventually(t, 5*time.Second, "B's log says the subscription was lost", func() error {
		if !strings.Contains(mb.log.String(), "live: websocket subscription lost") {
			return fmt.Errorf("B's log:\n%s", mb.log.String())
		}
		return nil
	})
	writeFile(t, ma.path("state/three"), "third, found by the poll")
	ma.mustCtl("flush")
	took, err = mb.waitMirror(3, poll+5*time.Second)
	if err != nil {
		t.Fatalf("by the poll: %v\nB's log:\n%s", err, mb.log.String())
	}
	if got := readFile(t, mb.path("state/three")); got != "third, found by the poll" {
		t.Fatalf("B reads state/three as %q", got)
	}
	if n := strings.Count(mb.log.String(), "live: an Epoch event in block"); n != 1 {
		t.Errorf("%d wake-ups by websocket, want only the one before the cut", n)
	}
	t.Logf("after the socket dropped: A's change on B's mount %v after A's flush returned", took.Round(time.Millisecond))
	if live, _ := mb.status()["live"].(string); !strings.HasPrefix(live, "polling every 12s") {
		t.Errorf("after the cut, live %q", live)
	}
	ma.checkNoPanic()
	mb.checkNoPanic()
}

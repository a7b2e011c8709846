package integration

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMountStartedOfflineComesOnline starts a mount while its RPC cannot be reached: it
// serves the local replica and refuses a flush with EHOSTUNREACH; once the RPC answers, the
// next poll connects, and the staged write is anchored.
func TestMountStartedOfflineComesOnline(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "late")
	a.connect("pass")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there until the RPC "comes back"
	a.extra = append(a.extra, "KINT_RPC_URL=http://"+addr)

	mt := a.mount()
	if !strings.Contains(mt.log.String(), "offline") {
		t.Fatalf("the mount did not say it started offline:\n%s", mt.log.String())
	}
	writeFile(t, mt.path("state/goal"), "written offline")
	if err := mt.ctl("flush"); errnoOf(err) != syscall.EHOSTUNREACH {
		t.Fatalf("flush while offline: %v, want EHOSTUNREACH", err)
	}
	if st := mt.status(); st["offline"] == nil || st["offline"] == "" {
		t.Fatalf("status does not say offline: %v", st)
	}

	target, err := url.Parse(dc.info.RPC)
	if err != nil {
		t.Fatal(err)
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: httputil.NewSingleHostReverseProxy(target)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	eventually(t, 30*time.Second, "the poll reconnects", func() error {
		if off := mt.status()["offline"]; off != nil && off != "" {
			return fmt.Errorf("still %v", off)
		}
		return nil
	})
	mt.mustCtl("flush")
	st := mt.status()
	if st["staged_rows"].(float64) != 0 {
		t.Fatalf("after reconnecting and flushing: %v", st)
	}
	if got := readFile(t, mt.path("state/goal")); got != "written offline" {
		t.Fatalf("goal reads %q", got)
	}
	if !strings.Contains(mt.log.String(), "connected to the chain") {
		t.Fatalf("the mount log does not say it connected:\n%s", mt.log.String())
	}
}

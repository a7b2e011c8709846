package main

import (
	"encoding/json"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"kintfs/replica/homedir"
)

// mountedAt tells a mount that answers, a busy one that keeps the question unanswered, and a
// dying one (killed: its socket takes connections and closes them unanswered, then refuses)
// from no mount at all. A restart at once after a crash met the dying one and refused to
// mount, "mounted at a running kintfs mount", although nothing ran.
func TestMountedAt(t *testing.T) {
	home := homedir.Home{Dir: t.TempDir()}
	if dir, ok := mountedAt(home); ok {
		t.Fatalf("no socket: mounted at %q", dir)
	}
	listen := func() net.Listener {
		t.Helper()
		os.Remove(home.Path(mountSocket)) // as the mount does: what a killed one left
		ln, err := net.Listen("unix", home.Path(mountSocket))
		if err != nil {
			t.Fatal(err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false) // a killed process leaves the file
		return ln
	}
	serve := func(ln net.Listener, handle func(net.Conn)) {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go handle(c)
			}
		}()
	}

	ln := listen()
	serve(ln, func(c net.Conn) {
		defer c.Close()
		var req forwardRequest
		if json.NewDecoder(c).Decode(&req) == nil && req.Query == "mountpoint" {
			json.NewEncoder(c).Encode(forwardReply{Out: "/mnt/kint"})
		}
	})
	if dir, ok := mountedAt(home); !ok || dir != "/mnt/kint" {
		t.Fatalf("a mount that answers: %q %v", dir, ok)
	}
	ln.Close()
	if dir, ok := mountedAt(home); ok {
		t.Fatalf("the socket file left, nothing listening: mounted at %q", dir)
	}

	// dying: connections closed unanswered for 300 ms, then nothing listens
	dying := listen()
	serve(dying, func(c net.Conn) { c.Close() })
	time.AfterFunc(300*time.Millisecond, func() { dying.Close() })
	start := time.Now()
	if dir, ok := mountedAt(home); ok {
		t.Fatalf("a dying mount: mounted at %q after %v", dir, time.Since(start))
	}

	// busy: the question kept, never answered
	defer func(w time.Duration) { askWait = w }(askWait)
	askWait = 200 * time.Millisecond
	busy := listen()
	defer busy.Close()
	var mu sync.Mutex
	var held []net.Conn
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	serve(busy, func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, c)
	})
	if dir, ok := mountedAt(home); !ok || dir != "a running kintfs mount" {
		t.Fatalf("a busy mount: %q %v", dir, ok)
	}
}

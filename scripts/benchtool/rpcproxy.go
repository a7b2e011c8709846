package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
)

// rpcCounter counts the HTTP requests and the JSON-RPC calls (each element of a batch is one
// call) that pass through the proxy, by method.
type rpcCounter struct {
	mu       sync.Mutex
	requests int
	calls    int
	batches  int
	methods  map[string]int
	bytesIn  int64 // response bytes
}

func (c *rpcCounter) note(body []byte, respLen int) {
	var one struct {
		Method string `json:"method"`
	}
	var many []struct {
		Method string `json:"method"`
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	c.bytesIn += int64(respLen)
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if json.Unmarshal(trimmed, &many) == nil {
			c.batches++
			for _, m := range many {
				c.calls++
				c.methods[m.Method]++
			}
		}
		return
	}
	if json.Unmarshal(trimmed, &one) == nil {
		c.calls++
		c.methods[one.Method]++
	}
}

func (c *rpcCounter) snapshot(reset bool) map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]any{"http_requests": c.requests, "rpc_calls": c.calls, "batches": c.batches,
		"methods": c.methods, "response_bytes": c.bytesIn}
	if reset {
		c.requests, c.calls, c.batches, c.bytesIn = 0, 0, 0, 0
		c.methods = map[string]int{}
	}
	return m
}

// cmdRPCProxy forwards JSON-RPC over HTTP to -target and counts it. GET /__stats prints the
// counts as JSON; GET /__stats?reset=1 also zeroes them. It prints its URL and serves until
// it is killed.
func cmdRPCProxy(args []string) error {
	fl := flag.NewFlagSet("rpcproxy", flag.ExitOnError)
	target := fl.String("target", "", "the JSON-RPC URL to forward to")
	addr := fl.String("addr", "127.0.0.1:0", "listen address")
	fl.Parse(args)
	if *target == "" {
		return fmt.Errorf("-target is required")
	}
	cnt := &rpcCounter{methods: map[string]int{}}
	client := &http.Client{}
	mux := http.NewServeMux()
	mux.HandleFunc("/__stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(cnt.snapshot(r.URL.Query().Get("reset") != ""))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, *target, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		cnt.note(body, len(out))
		for k, vs := range resp.Header {
			if k == "Content-Length" {
				continue
			}
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(out)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Printf("http://%s\n", ln.Addr())
	return http.Serve(ln, mux)
}

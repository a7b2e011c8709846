package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"

	"kintfs/chain/rpcproxy"
)

// proxyCounts is what the bench reports of the JSON-RPC traffic of one step.
func proxyCounts(s rpcproxy.Stats) map[string]any {
	return map[string]any{"http_requests": s.Requests, "rpc_calls": s.Calls, "batches": s.Batches,
		"methods": s.Methods, "response_bytes": s.ResponseBytes}
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
	p := rpcproxy.New(*target)
	mux := http.NewServeMux()
	mux.HandleFunc("/__stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(proxyCounts(p.Stats()))
		if r.URL.Query().Get("reset") != "" {
			p.ResetStats()
		}
	})
	mux.Handle("/", p)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Printf("http://%s\n", ln.Addr())
	return http.Serve(ln, mux)
}

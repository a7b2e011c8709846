package integration

import (
	"testing"

	"kintfs/chain/rpcproxy"
)

// startRPCProxy is a loopback JSON-RPC proxy between kintfs and the node, closed with the test.
func startRPCProxy(t *testing.T, upstream string) *rpcproxy.Proxy {
	t.Helper()
	p, err := rpcproxy.Start(upstream, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// startTCPCut forwards connections to target (host:port) until it is cut, at the latest
// with the test.
func startTCPCut(t *testing.T, target string) *rpcproxy.Cut {
	t.Helper()
	p, err := rpcproxy.StartCut(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Cut)
	return p
}

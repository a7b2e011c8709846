package store

import (
	"testing"
	"unsafe"
)

// TestNodeSize: a node is one of the largest parts of a mount's memory, one per file. It holds
// no seal.Row (it took a 256-byte allocation when it did, 288 with a []byte body): 184 bytes
// today, in the 192-byte class; the bound leaves room for a key of a few more bytes.
func TestNodeSize(t *testing.T) {
	n := unsafe.Sizeof(node{})
	t.Logf("a node is %d bytes", n)
	if n > 208 {
		t.Errorf("a node is %d bytes, want at most 208", n)
	}
}

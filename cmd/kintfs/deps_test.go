package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// testOnly are the packages of the project that exist for tests: none of them, and not the
// standard testing package, may be linked into kintfs.
var testOnly = []string{
	"testing",
	"kintfs/chain/rpcproxy",
	"kintfs/integration/powercut",
	"kintfs/replica/chaintest",
	"kintfs/replica/memchain",
	"kintfs/replica/replicatest",
	"kintfs/replica/store/storetest",
	"kintfs/seal/vectors",
}

// nodeOnly are the packages of the development chain's go-ethereum node, which runs in a
// program of its own (kintfs-devchain): linked into kintfs they would double its size, and
// all of an executable stays resident while a mount runs.
var nodeOnly = []string{
	"kintfs/chain/devchain",
	"github.com/ethereum/go-ethereum/eth",
	"github.com/ethereum/go-ethereum/node",
	"github.com/ethereum/go-ethereum/core/vm",
}

// TestBinaryLinksNoTestCode lists what kintfs is built from and refuses test code in it, and
// the dev chain's node, naming the packages that import them.
func TestBinaryLinksNoTestCode(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the binary's packages: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "kintfs/cmd/kintfs").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps kintfs/cmd/kintfs: %v\n%s", err, out)
	}
	importers := map[string][]string{} // package -> the packages of the binary that import it
	var deps []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		deps = append(deps, f[0])
		for _, imp := range f[1:] {
			importers[imp] = append(importers[imp], f[0])
		}
	}
	if !slices.Contains(deps, "kintfs/fs") || !slices.Contains(deps, "kintfs/replica") {
		t.Fatalf("go list -deps named %d packages without kintfs/fs and kintfs/replica: %v", len(deps), deps)
	}
	for _, p := range testOnly {
		if slices.Contains(deps, p) {
			t.Errorf("kintfs links %s, imported by %s: move what it needs into a test-only package or a _test.go file", p, strings.Join(importers[p], ", "))
		}
	}
	for _, p := range nodeOnly {
		if slices.Contains(deps, p) {
			t.Errorf("kintfs links %s, imported by %s: the dev chain's node belongs to kintfs-devchain; what kintfs needs to know of it goes in chain/devchain/devinfo", p, strings.Join(importers[p], ", "))
		}
	}
}

package contracts_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/contracts"
)

// specABIPath finds spec/EpochAnchor.abi.json of the shared specification, which lives
// beside the repository (../shared) or wherever KINTFS_SPEC_DIR points.
func specABIPath(t *testing.T) string {
	t.Helper()
	var candidates []string
	if d := os.Getenv("KINTFS_SPEC_DIR"); d != "" {
		candidates = append(candidates, filepath.Join(d, "EpochAnchor.abi.json"))
	}
	candidates = append(candidates, filepath.Join("..", "..", "shared", "spec", "EpochAnchor.abi.json"))
	for _, p := range candidates {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("spec/EpochAnchor.abi.json not found (tried %s); set KINTFS_SPEC_DIR", strings.Join(candidates, ", "))
	return ""
}

func describeArgs(args abi.Arguments, withIndexed bool) string {
	parts := make([]string, len(args))
	for i, a := range args {
		s := a.Type.String() + " " + a.Name
		if withIndexed && a.Indexed {
			s = a.Type.String() + " indexed " + a.Name
		}
		parts[i] = s
	}
	return strings.Join(parts, ", ")
}

// abiSummary renders every function, event and error with its parameter names, indexed
// flags, state mutability and selector or topic, one line each, sorted. (A constructor is
// covered by the byte comparison of the files.)
func abiSummary(a *abi.ABI) []string {
	var lines []string
	for _, m := range a.Methods {
		lines = append(lines, fmt.Sprintf("function %s(%s) returns (%s) %s selector=%x",
			m.Name, describeArgs(m.Inputs, false), describeArgs(m.Outputs, false), m.StateMutability, m.ID))
	}
	for _, e := range a.Events {
		lines = append(lines, fmt.Sprintf("event %s(%s) anonymous=%v topic=%s",
			e.Name, describeArgs(e.Inputs, true), e.Anonymous, e.ID.Hex()))
	}
	for _, e := range a.Errors {
		lines = append(lines, fmt.Sprintf("error %s(%s) selector=%x", e.Name, describeArgs(e.Inputs, false), e.ID[:4]))
	}
	if a.HasFallback() {
		lines = append(lines, "fallback")
	}
	if a.HasReceive() {
		lines = append(lines, "receive")
	}
	sort.Strings(lines)
	return lines
}

func TestABIMatchesSpec(t *testing.T) {
	specJSON, err := os.ReadFile(specABIPath(t))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := abi.JSON(bytes.NewReader(specJSON))
	if err != nil {
		t.Fatal(err)
	}
	built, err := abi.JSON(bytes.NewReader(contracts.EpochAnchorABIJSON()))
	if err != nil {
		t.Fatal(err)
	}
	bound := contracts.NewEpochAnchor().GetABI()

	want := abiSummary(&spec)
	for name, got := range map[string][]string{"build/EpochAnchor.abi.json": abiSummary(&built), "binding": abiSummary(&bound)} {
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s differs from the spec ABI:\n got:\n  %s\nwant:\n  %s", name,
				strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
	if len(want) != 12+3+6 {
		t.Errorf("spec ABI has %d entries, want 21", len(want))
	}
	// The artifact is written in the same canonical layout as the spec file.
	if !bytes.Equal(contracts.EpochAnchorABIJSON(), specJSON) {
		t.Errorf("build/EpochAnchor.abi.json is not byte-identical to %s", specABIPath(t))
	}
	for _, line := range want {
		t.Log(line)
	}
}

// The selectors and topics published for the Base deployment.
func TestPublishedSelectors(t *testing.T) {
	a := contracts.NewEpochAnchor().GetABI()
	methods := map[string]string{
		"push": "a2483825", "setSessionKey": "580da310", "revokeSessionKey": "84f4fc6a",
		"setSessionKeyBySig": "5247dcff", "setStartSeq": "15e2058b", "head": "24e8393d",
		"canWrite": "edf2c387", "sessionKeyExpiry": "6844536f", "startSeq": "1408deb9",
		"authNonce": "8b524b7a", "DOMAIN_SEPARATOR": "3644e515", "authorizationDigest": "09c9881f",
	}
	for name, sel := range methods {
		if got := fmt.Sprintf("%x", a.Methods[name].ID); got != sel {
			t.Errorf("%s selector %s, want %s", name, got, sel)
		}
	}
	errs := map[string]string{
		"NotAuthorized": "ea8e4eb5", "StaleHead": "7fe83496", "BadSignature": "5cd5d233",
		"AuthorizationExpired": "0f05f5bf", "SeqNotMonotone": "4863002e", "EmptyCiphertext": "dbe0cd78",
	}
	for name, sel := range errs {
		if id := a.Errors[name].ID; fmt.Sprintf("%x", id[:4]) != sel {
			t.Errorf("%s selector %x, want %s", name, id[:4], sel)
		}
	}
	events := map[string]string{
		"Epoch":         "0x86da9d02e15b0a4ed66c7fca89e82bdb54f4f39993c59a4c9a5256f0eedf86bc",
		"SessionKeySet": "0x0775f7c38a29f43cd7fbc9f49b6e6ce64501452fd077c83ed52fa3e847da5625",
		"StartSeqSet":   "0x429767075b5fba88ebcab612058dbfc8613825fa68a59fa886f002c46636fa3e",
	}
	for name, topic := range events {
		if got := a.Events[name].ID; got != common.HexToHash(topic) {
			t.Errorf("%s topic %s, want %s", name, got.Hex(), topic)
		}
	}
}

// The bytecode embedded in the generated bindings is the committed build artifact.
func TestBindingsCarryBuildArtifacts(t *testing.T) {
	if got, want := common.FromHex(contracts.EpochAnchorMetaData.Bin), contracts.EpochAnchorBytecode(); !bytes.Equal(got, want) {
		t.Error("EpochAnchor binding bytecode differs from build/EpochAnchor.bin: run make contracts")
	}
	if got, want := common.FromHex(contracts.TestWalletMetaData.Bin), contracts.WalletBytecode(); !bytes.Equal(got, want) {
		t.Error("TestWallet binding bytecode differs from build/TestWallet.bin: run make contracts")
	}
	if len(contracts.EpochAnchorBytecode()) == 0 {
		t.Fatal("empty EpochAnchor bytecode")
	}
}

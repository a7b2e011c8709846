package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain/devchain"
	"kintfs/replica"
)

// TestInitPullProgress: init --pull on a new machine joins a vault of several epochs and runs
// the first pull with pull's progress: into a file (not a terminal) a line for each epoch as
// it is applied, each epoch once, then the pull's summary; the home then holds the rows.
func TestInitPullProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dc := startDevchain(t)
	const pass = "init pull passphrase"
	a, _, _ := devMachine(t, ctx, dc, "initpull", pass, t.Logf)
	rows := noiseRows(t, a, "r", 24)
	if _, err := a.Push(ctx, replica.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := a.Status()
	if err != nil {
		t.Fatal(err)
	}
	epochs := int(st.Mirror.Seq)
	if epochs < 3 {
		t.Fatalf("the vault has %d epochs, want several", epochs)
	}

	home := filepath.Join(t.TempDir(), "home")
	passFile := filepath.Join(t.TempDir(), "pass")
	if err := os.WriteFile(passFile, []byte(pass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"KINT_HOME": home, "KINT_RPC_URL": dc.Info().RPC, "KINT_CONTRACT": dc.Contract().Hex(),
		"KINT_TENANT": "initpull", "KINT_CONFIRMATIONS": "1", "KINT_NO_KEYCHAIN": "1", "KINT_OFFLINE": ""} {
		t.Setenv(k, v)
	}
	owner := crypto.PubkeyToAddress(devchain.AccountKey(0).PublicKey).Hex()
	out, errs, code := runCLI(t, "init", "--owner", owner, "--passphrase-file", passFile, "--pull")
	if code != 0 {
		t.Fatalf("init --pull: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	t.Logf("init --pull:\n%s%s", out, errs)
	if strings.Contains(errs, "\r") {
		t.Errorf("terminal output into a file:\n%q", errs)
	}
	for seq := 1; seq <= epochs; seq++ {
		if n := strings.Count(errs, fmt.Sprintf("pull: epoch %d applied", seq)); n != 1 {
			t.Errorf("epoch %d reported %d times, want once:\n%s", seq, n, errs)
		}
	}
	for _, want := range []string{fmt.Sprintf("mirror at seq %d (head %d): %d epochs applied", epochs, epochs, epochs), fmt.Sprintf("%d rows changed", len(rows))} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout does not say %q:\n%s", want, out)
		}
	}
	// the rows are here: a status of the home counts them without the chain
	sout, serrs, scode := runCLI(t, "status", "--json")
	if scode != 0 || !strings.Contains(sout, fmt.Sprintf(`"seq": %d`, epochs)) {
		t.Errorf("status after init --pull: exit %d, %s %s", scode, sout, serrs)
	}
}

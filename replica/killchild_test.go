package replica

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
)

// childEnv carries a childSetup, as JSON, to a child process a test kills.
const childEnv = "KINT_TEST_KILLED_CHILD"

// childSetup is what a child a test kills needs to open the machine: its home and the chain,
// and to push, its session key (a dev chain's throwaway key, in hex).
type childSetup struct {
	Home       string `json:"home"`
	RPC        string `json:"rpc"`
	Contract   string `json:"contract"`
	SessionKey string `json:"session_key,omitempty"`
	KillAt     uint64 `json:"kill_at,omitempty"` // the epoch a push child stops at, when it is told
}

// childSetupOf is the setup the parent handed this process; false when it is not a child.
func childSetupOf(t *testing.T) (childSetup, bool) {
	var s childSetup
	env := os.Getenv(childEnv)
	if env == "" {
		return s, false
	}
	if err := json.Unmarshal([]byte(env), &s); err != nil {
		t.Fatal(err)
	}
	return s, true
}

// openChildMachine opens the machine of s on its chain.
func openChildMachine(t *testing.T, s childSetup) *Replica {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := chain.Dial(ctx, s.RPC, common.HexToAddress(s.Contract), chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	home := homedir.Home{Dir: s.Home}
	v, err := home.LoadVault()
	if err != nil {
		t.Fatal(err)
	}
	dek, err := home.LoadDEK(v.Space)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Home: home, Vault: v, DEK: dek, Client: c, Log: slog.New(slog.DiscardHandler)}
	if s.SessionKey != "" {
		if o.SessionKey, err = crypto.HexToECDSA(s.SessionKey); err != nil {
			t.Fatal(err)
		}
	}
	o.Vault.Model = vault.ModelFull
	r, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// killChild runs the test child of this test binary with setup, waits until it prints
// "KILL ME" (it then sleeps) and kills it with SIGKILL; at names the moment, for a failure.
func killChild(t *testing.T, child string, setup childSetup, at string) {
	t.Helper()
	env, _ := json.Marshal(setup)
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+string(env))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "KILL ME") {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatalf("the child ended before %s", at)
		}
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the child never reached %s", at)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

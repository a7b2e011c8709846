package integration

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/chain"
	"kintfs/seal"
)

// headWraps reads the key wraps in the header of the head epoch.
func headWraps(t *testing.T, c *chain.Client, m *machine) []seal.Wrap {
	t.Helper()
	return headEpochHeader(t, c, m).Wraps
}

// vaultSignature is the owner's signature of the vault message, as a wallet makes it, in a
// 0600 file the test owns.
func vaultSignature(t *testing.T, m *machine) (path string, kek [32]byte) {
	t.Helper()
	key, err := crypto.HexToECDSA(strings.TrimPrefix(m.dc.ownerKeyHex(), "0x"))
	if err != nil {
		t.Fatal(err)
	}
	d := seal.VaultDigest(m.ownerAddr())
	sig, err := crypto.Sign(d[:], key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	path = filepath.Join(t.TempDir(), "sig")
	if err := os.WriteFile(path, []byte(hex.EncodeToString(sig)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if kek, err = seal.KEKFromSignature(sig, m.ownerAddr(), m.space(), nil); err != nil {
		t.Fatal(err)
	}
	return path, kek
}

func wrapKinds(ws []seal.Wrap) string {
	var s []string
	for _, w := range ws {
		s = append(s, fmt.Sprintf("%d:%x", w.Kind, w.Tag[:4]))
	}
	return strings.Join(s, ",")
}

// TestRekeyDropMissing: rekey wraps the new data key under every key given; it refuses
// without a key that opens the vault today, and refuses to drop one that does unless
// --drop-missing, naming each by kind and tag; a dropped key opens nothing after the
// rotation. KINT_OFFLINE=1 takes today's wraps from this machine instead of the head header.
func TestRekeyDropMissing(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	c := dc.client(t)
	a := newMachine(t, dc, "rekey")
	a.connect("pass one")
	ma := a.mount()
	writeFile(t, ma.path("state/x"), "before the rotations")
	ma.mustCtl("flush")
	ma.unmount()
	sigFile, sigKEK := vaultSignature(t, a)
	sigTag := seal.KEKTag(sigKEK)
	passKEK, _ := vaultKeys(t, c, a, "pass one")
	passTag := seal.KEKTag(passKEK)

	refuse := func(stdin, want string, args ...string) string {
		t.Helper()
		out, errs, code := a.run(stdin, append([]string{"rekey"}, args...)...)
		if code != 2 || !strings.Contains(errs, want) {
			t.Fatalf("rekey %v: exit %d, %q; want 2 and %q\n%s", args, code, errs, want, out)
		}
		return errs
	}
	refuse("", "rekey needs every key that is to keep opening the vault")
	refuse("pass one\n", "cannot share stdin", "--passphrase-stdin", "--signature", "-")
	refuse("", "signatures never go on the command line", "--signature", "0xabc")
	// a signature that is not a wrap today, alone: nothing given opens the vault
	refuse("", "none of the keys given opens the vault today (no key wrap in the header of epoch 1", "--signature-file", sigFile)
	refuse("another pass\n", "none of the keys given opens the vault today", "--passphrase-stdin")

	// passphrase and signature: both wrap the new key
	head := chainHead(t, c, a)
	out := a.mustRun("pass one\n", "rekey", "--passphrase-stdin", "--signature-file", sigFile)
	if !strings.Contains(out, "wrapped under 2 key(s)") {
		t.Fatalf("rekey with two keys: %s", out)
	}
	ws := headWraps(t, c, a)
	if chainHead(t, c, a).Seq != head.Seq+1 || len(ws) != 2 || ws[0].Tag != passTag || ws[0].Kind != seal.KindPassphrase ||
		ws[1].Tag != sigTag || ws[1].Kind != seal.KindSignature {
		t.Fatalf("after rekey with two keys: head %d (was %d), wraps %s", chainHead(t, c, a).Seq, head.Seq, wrapKinds(ws))
	}
	// either key alone would drop the other: refused, naming it by kind and tag
	errs := refuse("pass one\n", fmt.Sprintf("would drop 1 key(s) that open the vault today (the header of epoch %d): signature %x", head.Seq+1, sigTag[:]), "--passphrase-stdin")
	if !strings.Contains(errs, "--drop-missing") {
		t.Fatalf("the refusal does not name --drop-missing: %s", errs)
	}
	refuse("", fmt.Sprintf("passphrase %x", passTag[:]), "--signature-file", sigFile)
	if chainHead(t, c, a).Seq != head.Seq+1 {
		t.Fatalf("a refused rekey anchored an epoch")
	}

	// KINT_OFFLINE=1: the same refusal, from this machine's wraps
	a.extra = []string{"KINT_OFFLINE=1"}
	refuse("pass one\n", "(this machine's vault config (KINT_OFFLINE=1)): signature", "--passphrase-stdin")
	a.extra = nil

	// --drop-missing: the signature wrap goes, and opens nothing from now on
	out, errs, code := a.run("pass one\n", "rekey", "--passphrase-stdin", "--drop-missing")
	if code != 0 || !strings.Contains(errs, fmt.Sprintf("dropping the key wrap signature %x (--drop-missing)", sigTag[:])) {
		t.Fatalf("rekey --drop-missing: exit %d\n%s%s", code, out, errs)
	}
	if ws := headWraps(t, c, a); len(ws) != 1 || ws[0].Tag != passTag {
		t.Fatalf("after --drop-missing: wraps %s", wrapKinds(ws))
	}
	b := newMachine(t, dc, "rekey")
	if _, errs, code := b.run("", "init", "--owner", b.owner(), "--signature-file", sigFile); code != 2 || !strings.Contains(errs, "the signature does not open this vault") {
		t.Fatalf("init with the dropped signature: exit %d, %q", code, errs)
	}
	b.mustRun("pass one\n", "init", "--owner", b.owner(), "--passphrase-stdin")
	b.pull()
	if got := b.mustRun("", "history", "state", "x", "--block", "100000000"); got != "before the rotations" {
		t.Fatalf("the row after the rotations: %q", got)
	}

	// KINT_OFFLINE=1 with this machine's wraps: a rotation goes through
	a.extra = []string{"KINT_OFFLINE=1"}
	if out := a.mustRun("pass one\n", "rekey", "--passphrase-stdin"); !strings.Contains(out, "rekeyed") {
		t.Fatalf("rekey under KINT_OFFLINE=1: %s", out)
	}
	a.extra = nil
	// b's cached key is retired now: its rekey would seal a snapshot of a stale mirror
	if _, errs, code := b.run("pass one\n", "rekey", "--passphrase-stdin"); code != 2 || !strings.Contains(errs, "a rekey happened elsewhere") {
		t.Fatalf("rekey with a retired key: exit %d, %q", code, errs)
	}
}

// TestRekeyWhileMounted: a rekey runs inside the running mount, which goes on serving and
// sealing under the new key; a refusal comes back with its code; neither the passphrase nor
// the key reaches the mount's log.
func TestRekeyWhileMounted(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	c := dc.client(t)
	a := newMachine(t, dc, "rekeymnt")
	a.connect("mounted pass")
	ma := a.mount()
	writeFile(t, ma.path("state/x"), "one")
	ma.mustCtl("flush")
	_, oldDEK := vaultKeys(t, c, a, "mounted pass")

	if _, errs, code := a.run("wrong pass\n", "rekey", "--passphrase-stdin"); code != 2 || !strings.Contains(errs, "none of the keys given opens the vault today") ||
		strings.Count(strings.TrimSpace(errs), "\n") > 0 {
		t.Fatalf("a refused rekey while mounted: exit %d, %q", code, errs)
	}
	sigFile, _ := vaultSignature(t, a)
	if _, errs, code := a.run("", "rekey", "--signature-file", sigFile); code != 2 || !strings.Contains(errs, "none of the keys given") {
		t.Fatalf("rekey with a key that is no wrap, while mounted: exit %d, %q", code, errs)
	}
	// a rekey whose snapshot the contract refuses (the session key's authorization ran out):
	// the mount keeps the old key and seals its next epoch under it
	a.extra = []string{"KINT_OWNER_KEY=" + dc.ownerKeyHex()}
	a.mustRun("", "authorize", "--expiry", "1s")
	time.Sleep(2 * time.Second)
	if _, errs, code := a.run("mounted pass\n", "rekey", "--passphrase-stdin"); code != 3 || !strings.Contains(errs, "not authorized") {
		t.Fatalf("rekey with the authorization expired, while mounted: exit %d, %q", code, errs)
	}
	a.mustRun("", "authorize")
	a.extra = nil
	writeFile(t, ma.path("state/w"), "after a failed rekey")
	ma.mustCtl("flush")
	if _, dek := vaultKeys(t, c, a, "mounted pass"); dek != oldDEK {
		t.Fatalf("after a failed rekey the mount sealed under another key")
	}

	head := chainHead(t, c, a)
	out := a.mustRun("mounted pass\n", "rekey", "--passphrase-stdin")
	if !strings.Contains(out, "rekeyed: data key") {
		t.Fatalf("rekey while mounted: %s", out)
	}
	if h := chainHead(t, c, a); h.Seq != head.Seq+1 {
		t.Fatalf("rekey while mounted: head %d, was %d", h.Seq, head.Seq)
	}
	_, newDEK := vaultKeys(t, c, a, "mounted pass")
	if newDEK == oldDEK {
		t.Fatalf("the data key did not change")
	}
	// the mount seals its next epoch under the new key
	writeFile(t, ma.path("state/y"), "after the rotation")
	ma.mustCtl("flush")
	if _, dek := vaultKeys(t, c, a, "mounted pass"); dek != newDEK {
		t.Fatalf("the mount sealed its next epoch under another key")
	}
	if got := readFile(t, ma.path("state/x")); got != "one" {
		t.Fatalf("state/x after the rotation: %q", got)
	}
	if st := ma.status(); st["staged_rows"] != float64(0) {
		t.Fatalf("status after the rotation: %v", st)
	}
	kek, _ := vaultKeys(t, c, a, "mounted pass")
	for what, text := range map[string]string{"the mount's log": ma.log.String(), "rekey's output": out} {
		for _, secret := range []string{"mounted pass", hex.EncodeToString(kek[:]), hex.EncodeToString(newDEK[:]), seal.EncodeRecoveryCode(newDEK)} {
			if strings.Contains(strings.ToLower(text), strings.ToLower(secret)) {
				t.Fatalf("%s shows a secret:\n%s", what, text)
			}
		}
	}
	ma.unmount()
	// a new machine opens both epochs with the passphrase
	b := newMachine(t, dc, "rekeymnt")
	b.mustRun("mounted pass\n", "init", "--owner", b.owner(), "--passphrase-stdin")
	b.pull()
	if got := b.mustRun("", "history", "state", "y", "--block", "100000000"); got != "after the rotation" {
		t.Fatalf("state/y on a new machine: %q", got)
	}
}

// TestOfflineInitVerify: KINT_OFFLINE=1 lets init unlock the cached key from this machine's
// wraps and verify prove against the mirror, both without the chain; without it, verify
// refuses when the chain moved past the mirror.
func TestOfflineInitVerify(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	a := newMachine(t, dc, "offline")
	a.connect("offline pass")
	ma := a.mount()
	writeFile(t, ma.path("state/x"), "anchored")
	ma.mustCtl("flush")
	ma.unmount()
	dead := "KINT_RPC_URL=http://127.0.0.1:1"

	// the cached key gone: init under KINT_OFFLINE=1 with the RPC dead
	dek, _ := filepath.Glob(filepath.Join(a.home, "keys", "*.dek"))
	if len(dek) != 1 {
		t.Fatalf("cached keys: %v", dek)
	}
	os.Remove(dek[0])
	a.extra = []string{"KINT_OFFLINE=1", dead}
	if _, errs, code := a.run("not the pass\n", "init", "--owner", a.owner(), "--passphrase-stdin"); code != 2 || !strings.Contains(errs, "opens none of this machine's key wraps") {
		t.Fatalf("offline init with a wrong passphrase: exit %d, %q", code, errs)
	}
	out := a.mustRun("offline pass\n", "init", "--owner", a.owner(), "--passphrase-stdin")
	if !strings.Contains(out, "KINT_OFFLINE=1: the chain was not read") {
		t.Fatalf("offline init: %s", out)
	}
	fresh := newMachine(t, dc, "offline")
	fresh.extra = a.extra
	if _, errs, code := fresh.run("offline pass\n", "init", "--owner", a.owner(), "--passphrase-stdin"); code != 2 || !strings.Contains(errs, "no vault config") {
		t.Fatalf("offline init on a new machine: exit %d, %q", code, errs)
	}
	// the recovery code, offline: checked against this machine's current key
	rec, _ := filepath.Glob(filepath.Join(a.home, "RECOVERY-*.txt"))
	if len(rec) != 1 {
		t.Fatalf("recovery files: %v", rec)
	}
	text, _ := os.ReadFile(rec[0])
	code := recoveryCodeIn(string(text))
	os.Remove(dek[0])
	// a typo in the first character: its bits are all key bits (the last one has padding bits)
	typo := "A"
	if strings.HasPrefix(code, "A") {
		typo = "B"
	}
	if _, errs, c := a.run(typo+code[1:]+"\n", "init", "--owner", a.owner(), "--recovery-code-stdin"); c != 2 || !strings.Contains(errs, "checksum") {
		t.Fatalf("offline init with a mistyped recovery code: exit %d, %q", c, errs)
	}
	if out := a.mustRun(code+"\n", "init", "--owner", a.owner(), "--recovery-code-stdin"); !strings.Contains(out, "the chain was not read") {
		t.Fatalf("offline init with the recovery code: %s", out)
	}
	a.extra = nil
	a.mustRun("", "pull") // the unlocked key opens the chain's epochs

	// another machine anchors: verify on this one refuses until it pulls
	ma = a.mount("--poll", "1h")
	b := newMachine(t, dc, "offline")
	b.connect("offline pass")
	mb := b.mount()
	writeFile(t, mb.path("state/x"), "changed elsewhere")
	mb.mustCtl("flush")
	mb.unmount()
	// the mount's websocket subscription may have pulled already; if not, verify must refuse
	if _, errs, code := a.run("", "verify", ma.path("state/x")); code != 0 && (code != 1 || !strings.Contains(errs, "chain moved to seq 2") || !strings.Contains(errs, "pull first")) {
		t.Fatalf("verify behind the chain: exit %d, %q", code, errs)
	}
	// KINT_OFFLINE=1 does not read the head: the proof against the mirror
	a.extra = []string{"KINT_OFFLINE=1"}
	if out := a.mustRun("", "verify", ma.path("state/x")); !strings.Contains(out, ": ok: ") || !strings.Contains(out, "of epoch 1") {
		t.Fatalf("verify under KINT_OFFLINE=1: %s", out)
	}
	a.extra = nil
	ma.mustCtl("pull")
	if out := a.mustRun("", "verify", ma.path("state/x")); !strings.Contains(out, "of epoch 2") {
		t.Fatalf("verify after the pull: %s", out)
	}
}

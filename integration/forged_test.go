package integration

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/seal"
)

// forgery is one bad epoch TestForgedEpochs appends with a session key.
type forgery struct {
	name   string
	reason string // the gap's reason, as the spec names it
	// before, when set, has the honest machine anchor an epoch first that the pulling
	// machine has not seen: the bad epoch then sits on top of one it must still apply
	before bool
	make   func(seq uint64, prev common.Hash) []byte
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// pullResult is what kintfs pull --json printed, with its exit code and stderr.
type pullResult struct {
	Mirror  headJSON `json:"mirror"`
	Skipped []struct {
		Seq          uint64 `json:"seq"`
		Reason       string `json:"reason"`
		SupersededBy uint64 `json:"superseded_by"`
	} `json:"skipped"`
	Gap *struct {
		Seq    uint64 `json:"seq"`
		Reason string `json:"reason"`
	} `json:"gap"`
	code   int
	stderr string
}

func (m *machine) pullJSON(args ...string) pullResult {
	m.t.Helper()
	out, errs, code := m.run("", append([]string{"pull", "--json"}, args...)...)
	var r pullResult
	if err := json.Unmarshal([]byte(out), &r); err != nil && code == 0 {
		m.t.Fatalf("pull --json printed %q: %v", out, err)
	}
	r.code, r.stderr = code, errs
	return r
}

// TestForgedEpochs appends, with a session key of the owner, epochs that nobody can apply:
// random bytes, an epoch sealed under another data key with a wrap for another key, epochs
// whose header snapshot flag and plaintext disagree (both ways), and a well-sealed epoch with
// a wrong rows_root (the test knows the data key: it derives the KEK from the passphrase and
// unwraps the DEK from the head epoch's header). Each one stops a pull with a gap that names
// the spec's reason (exit 5), leaves the mirror where it was (having applied the honest epochs
// before it), keeps staged rows, and refuses pushes; kintfs compact on the machine that holds
// the data key anchors a snapshot over it, after which every machine pulls to the head. A
// walk with --full from a new machine skips the bad epochs that do not open (superseded_by a
// snapshot) and stops at the one that opened and contradicts the chain.
func TestForgedEpochs(t *testing.T) {
	requireFUSE(t)
	const pass = "forged epochs passphrase"
	dc := startDevchain(t)
	c := dc.client(t)
	a := newMachine(t, dc, "forged")
	a.connect(pass)
	ma := a.mount()
	writeFile(t, ma.path("entity/people/ada"), `{"name":"ada"}`)
	writeFile(t, ma.path("state/goal"), "the honest state")
	ma.mustCtl("flush")
	_, dek := vaultKeys(t, c, a, pass)
	b := newMachine(t, dc, "forged")
	b.connect(pass)
	// B's mount answers B's commands (the CLI forwards them to it); it never polls on its own
	// here, so each pull is the test's
	mb := b.mount("--poll", "1h")
	bLast := b.pullJSON()
	if bLast.code != 0 {
		t.Fatalf("first pull: exit %d: %s", bLast.code, bLast.stderr)
	}
	in := newIntruder(t, dc, c, a)

	ectx := func(seq uint64, prev common.Hash) seal.EpochContext {
		return seal.EpochContext{ChainID: dc.info.ChainID, Owner: a.ownerAddr(), Space: a.space(), Seq: seq, Prev: prev}
	}
	sealed := func(p *seal.Plaintext, key [32]byte, wraps []seal.Wrap) []byte {
		var nonce [12]byte
		copy(nonce[:], randomBytes(t, 12))
		s, err := seal.Seal(p, ectx(p.Seq, p.Prev), key, wraps, 0, nonce)
		if err != nil {
			t.Fatal(err)
		}
		return s.Blob
	}
	body := `{"forged":true}`
	cat := "people"
	plaintext := func(seq uint64, prev common.Hash, snapshot bool) *seal.Plaintext {
		root := [32]byte(randomBytes(t, 32))
		return &seal.Plaintext{Tenant: a.tenant, Space: a.space(), Seq: seq, Prev: prev, CreatedAt: seal.FormatCreatedAt(time.Now()),
			Rows: []seal.Row{{Tier: seal.TierEntity, Category: &cat, Key: "mallory", Body: seal.BodyOf([]byte(body))}}, RowsRoot: root, NRows: 3, Snapshot: snapshot}
	}
	var nonce [12]byte
	cases := []forgery{
		{name: "random bytes", reason: seal.ErrHeaderVersion.Error(), make: func(uint64, common.Hash) []byte {
			blob := randomBytes(t, 4096+seal.HeaderFixedLen+16)
			blob[0] = 0x7f
			return blob
		}},
		{name: "a header with a wrap for another key", reason: seal.ErrDekIDMismatch.Error(), make: func(seq uint64, prev common.Hash) []byte {
			otherDEK, otherKEK := [32]byte(randomBytes(t, 32)), [32]byte(randomBytes(t, 32))
			copy(nonce[:], randomBytes(t, 12))
			return sealed(plaintext(seq, prev, false), otherDEK, []seal.Wrap{seal.WrapDEK(otherKEK, seal.KindPassphrase, otherDEK, nonce)})
		}},
		{name: "header says snapshot, plaintext does not", reason: seal.ErrSnapshotDisagree.Error(), before: true, make: func(seq uint64, prev common.Hash) []byte {
			blob := sealed(plaintext(seq, prev, false), dek, nil)
			blob[1] |= seal.FlagSnapshot // the flags byte is outside the AAD: a session key can set it
			return blob
		}},
		{name: "plaintext says snapshot, header does not", reason: seal.ErrSnapshotDisagree.Error(), make: func(seq uint64, prev common.Hash) []byte {
			blob := sealed(plaintext(seq, prev, true), dek, nil)
			blob[1] &^= seal.FlagSnapshot
			return blob
		}},
		{name: "a wrong rows_root", reason: "rows_root mismatch", make: func(seq uint64, prev common.Hash) []byte {
			return sealed(plaintext(seq, prev, false), dek, nil)
		}},
	}
	var forged []uint64
	for n, fc := range cases {
		if fc.before {
			writeFile(t, ma.path("state/before"), fmt.Sprintf("anchored before forgery %d", n))
			ma.mustCtl("flush")
		}
		if fc.before && bLast.Mirror.Seq+1 != chainHead(t, c, a).Seq {
			t.Fatalf("%s: machine B should be one epoch behind: mirror %d, head %d", fc.name, bLast.Mirror.Seq, chainHead(t, c, a).Seq)
		}
		// a change staged on the machine with the key, before the bad epoch lands
		staged := fmt.Sprintf("state/staged-%d", n)
		writeFile(t, ma.path(staged), fmt.Sprintf("staged before forgery %d", n))

		head := chainHead(t, c, a)
		rc := in.append(fc.make(head.Seq+1, head.Digest))
		forged = append(forged, rc.Seq)

		// the machine without local changes: the pull stops with a named gap
		r := b.pullJSON()
		t.Logf("%s (seq %d): B pull: exit %d: %s", fc.name, rc.Seq, r.code, strings.TrimSpace(r.stderr))
		if r.code != 5 || !strings.Contains(r.stderr, fc.reason) || !strings.Contains(r.stderr, fmt.Sprintf("epoch %d", rc.Seq)) {
			t.Fatalf("%s: pull exit %d, stderr %q; want exit 5 naming epoch %d and %q", fc.name, r.code, r.stderr, rc.Seq, fc.reason)
		}
		stB := mb.mustStatus()
		// the honest epochs under the bad one are applied, the bad one is not
		if r.Mirror.Seq != head.Seq || len(stB.Gaps) != 1 || stB.Gaps[0].Seq != rc.Seq || !strings.Contains(stB.Gaps[0].Reason, fc.reason) {
			t.Fatalf("%s: machine B after the pull: mirror %d (want %d), gaps %+v", fc.name, r.Mirror.Seq, head.Seq, stB.Gaps)
		}

		// the machine with the key and a staged row: it stops too, and keeps the row
		pullErr, flushErr := ma.ctl("pull"), ma.ctl("flush")
		if pullErr == nil || flushErr == nil {
			t.Fatalf("%s: over a bad epoch, ctl pull: %v, ctl flush: %v; want both refused", fc.name, pullErr, flushErr)
		}
		if errnoOf(pullErr) != syscall.EBADMSG || errnoOf(flushErr) != syscall.EBADMSG {
			t.Fatalf("%s: over a bad epoch, ctl pull: %v, ctl flush: %v; want EBADMSG for both", fc.name, pullErr, flushErr)
		}
		if n == 0 {
			recordFigure(t, "errno of ctl pull / flush over a gap", "%s / %s", errnoName(errnoOf(pullErr)), errnoName(errnoOf(flushErr)))
		}
		stA := ma.mustStatus()
		if len(stA.Gaps) != 1 || stA.Gaps[0].Seq != rc.Seq || stA.StagedRows == 0 || stA.Mirror.Seq != head.Seq {
			t.Fatalf("%s: machine A: gaps %+v, %d staged, mirror %d", fc.name, stA.Gaps, stA.StagedRows, stA.Mirror.Seq)
		}
		if got := readFile(t, ma.path(staged)); got != fmt.Sprintf("staged before forgery %d", n) {
			t.Fatalf("%s: the staged row reads %q", fc.name, got)
		}
		writeFile(t, mb.path("state/b-staged"), fmt.Sprintf("B's change %d", n))
		out, errs, code := b.run("", "push")
		if code != 5 || !strings.Contains(errs, "compact") {
			t.Fatalf("%s: push on a machine with a gap: exit %d, %q; want 5 and a pointer to kintfs compact", fc.name, code, errs+out)
		}

		// the owner's snapshot, from the machine that holds the key, recovers everyone; the
		// override is explicit
		out, errs, code = a.run("", "compact")
		if code != 5 || !strings.Contains(errs, "--over-skipped") {
			t.Fatalf("%s: kintfs compact over the gap without --over-skipped: exit %d, %q; want 5 naming the flag", fc.name, code, errs+out)
		}
		out, errs, code = a.run("", "compact", "--over-skipped")
		if code != 0 {
			t.Fatalf("%s: kintfs compact over the gap: exit %d\n%s\n%s\nmount log:\n%s", fc.name, code, out, errs, ma.log.String())
		}
		stA = waitIdle(t, c, a, ma, 30*time.Second)
		if len(stA.Gaps) != 0 || stA.StagedRows != 0 {
			t.Fatalf("%s: after compact machine A still has gaps %+v, %d staged", fc.name, stA.Gaps, stA.StagedRows)
		}
		if bLast = b.pullJSON(); bLast.code != 0 || bLast.Mirror.Digest != stA.Mirror.Digest {
			t.Fatalf("%s: pull after the snapshot: exit %d, mirror %+v (A %+v): %s", fc.name, bLast.code, bLast.Mirror, stA.Mirror, bLast.stderr)
		}
		if st := mb.mustStatus(); len(st.Gaps) != 0 {
			t.Fatalf("%s: machine B keeps gaps %+v after the snapshot", fc.name, st.Gaps)
		}
		// B's own change, staged while it could not push, now goes on top of the snapshot
		mb.mustCtl("flush")
		waitIdle(t, c, b, mb, 30*time.Second)
		eventually(t, 20*time.Second, "A sees B's change", func() error {
			if got, err := readFileErr(ma.path("state/b-staged")); err != nil || got != fmt.Sprintf("B's change %d", n) {
				return fmt.Errorf("state/b-staged = %q, %v", got, err)
			}
			return nil
		})
		bLast.Mirror = mb.mustStatus().Mirror
		if _, err := readFileErr(ma.path("entity/people/mallory")); err == nil {
			t.Fatalf("%s: the forged row is in the tree", fc.name)
		}
		recordFigure(t, fc.name, "seq %d: gap %q, exit %d; compact recovered", rc.Seq, fc.reason, 5)
	}

	// a new machine connects from the snapshot at the head, and a walk past every snapshot
	// skips what does not open and stops at what opened and contradicts the chain
	d := newMachine(t, dc, "forged")
	d.connect(pass)
	r := d.pullJSON("--full")
	skipped := map[uint64]string{}
	for _, s := range r.Skipped {
		if s.SupersededBy <= s.Seq {
			t.Errorf("skipped epoch %d names snapshot %d", s.Seq, s.SupersededBy)
		}
		skipped[s.Seq] = s.Reason
	}
	for i, fc := range cases[:len(cases)-1] {
		if !strings.Contains(skipped[forged[i]], fc.reason) {
			t.Errorf("pull --full: epoch %d (%s) skipped as %q, want %q", forged[i], fc.name, skipped[forged[i]], fc.reason)
		}
	}
	last := forged[len(forged)-1]
	if r.code != 5 || r.Gap == nil || r.Gap.Seq != last {
		t.Errorf("pull --full: exit %d, gap %+v; want 5 stopping at epoch %d (%s)", r.code, r.Gap, last, r.stderr)
	}
	recordFigure(t, "pull --full on a new machine", "skipped %d (superseded by snapshots), stopped at %d with exit %d", len(r.Skipped), last, r.code)
	if r := d.pullJSON(); r.code != 0 || r.Mirror.Seq != chainHead(t, c, a).Seq {
		t.Errorf("a pull from the newest snapshot after that: exit %d, mirror %+v: %s", r.code, r.Mirror, r.stderr)
	}
	ma.checkNoPanic()
	mb.checkNoPanic()
}

func readFileErr(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

package replica

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"kintfs/replica/store"
	"kintfs/replica/store/storetest"
	"kintfs/replica/vault"
	"kintfs/seal"
)

// The writer's own path end to end: a push of more tiny rows than one transaction holds
// anchors them in two epochs (bucket policy kint: the largest epochs) and applies both as its
// own; a fresh machine pulls the same.
func TestPushPullLargestEpochs(t *testing.T) {
	t.Parallel() // a chain and homes of its own
	e := newChainEnv(t)
	ctx := context.Background()
	w := e.machine()
	if err := w.SetBucketPolicy(PolicyKint); err != nil {
		t.Fatal(err)
	}
	rows := storetest.TinyRows(30000, "")
	storetest.StageRows(t, w.store, rows)
	start := time.Now()
	rep, err := w.Push(ctx, PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pushed %d rows in %d epochs in %v: %+v", len(rows), len(rep.Epochs), time.Since(start), rep.Epochs)
	if len(rep.Epochs) != 2 || rep.Epochs[0].Rows < 20000 {
		t.Fatalf("epochs %+v", rep.Epochs)
	}
	if st, _, _, err := w.store.CollectStaged(false); err != nil || len(st) != 0 {
		t.Fatalf("%d rows still staged, %v", len(st), err)
	}
	storetest.CheckRows(t, w.store, rows)

	f := e.machine()
	start = time.Now()
	prep, err := f.Pull(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a fresh machine pulled %d epochs in %v", prep.Applied, time.Since(start))
	wh, _ := w.MirrorHead()
	fh, _ := f.MirrorHead()
	if wh != fh || fh.Seq != 2 {
		t.Fatalf("heads: writer %+v, fresh %+v", wh, fh)
	}
	storetest.CheckRows(t, f.store, rows)
	wl, _ := w.List(seal.TierState, nil)
	fl, _ := f.List(seal.TierState, nil)
	if len(wl) != len(rows) || len(fl) != len(rows) {
		t.Fatalf("listed %d and %d, want %d", len(wl), len(fl), len(rows))
	}
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(t *testing.T) func(string, ...any) {
	return func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		l.mu.Lock()
		l.lines = append(l.lines, s)
		l.mu.Unlock()
		t.Log(s)
	}
}

// text is every line so far, one a line.
func (l *logLines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *logLines) find(sub string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return s
		}
	}
	return ""
}

// A snapshot some other writer anchored that this code cannot apply: the fresh machine's log
// says why, without the row.
func TestPullUnapplicableSnapshotSaysWhy(t *testing.T) {
	e := newChainEnv(t)
	ctx := context.Background()
	w := e.machine()
	storetest.StageRows(t, w.store, []seal.Row{{Tier: seal.TierState, Key: "a", Body: seal.BodyString("1")}})
	if _, err := w.Push(ctx, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	storetest.StageRows(t, w.store, []seal.Row{{Tier: seal.TierState, Key: "b", Body: seal.BodyString("2")}})
	if _, err := w.Push(ctx, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	// one past the key limit: push holds it and anchors the rest, so seal and send it by
	// hand, as another writer might
	secret := "secret-meta-" + strings.Repeat("m", 10)
	long := seal.Row{Tier: seal.TierState, Key: strings.Repeat("k", store.MaxKeyBytes-41), Body: seal.BodyString("body-secret"), Meta: &secret}
	storetest.StageRows(t, w.store, []seal.Row{long})
	if _, err := w.Push(ctx, PushOptions{Snapshot: true}); err == nil || !strings.Contains(err.Error(), "cannot be applied") {
		// the row is held, and a snapshot without it is anchored instead
		t.Logf("push --snapshot: %v", err)
	}
	if st, _, held, _ := w.store.CollectStaged(false); len(held) != 1 || !strings.Contains(held[0].Reason, "cannot be anchored: its key is") || len(st) != 0 {
		t.Fatalf("held %+v", held)
	}
	head, err := w.Client().Head(ctx, w.vault.Owner, w.vault.Space)
	if err != nil {
		t.Fatal(err)
	}
	p := &seal.Plaintext{Tenant: w.vault.Tenant, Space: w.vault.Space, Seq: head.Seq + 1, Prev: head.Digest,
		Rows: []seal.Row{long}, Deleted: []seal.Deleted{}, RowsRoot: seal.StateRoot([]seal.Row{long}), NRows: 1,
		CreatedAt: seal.FormatCreatedAt(time.Now()), Snapshot: true}
	wraps, err := w.vault.WrapList()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := seal.Seal(p, w.epochContext(p.Seq, p.Prev), w.opt.DEK, wraps, 0, [12]byte{9})
	if err != nil {
		t.Fatal(err)
	}
	prep, err := w.Client().PreparePush(ctx, w.opt.SessionKey, w.vault.Owner, w.vault.Space, p.Prev, sealed.Blob)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Client().Send(ctx, prep); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Client().WaitPush(ctx, prep, w.vault.Owner, w.vault.Space, 1); err != nil {
		t.Fatal(err)
	}

	var log logLines
	f := e.machineWith(log.logf(t))
	_, err = f.Pull(ctx, false)
	if err == nil {
		t.Fatal("a pull stopping at an epoch it cannot apply must say so")
	}
	line := log.find("claims to be a snapshot but cannot be applied")
	if line == "" {
		t.Fatal("no log line for the snapshot")
	}
	if !strings.Contains(line, fmt.Sprintf("(epoch %d: row 0 (state tier) cannot be applied: its key is %d bytes long", p.Seq, store.MaxKeyBytes-41)) {
		t.Fatalf("the line does not say why: %s", line)
	}
	for _, bad := range []string{"kkkk", "body-secret", "secret-meta", fmt.Sprintf("%x", f.opt.DEK[:4])} {
		if strings.Contains(line, bad) {
			t.Fatalf("the line shows %q: %.300s", bad, line)
		}
	}
	// the epochs under the snapshot still applied
	if body, err := f.Content(vault.Key{Tier: seal.TierState, Key: "b"}); err != nil || string(body) != "2" {
		t.Fatalf("b = %q, %v", body, err)
	}
}

package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sizeMarker starts every body written here: no mount log may ever contain it.
const sizeMarker = "SIZE-MARKER-2b9c"

const fileLimit = 64 << 20 // vault.MaxFileBytes

func markedBody(n int, fill byte) []byte {
	b := bytes.Repeat([]byte{fill}, n)
	copy(b, sizeMarker)
	return b
}

func randomText(t *testing.T, n int) []byte {
	raw := make([]byte, n*3/4+3)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	b := []byte(sizeMarker + base64.StdEncoding.EncodeToString(raw))
	return b[:n]
}

func heldByKey(st map[string]any) map[string]string {
	out := map[string]string{}
	held, _ := st["held"].([]any)
	for _, h := range held {
		m := h.(map[string]any)
		out[m["key"].(string)] = m["reason"].(string)
	}
	return out
}

// TestSizeLimits is the size contract end to end, on a real mount and a real chain: files of
// 1 MiB, 10 MiB and the limit -1, exactly and +1 bytes are written, read back, flushed and
// remounted; limit+1 gets EFBIG at the write and leaves the file as it was. Rows that cannot
// fit an epoch (one of 50 MiB that compresses well but is too long uncompressed, one that
// does not compress) are held with their reason beside ordinary rows, which anchor; the
// held rows never set off the size trigger, so three small writes after them make one
// epoch, not three. compact over the single-epoch cap exits 2. No mount log ever quotes a
// body.
func TestSizeLimits(t *testing.T) {
	requireFUSE(t)
	dc := startDevchain(t)
	c := dc.client(t)
	a := newMachine(t, dc, "size-limits")
	a.connect("size limits passphrase")
	a.extra = append(a.extra, "KINT_QUIET_SECONDS=3")
	mt := a.mount()
	var logs []string
	defer func() {
		for i, l := range append(logs, mt.log.String()) {
			if strings.Contains(l, sizeMarker) {
				t.Errorf("mount log %d quotes a body:\n%.2000s", i, l)
			}
		}
	}()

	files := map[string][]byte{
		"state/ok1":   markedBody(100, 'a'),
		"state/ok2":   markedBody(200, 'b'),
		"state/1MiB":  markedBody(1<<20, 'c'),
		"state/10MiB": markedBody(10<<20, 'c'), // compresses to about 10 KB: anchored
		"state/below": markedBody(fileLimit-1, 'c'),
		"state/at":    markedBody(fileLimit, 'c'),
		"state/w":     markedBody(50<<20, 'c'), // fits 90 KB compressed, not an epoch's 16 MiB uncompressed
		"state/rand":  randomText(t, 1<<20),    // does not compress: over 90 KB
	}
	for name, body := range files {
		if err := os.WriteFile(mt.path(name), body, 0o644); err != nil {
			t.Fatalf("write %s (%d bytes): %v", name, len(body), err)
		}
	}
	old := []byte(sizeMarker + " the old content")
	files["state/old"] = old
	if err := os.WriteFile(mt.path("state/old"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	over := markedBody(fileLimit+1, 'c')
	if err := os.WriteFile(mt.path("state/old"), over, 0o644); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("write limit+1 over a file: %v, want EFBIG", err)
	}
	if err := os.WriteFile(mt.path("state/over"), over, 0o644); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("write limit+1 to a new file: %v, want EFBIG", err)
	}
	files["state/over"] = []byte{}

	before := chainHead(t, c, a).Seq
	start := time.Now()
	mt.mustCtl("flush")
	flushTime := time.Since(start)
	head := chainHead(t, c, a).Seq
	if head <= before {
		t.Fatalf("flush anchored nothing (seq %d)", head)
	}
	st := mt.status()
	held := heldByKey(st)
	for _, k := range []string{"below", "at", "w"} {
		if !strings.Contains(held[k], "bytes uncompressed, more than the 16777216 bytes one epoch sealed here carries") {
			t.Errorf("%s held %q, want the uncompressed-size reason", k, held[k])
		}
	}
	if !strings.Contains(held["rand"], "compresses to more than 90 KB on its own and cannot fit one epoch") {
		t.Errorf("rand held %q, want kint's reason", held["rand"])
	}
	for _, k := range []string{"ok1", "ok2", "1MiB", "10MiB", "old", "over"} {
		if r, ok := held[k]; ok {
			t.Errorf("%s is held: %s", k, r)
		}
	}
	if n := st["staged_rows"].(float64); int(n) != len(held) {
		t.Errorf("%v rows staged after the flush, want only the %d held", n, len(held))
	}
	anchor, err := getxattr(mt.path("state/w"), "user.kint.anchored")
	if err != nil || !strings.Contains(anchor, "held: row state w is 52428800 bytes uncompressed") {
		t.Errorf("user.kint.anchored of the held row: %q %v", anchor, err)
	}
	t.Logf("ctl flush with 1 MiB and 10 MiB rows beside held ones: %v", flushTime.Round(time.Millisecond))

	// three small writes after the held rows: one epoch after the quiet time, not three
	before = head
	for i := range 3 {
		writeFile(t, mt.path(fmt.Sprintf("state/small%d", i)), sizeMarker+" small")
		files[fmt.Sprintf("state/small%d", i)] = []byte(sizeMarker + " small")
		time.Sleep(200 * time.Millisecond)
	}
	eventually(t, 30*time.Second, "the small writes anchored", func() error {
		if n := mt.status()["staged_rows"].(float64); int(n) != len(held) {
			return fmt.Errorf("%v rows staged", n)
		}
		return nil
	})
	time.Sleep(4 * time.Second) // a second epoch, if there were one, would be out by now
	got := chainHead(t, c, a).Seq - before
	if got != 1 {
		t.Errorf("three small writes beside held rows made %d epochs, want 1", got)
	}
	recordFigure(t, "epochs for 3 small writes beside 4 held rows of 1-64 MiB", "%d", got)

	check := func(when string) {
		t.Helper()
		for name, want := range files {
			got, err := os.ReadFile(mt.path(name))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %s reads %d bytes (%v), want %d", when, name, len(got), err, len(want))
			}
		}
	}
	check("after the flush")
	mt.unmount()
	logs = append(logs, mt.log.String())
	mt = a.mountAt(mt.dir)
	check("after a remount")
	if h := heldByKey(mt.status()); len(h) != len(held) {
		t.Errorf("after a remount %d rows held, want %d", len(h), len(held))
	}

	// compact over the single-epoch cap: three rows that do not compress, anchored as diffs,
	// make a state no snapshot can carry
	for i := range 3 {
		if err := os.WriteFile(mt.path(fmt.Sprintf("state/noise%d", i)), randomText(t, 50<<10), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mt.mustCtl("flush")
	out, errs, code := a.run("", "compact")
	if code != 2 || !strings.Contains(errs, "snapshots are single-epoch") || !strings.Contains(errs, "Nothing else is blocked") {
		t.Fatalf("compact over the cap: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if strings.Contains(out+errs, sizeMarker) {
		t.Errorf("compact's output quotes a body")
	}
}

func getxattr(path, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(path, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

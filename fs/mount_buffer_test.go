package fs

import (
	"kintfs/replica/vault"
	"os"
	"testing"
	"time"
)

// TestPullThenTruncateOpenFile: a file open here (its buffer read and clean) is changed by a
// pull, then cut by path: what is cut and stored is the pulled content, not what the buffer
// held before the pull.
func TestPullThenTruncateOpenFile(t *testing.T) {
	tm := mountForTest(t)
	p := tm.path("state", "x")
	mustSh(t, "echo 'before the pull' > "+p)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64)
	if n, err := f.ReadAt(buf, 0); string(buf[:n]) != "before the pull\n" {
		t.Fatalf("open reader sees %q (%v)", buf[:n], err)
	}
	k := stateKey("x")
	if _, err := tm.r.Write(k, []byte("pulled from another machine\n"), time.Now()); err != nil {
		t.Fatal(err)
	}
	tm.m.fs.changed([]vault.Key{k})
	tm.m.fs.settle() // as a pull through ctl does
	if err := os.Truncate(p, 6); err != nil {
		t.Fatal(err)
	}
	got, err := tm.r.Content(k)
	if err != nil || string(got) != "pulled" {
		t.Fatalf("stored after the truncate: %q (%v), want the pulled content cut", got, err)
	}
	if n, err := f.ReadAt(buf, 0); string(buf[:n]) != "pulled" {
		t.Fatalf("open reader sees %q (%v) after the truncate", buf[:n], err)
	}
}

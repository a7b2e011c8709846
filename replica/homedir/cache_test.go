package homedir

import (
	"os"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

const (
	digestHex = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
	prevHex   = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
	rootHex   = "1111111111111111111111111111111111111111111111111111111111111111"
	txHex     = "2222222222222222222222222222222222222222222222222222222222222222"
	writer    = "0x52908400098527886E0F7030069857D2E4169EE7"
)

// TestCacheMetaKintForm: what PutOpened writes is byte for byte what kint's json.dumps of its
// pull metadata gives (its keys, its order, its separators, bare hex), snapshot only on a
// snapshot; a 0x hash handed in comes out bare.
func TestCacheMetaKintForm(t *testing.T) {
	h := Home{Dir: t.TempDir()}
	c := NewEpochCache(h, "0123456789abcdef")
	m := &CacheMeta{Seq: 7, Digest: "0x" + strings.ToUpper(digestHex), Prev: "0x" + prevHex, PrevBlock: 40, Block: 42,
		Tx: "0x" + txHex, Bucket: 4096, RowsRoot: "0x" + rootHex, Writer: strings.ToLower(writer), Snapshot: true}
	if err := c.PutOpened(m, []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(h.Path("epochs", "0123456789abcdef", "00000007.meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq": 7, "digest": "` + digestHex + `", "prev": "` + prevHex + `", "prev_block": 40, "block": 42, "tx": "` + txHex +
		`", "bucket": 4096, "rows_root": "` + rootHex + `", "writer": "` + writer + `", "snapshot": true}`
	if string(got) != want {
		t.Fatalf("meta\n got %s\nwant %s", got, want)
	}
	m.Seq, m.Snapshot = 8, false
	if err := c.PutOpened(m, []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(h.Path("epochs", "0123456789abcdef", "00000008.meta.json"))
	if strings.Contains(string(got), "snapshot") || !strings.HasSuffix(string(got), `"writer": "`+writer+`"}`) {
		t.Fatalf("a non-snapshot meta: %s", got)
	}
}

// TestCacheMetaReadsKintFiles: the files kint writes (a pulled epoch's full metadata, the
// short one it writes beside a ciphertext it only fetched, a push's with its cost) and an
// earlier kintfs version's 0x form all read, normalised to bare hex.
func TestCacheMetaReadsKintFiles(t *testing.T) {
	h := Home{Dir: t.TempDir()}
	c := NewEpochCache(h, "0123456789abcdef")
	files := map[string]string{
		"00000001.meta.json":  `{"seq": 1, "digest": "` + digestHex + `", "prev": "` + strings.Repeat("00", 32) + `", "prev_block": 0, "block": 10, "tx": "` + txHex + `", "bucket": 1024, "rows_root": "` + rootHex + `", "writer": "` + writer + `"}`,
		"00000002.meta.json":  `{"seq": 2, "digest": "` + prevHex + `", "prev": "` + digestHex + `", "block": 12, "tx": "` + txHex + `", "writer": "` + writer + `"}`,
		"00000003.meta.json":  `{"seq": 3, "digest": "` + rootHex + `", "prev": "` + prevHex + `", "block": 14, "tx": "0x` + txHex + `", "bucket": 2048, "rows_root": "` + rootHex + `", "writer": "` + writer + `", "cost": {"gasUsed": 21000, "totalWei": 5}, "snapshot": true}`,
		"00000004.meta.json":  `{"seq":4,"digest":"0x` + digestHex + `","prev":"0x` + rootHex + `","block":16,"tx":"0x` + txHex + `","bucket":2048,"rows_root":"0x` + rootHex + `","writer":"` + writer + `"}`,
		"00000004.json":       `{}`,
		"notes.txt":           "not an epoch",
		"0000004.meta.json":   `{}`, // not a name the cache gives
		"000000004.meta.json": `{}`,
		"x0000004.meta.json":  `{}`,
	}
	if _, err := h.Ensure("epochs", "0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(h.Path("epochs", "0123456789abcdef", name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	seqs, err := c.Seqs()
	if err != nil || len(seqs) != 4 {
		t.Fatalf("seqs %v, %v", seqs, err)
	}
	for seq, want := range map[uint64]CacheMeta{
		1: {Seq: 1, Digest: digestHex, Prev: strings.Repeat("00", 32), Block: 10, Tx: txHex, Bucket: 1024, RowsRoot: rootHex, Writer: writer},
		2: {Seq: 2, Digest: prevHex, Prev: digestHex, Block: 12, Tx: txHex, Writer: writer},
		3: {Seq: 3, Digest: rootHex, Prev: prevHex, Block: 14, Tx: txHex, Bucket: 2048, RowsRoot: rootHex, Writer: writer, Snapshot: true},
		4: {Seq: 4, Digest: digestHex, Prev: rootHex, Block: 16, Tx: txHex, Bucket: 2048, RowsRoot: rootHex, Writer: writer},
	} {
		got, err := c.Meta(seq)
		if err != nil || *got != want {
			t.Errorf("seq %d: %+v, %v\nwant %+v", seq, got, err, want)
		}
		if common.HexToHash(got.Digest).Hex() != "0x"+got.Digest {
			t.Errorf("seq %d: digest %q does not parse back", seq, got.Digest)
		}
	}
	// the earlier kintfs file (seq 4) is rewritten in kint's form, with prev_block from seq 3;
	// kint's own files stay byte for byte
	n, newest, err := c.Upgrade(0)
	if err != nil || n != 1 || newest != 4 {
		t.Fatalf("upgrade rewrote %d files up to seq %d, %v; want the one earlier kintfs file, up to 4", n, newest, err)
	}
	got, _ := os.ReadFile(h.Path("epochs", "0123456789abcdef", "00000004.meta.json"))
	want := `{"seq": 4, "digest": "` + digestHex + `", "prev": "` + rootHex + `", "prev_block": 14, "block": 16, "tx": "` + txHex +
		`", "bucket": 2048, "rows_root": "` + rootHex + `", "writer": "` + writer + `"}`
	if string(got) != want {
		t.Errorf("upgraded meta\n got %s\nwant %s", got, want)
	}
	for _, name := range []string{"00000001.meta.json", "00000002.meta.json", "00000003.meta.json"} {
		if got, _ := os.ReadFile(h.Path("epochs", "0123456789abcdef", name)); string(got) != files[name] {
			t.Errorf("kint's %s was rewritten: %s", name, got)
		}
	}
	if n, newest, err := c.Upgrade(0); err != nil || n != 0 || newest != 4 {
		t.Errorf("a second upgrade rewrote %d up to %d, %v", n, newest, err)
	}
	// an earlier version's file cached after the last upgrade is rewritten; the epochs up to the
	// seq that upgrade returned are not read again
	early := strings.ReplaceAll(files["00000004.meta.json"], `"seq":4`, `"seq":5`)
	if err := os.WriteFile(h.Path("epochs", "0123456789abcdef", "00000005.meta.json"), []byte(early), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.Path("epochs", "0123456789abcdef", "00000002.meta.json"), []byte(files["00000004.meta.json"]), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, newest, err := c.Upgrade(4); err != nil || n != 1 || newest != 5 {
		t.Fatalf("an upgrade after 4 rewrote %d up to %d, %v; want seq 5 alone", n, newest, err)
	}
	if got, _ := os.ReadFile(h.Path("epochs", "0123456789abcdef", "00000005.meta.json")); !strings.HasPrefix(string(got), `{"seq": 5, "digest": "`+digestHex) {
		t.Errorf("seq 5 not in kint's form: %s", got)
	}
	if got, _ := os.ReadFile(h.Path("epochs", "0123456789abcdef", "00000002.meta.json")); string(got) != files["00000004.meta.json"] {
		t.Errorf("seq 2, at or before the seq checked, was read again: %s", got)
	}
	if n, newest, err := c.Upgrade(5); err != nil || n != 0 || newest != 5 {
		t.Errorf("nothing new: rewrote %d up to %d, %v", n, newest, err)
	}
}

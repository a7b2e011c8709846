package seal

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
)

// lcgCorpus regenerates, in Go, the inputs whose gzip.compress(data, 9,
// mtime=0) digests were recorded from Python (OS byte set to 0x13).
func lcgCorpus(kind string, n int, seed uint32) []byte {
	s := seed
	next := func() uint32 {
		s = (s*1103515245 + 12345) & 0x7fffffff
		return s >> 8
	}
	words := []string{"kint", "epoch", "row", "memory", "the", "a", "chain", "body", "status", "active", `"name":`, "{", "}", "é", "🔥", "\n", "ünïcode", "journal", "entity", "state"}
	var out []byte
	switch kind {
	case "text":
		for len(out) < n {
			out = append(out, words[next()%uint32(len(words))]...)
			out = append(out, ' ')
			if next()%5 == 0 {
				out = strconv.AppendUint(out, uint64(next()%1000), 10)
			}
		}
	case "random":
		for len(out) < n {
			out = append(out, byte(next()))
		}
	case "low":
		for len(out) < n {
			out = append(out, byte(next()%4))
		}
	case "runs":
		for len(out) < n {
			c := byte(next()%3 + 97)
			out = append(out, bytes.Repeat([]byte{c}, int(next()%600))...)
		}
	}
	return out[:n]
}

func TestCompressMatchesPythonGzip(t *testing.T) {
	cases := []struct {
		kind     string
		n        int
		seed     uint32
		gzLen    int
		gzSHA256 string
	}{
		{"text", 200000, 1, 48575, "ce6b60ce4dff87714a95606071fbaae170073b7e5827925472122fec744d0ee0"},
		{"random", 70000, 2, 70043, "d6fe35990a7386ecd9bb1e679fd2aac23c97fea5ebcb4858caaa145d3d096d41"},
		{"low", 150000, 3, 1185, "21898eced5b7febb354a5952831c5b05636016686476758447f0ae1aff96717a"},
		{"runs", 300000, 4, 1553, "21d50df135e60de6e72c6cc943807721f4d2d4fd195236a6b5a05005f451368a"},
		{"text", 1, 5, 21, "b62606ed1d78f20055a769b4d15d307d76b65defac8a46b494709b30e854e759"},
		{"text", 0, 6, 20, "f1b651238a58fe290baec6c5e32f3bdb1943dd2bd582f02569231f7a757c7837"},
		{"text", 65536, 7, 16521, "edeec50c9f3430f5bf2c4646242d103e525747aa0c8b70473f2697f12c487f15"},
		{"random", 100, 8, 123, "a0bdb64deeb3dffbc2fe0ede3a86c67854d9ead2fed7c26ce20f6e8732be1f13"},
	}
	for _, c := range cases {
		in := lcgCorpus(c.kind, c.n, c.seed)
		gz := Compress(in)
		sum := sha256.Sum256(gz)
		if len(gz) != c.gzLen || hex.EncodeToString(sum[:]) != c.gzSHA256 {
			t.Errorf("%s/%d/%d: got %d bytes sha256 %x, want %d bytes %s", c.kind, c.n, c.seed, len(gz), sum, c.gzLen, c.gzSHA256)
		}
		back, err := Decompress(gz, len(in))
		if err != nil || !bytes.Equal(back, in) {
			t.Errorf("%s/%d: round trip failed: %v", c.kind, c.n, err)
		}
		// Fed as a stream in uneven pieces, the closed size is the same.
		g := newGzipStream()
		for off, step := 0, 1; off < len(in); off, step = off+step, step*3%1001+1 {
			g.write(in[off:min(off+step, len(in))])
		}
		if got := g.clone().closedSize(); got != c.gzLen {
			t.Errorf("%s/%d: streamed size %d, want %d", c.kind, c.n, got, c.gzLen)
		}
	}
}

// dirtyDeflater is a compressor whose arrays hold what no stream would leave: a pooled one
// is reset without clearing them (only its hash heads), so none of it may reach the output.
func dirtyDeflater(seed uint64) *deflater {
	d := bareDeflater()
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := range d.window {
		d.window[i] = byte(rng.Uint32())
	}
	for i := range d.prev {
		d.prev[i] = uint16(rng.Uint32())
		d.head[i] = uint16(rng.Uint32())
	}
	for i := range d.syms.dist {
		d.syms.dist[i], d.syms.lc[i] = uint16(rng.Uint32()), byte(rng.Uint32())
	}
	d.highWater, d.strstart, d.syms.n = zWindowSize, 12345, 77
	return d
}

// A compressor reset over whatever its last stream left writes exactly kint's bytes.
func TestResetCompressorLeavesNoTrace(t *testing.T) {
	for _, kind := range []string{"text", "random", "low", "runs"} {
		for i, n := range []int{0, 1, 300, 5000, 40000, 140000} {
			in := lcgCorpus(kind, n, uint32(i+1))
			fresh := bareDeflater()
			fresh.reset()
			want := compressOn(fresh, in)
			d := dirtyDeflater(uint64(i))
			d.reset()
			if got := compressOn(d, in); !bytes.Equal(got, want) {
				t.Fatalf("%s of %d bytes: a reset compressor wrote %d bytes that differ from a new one's %d", kind, n, len(got), len(want))
			}
		}
	}
}

func TestCompressHeaderAndEmpty(t *testing.T) {
	gz := Compress(nil)
	want, _ := hex.DecodeString("1f8b0800000000000213" + "0300" + "00000000" + "00000000")
	if !bytes.Equal(gz, want) {
		t.Fatalf("Compress(nil) = %x, want %x", gz, want)
	}
}

func TestDecompressRefusals(t *testing.T) {
	gz := Compress([]byte("hello hello hello hello"))
	if _, err := Decompress(gz, 5); !errors.Is(err, errDecompressLimit) {
		t.Errorf("limit: got %v", err)
	}
	if _, err := Decompress(append(append([]byte{}, gz...), 0), 100); err == nil {
		t.Error("trailing byte accepted")
	}
	if _, err := Decompress(gz[:len(gz)-3], 100); err == nil {
		t.Error("truncated member accepted")
	}
	if _, err := Decompress([]byte("not gzip at all"), 100); err == nil {
		t.Error("garbage accepted")
	}
	// A member written by another gzip encoder opens too.
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write([]byte("other writer"))
	w.Close()
	if out, err := Decompress(buf.Bytes(), 100); err != nil || string(out) != "other writer" {
		t.Errorf("stdlib member: %q %v", out, err)
	}
}

// closedSize counts the last block instead of writing it: at every cut of every kind of input
// (stored, fixed and dynamic last blocks, one block or several, before and after the window
// slides), it must equal what Compress writes.
func TestClosedSizeCountsTheLastBlock(t *testing.T) {
	kinds := []string{"text", "random", "low", "runs"}
	for i, n := range []int{0, 1, 7, 100, 700, 3000, 17000, 70000, 140000} {
		for j, kind := range kinds {
			in := lcgCorpus(kind, n, uint32(10*i+j+1))
			g := newGzipStream()
			off, step := 0, 1
			for {
				want := len(Compress(in[:off]))
				if b, e := g.bound(), g.estimate(&trees{}); b < e {
					t.Fatalf("%s of %d bytes, cut at %d: bound %d under the estimate %d", kind, n, off, b, e)
				}
				if got := g.clone().closedSize(); got != want {
					t.Fatalf("%s of %d bytes, cut at %d: closedSize %d, Compress %d", kind, n, off, got, want)
				}
				// a clone made in the memory of another stream copies only what g can read
				spare := &gzipStream{d: dirtyDeflater(uint64(off))}
				if got := g.cloneInto(spare).closedSize(); got != want {
					t.Fatalf("%s of %d bytes, cut at %d: closedSize of a clone made over another stream %d, Compress %d", kind, n, off, got, want)
				}
				if off == len(in) {
					break
				}
				next := min(off+step, len(in))
				g.write(in[off:next])
				off, step = next, step*7%(n/3+2)+1
			}
			g.free()
		}
	}
}

func FuzzClosedSize(f *testing.F) {
	f.Add([]byte("kint epoch row"), uint16(3))
	f.Add(bytes.Repeat([]byte{0}, 5000), uint16(1000))
	f.Add(lcgCorpus("random", 2000, 9), uint16(600))
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		g := newGzipStream()
		at := min(int(cut), len(in))
		g.write(in[:at])
		if got, want := g.clone().closedSize(), len(Compress(in[:at])); got != want {
			t.Fatalf("cut %d: closedSize %d, Compress %d", at, got, want)
		}
		g.write(in[at:])
		if got, want := g.clone().closedSize(), len(Compress(in)); got != want {
			t.Fatalf("whole: closedSize %d, Compress %d", got, want)
		}
		g.free()
	})
}

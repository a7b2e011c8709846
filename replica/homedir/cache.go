package homedir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/seal"
)

// EpochCache is kint's epoch cache: epochs/<space16>/NNNNNNNN.bin (the blob as sent), .json
// (the plaintext) and .meta.json. A blob is trusted only when its keccak equals the digest
// the chain's Epoch event names.
type EpochCache struct {
	home Home
	dir  string // epochs/<space16>
}

// CacheMeta is the .meta.json beside a cached epoch, in kint's form: the keys kint's pull
// writes, in its order, hashes as bare lower-case hex (no 0x), the writer as a checksummed
// address, prev_block (the block of the epoch before, 0 when unknown) and snapshot only on a
// snapshot. Meta reads that form, kint's shorter one (an epoch whose ciphertext alone it
// cached) and the 0x form earlier kintfs versions wrote, all normalised to bare hex.
type CacheMeta struct {
	Seq       uint64 `json:"seq"`
	Digest    string `json:"digest"`
	Prev      string `json:"prev"`
	PrevBlock uint64 `json:"prev_block"`
	Block     uint64 `json:"block"`
	Tx        string `json:"tx"`
	Bucket    int    `json:"bucket"`
	RowsRoot  string `json:"rows_root"`
	Writer    string `json:"writer"`
	Snapshot  bool   `json:"snapshot,omitempty"`
}

// Bare is h as kint writes a hash: lower-case hex without 0x.
func Bare(h string) string {
	return strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(h, "0x"), "0X"))
}

// normalise makes every hash bare hex and the writer checksummed.
func (m *CacheMeta) normalise() {
	m.Digest, m.Prev, m.Tx, m.RowsRoot = Bare(m.Digest), Bare(m.Prev), Bare(m.Tx), Bare(m.RowsRoot)
	if m.Writer != "" && common.IsHexAddress(m.Writer) {
		m.Writer = common.HexToAddress(m.Writer).Hex()
	}
}

// kintJSON is m exactly as kint's json.dumps writes it: its key order, ", " and ": "
// between items, snapshot only when true.
func (m *CacheMeta) kintJSON() []byte {
	c := *m
	c.normalise()
	b := fmt.Appendf(nil, `{"seq": %d, "digest": %q, "prev": %q, "prev_block": %d, "block": %d, "tx": %q, "bucket": %d, "rows_root": %q, "writer": %q`,
		c.Seq, c.Digest, c.Prev, c.PrevBlock, c.Block, c.Tx, c.Bucket, c.RowsRoot, c.Writer)
	if c.Snapshot {
		b = append(b, `, "snapshot": true`...)
	}
	return append(b, '}')
}

// NewEpochCache is the cache of the vault space16 under home.
func NewEpochCache(home Home, space16 string) *EpochCache {
	return &EpochCache{home: home, dir: "epochs/" + space16}
}

func (c *EpochCache) name(seq uint64, ext string) string { return fmt.Sprintf("%08d%s", seq, ext) }

// Blob returns the cached blob of seq when its keccak equals digest.
func (c *EpochCache) Blob(seq uint64, digest common.Hash) ([]byte, bool) {
	b, err := os.ReadFile(c.home.Path(c.dir, c.name(seq, ".bin")))
	if err != nil || crypto.Keccak256Hash(b) != digest {
		return nil, false
	}
	return b, true
}

// HasBlob reports whether a blob of seq is in the cache, without reading it: whether it holds
// the digest asked for is Blob's to check.
func (c *EpochCache) HasBlob(seq uint64) bool {
	_, err := os.Stat(c.home.Path(c.dir, c.name(seq, ".bin")))
	return err == nil
}

// PutBlob stores the blob of seq. It is put in place whole (renamed from a temporary file)
// but not synced: a blob is read only when its keccak matches the chain's digest, so a blob a
// machine crash left damaged or empty is only a miss, fetched again.
func (c *EpochCache) PutBlob(seq uint64, blob []byte) error {
	b := c.home.NewBatch()
	if err := c.PutBlobIn(b, seq, blob); err != nil {
		return err
	}
	return b.rename()
}

// SyncBlobs makes the cached blobs of seqs durable, with their names; a seq without a blob is
// passed over. A pull calls it before it applies the first epoch it fetched: the state
// database's pages may reach the disk before any sync of the pull's, and an apply a power cut
// kept must find its epoch's blob here, where the next open puts back from it what the cut
// took of the apply.
func (c *EpochCache) SyncBlobs(seqs []uint64) error {
	var paths []string
	for _, seq := range seqs {
		if c.HasBlob(seq) {
			paths = append(paths, c.home.Path(c.dir, c.name(seq, ".bin")))
		}
	}
	if len(paths) == 0 {
		return nil
	}
	return syncPlaced(paths)
}

// PutBlobIn is PutBlob through b: the file is in place once b commits.
func (c *EpochCache) PutBlobIn(b *FileBatch, seq uint64, blob []byte) error {
	return b.WriteFile(blob, c.dir, c.name(seq, ".bin"))
}

// PutOpened stores the plaintext and the metadata of an applied epoch.
func (c *EpochCache) PutOpened(meta *CacheMeta, plaintext []byte) error {
	if err := c.home.WriteFile(plaintext, c.dir, c.name(meta.Seq, ".json")); err != nil {
		return err
	}
	return c.home.WriteFile(meta.kintJSON(), c.dir, c.name(meta.Seq, ".meta.json"))
}

// PutOpenedIn is PutOpened through b: the files are in place and durable once b commits.
func (c *EpochCache) PutOpenedIn(b *FileBatch, meta *CacheMeta, plaintext []byte) error {
	if err := b.WriteFile(plaintext, c.dir, c.name(meta.Seq, ".json")); err != nil {
		return err
	}
	return b.WriteFile(meta.kintJSON(), c.dir, c.name(meta.Seq, ".meta.json"))
}

// Meta reads the metadata of a cached epoch.
func (c *EpochCache) Meta(seq uint64) (*CacheMeta, error) {
	b, err := os.ReadFile(c.home.Path(c.dir, c.name(seq, ".meta.json")))
	if err != nil {
		return nil, err
	}
	var m CacheMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("cached epoch %d meta: %w", seq, err)
	}
	m.normalise()
	return &m, nil
}

// Seqs lists the epochs held in the cache with their metadata, in order.
func (c *EpochCache) Seqs() ([]uint64, error) {
	entries, err := os.ReadDir(c.home.Path(c.dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, e := range entries {
		if seq, ok := metaSeq(e.Name()); ok {
			out = append(out, seq)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// metaSeq is the seq of a file named as name(seq, ".meta.json") names it. A cache holds three
// files an epoch, tens of thousands in a long history, and every open lists them.
func metaSeq(file string) (uint64, bool) {
	digits, ok := strings.CutSuffix(file, ".meta.json")
	if !ok || len(digits) < 8 || strings.Trim(digits, "0123456789") != "" || (len(digits) > 8 && digits[0] == '0') {
		return 0, false
	}
	seq, err := strconv.ParseUint(digits, 10, 64)
	return seq, err == nil
}

// Upgrade rewrites in kint's form every .meta.json an earlier kintfs version wrote (0x hashes,
// no prev_block, no snapshot key) among the epochs after seq after, so that kint's pull reads
// this cache; prev_block comes from the epoch before when it is cached, snapshot from the
// cached blob's header. A file kint wrote is left as it is. It returns how many files it
// rewrote and the newest seq it looked at (after when none is newer): the caller keeps that
// and passes it next time, so that an open reads only the files cached since the last one.
func (c *EpochCache) Upgrade(after uint64) (rewrote int, newest uint64, err error) {
	seqs, err := c.Seqs()
	if err != nil {
		return 0, after, err
	}
	newest = after
	for _, seq := range seqs {
		if seq <= after {
			continue
		}
		b, err := os.ReadFile(c.home.Path(c.dir, c.name(seq, ".meta.json")))
		if err != nil {
			return rewrote, newest, err
		}
		var raw map[string]json.RawMessage
		if json.Unmarshal(b, &raw) == nil && oldForm(raw) {
			if err := c.rewriteMeta(seq); err != nil {
				return rewrote, newest, err
			}
			rewrote++
		}
		newest = seq
	}
	return rewrote, newest, nil
}

// rewriteMeta writes the metadata of seq again in kint's form.
func (c *EpochCache) rewriteMeta(seq uint64) error {
	m, err := c.Meta(seq)
	if err != nil {
		return err
	}
	if prev, err := c.Meta(seq - 1); err == nil && seq > 1 && prev.Digest == m.Prev {
		m.PrevBlock = prev.Block
	}
	if blob, ok := c.Blob(seq, common.HexToHash(m.Digest)); ok {
		if h, _, err := seal.ParseHeader(blob); err == nil {
			m.Snapshot = h.IsSnapshot()
		}
	}
	return c.home.WriteFile(m.kintJSON(), c.dir, c.name(seq, ".meta.json"))
}

// oldForm: a meta file of an earlier kintfs version, its digest 0x-prefixed.
func oldForm(raw map[string]json.RawMessage) bool {
	var d string
	return json.Unmarshal(raw["digest"], &d) == nil && strings.HasPrefix(d, "0x")
}

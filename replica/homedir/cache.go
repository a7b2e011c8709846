package homedir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// EpochCache is kint's epoch cache: epochs/<space16>/NNNNNNNN.bin (the blob as sent), .json
// (the plaintext) and .meta.json. A blob is trusted only when its keccak equals the digest
// the chain's Epoch event names.
type EpochCache struct {
	home Home
	dir  string // epochs/<space16>
}

// CacheMeta is the .meta.json beside a cached epoch.
type CacheMeta struct {
	Seq      uint64 `json:"seq"`
	Digest   string `json:"digest"`
	Prev     string `json:"prev"`
	Block    uint64 `json:"block"`
	Tx       string `json:"tx"`
	Bucket   int    `json:"bucket"`
	RowsRoot string `json:"rows_root"`
	Writer   string `json:"writer"`
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

// PutBlob stores the blob of seq.
func (c *EpochCache) PutBlob(seq uint64, blob []byte) error {
	return c.home.WriteFile(blob, c.dir, c.name(seq, ".bin"))
}

// PutOpened stores the plaintext and the metadata of an applied epoch.
func (c *EpochCache) PutOpened(meta *CacheMeta, plaintext []byte) error {
	if err := c.home.WriteFile(plaintext, c.dir, c.name(meta.Seq, ".json")); err != nil {
		return err
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	return c.home.WriteFile(b, c.dir, c.name(meta.Seq, ".meta.json"))
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
		var seq uint64
		if n, _ := fmt.Sscanf(e.Name(), "%08d.meta.json", &seq); n == 1 && e.Name() == c.name(seq, ".meta.json") {
			out = append(out, seq)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

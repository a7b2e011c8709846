package vault

import (
	"github.com/ethereum/go-ethereum/common"

	"kintfs/seal"
)

// EpochInfo is what this machine knows of one anchored epoch.
type EpochInfo struct {
	Seq       uint64         `json:"seq"`
	Block     uint64         `json:"block"`
	Tx        string         `json:"tx"`
	Digest    common.Hash    `json:"digest"`
	Prev      common.Hash    `json:"prev"`
	Bucket    int            `json:"bucket"`
	RowsRoot  common.Hash    `json:"rows_root"`
	Writer    common.Address `json:"writer"`
	CreatedAt string         `json:"created_at"`
	Snapshot  bool           `json:"snapshot"`
	NRows     int            `json:"n_rows"`
	Rows      int            `json:"rows"`           // rows the epoch carried
	Deleted   int            `json:"deleted"`        // deletions it carried
	Time      uint64         `json:"time,omitempty"` // its block's timestamp (unix seconds); 0 until read
}

// Head is a position in the chain of epochs.
type Head struct {
	Seq    uint64      `json:"seq"`
	Digest common.Hash `json:"digest"`
	Block  uint64      `json:"block"`
}

// Gap is an epoch a pull could not apply.
type Gap struct {
	Seq          uint64 `json:"seq"`
	Block        uint64 `json:"block"`
	Reason       string `json:"reason"`
	SupersededBy uint64 `json:"superseded_by,omitempty"`
}

// HeldRow is a staged row that cannot be anchored as it stands.
type HeldRow struct {
	Tier     string  `json:"tier"`
	Category *string `json:"category"`
	Key      string  `json:"key"`
	Reason   string  `json:"reason"`
}

// Conflict is a row both this machine and the chain changed: the chain's version stands in
// place and the local one is kept beside it as a local-only file.
type Conflict struct {
	Tier     string  `json:"tier"`
	Category *string `json:"category"`
	Key      string  `json:"key"`
	Seq      uint64  `json:"seq"`
	Copy     string  `json:"copy"` // the local file holding this machine's version ("" for a deletion)
	At       string  `json:"at"`
	// BaseSeq is the epoch of the version this machine's change was made on (0: the row was
	// new here): the chain's version is the one of Seq.
	BaseSeq uint64 `json:"base_seq"`
}

// RowKey is the conflicting row.
func (c *Conflict) RowKey() Key {
	return c.key(c.Key, false)
}

// key is the key of name in the conflicting row's directory.
func (c *Conflict) key(name string, local bool) Key {
	k := Key{Tier: c.Tier, Key: name, Local: local}
	if c.Tier == seal.TierEntity {
		k = k.InCategory(c.Category)
	}
	return k
}

// CopyKey is the local file holding this machine's version of the conflicting row.
func (c *Conflict) CopyKey() Key {
	return c.key(c.Copy, true)
}

// Proof is a merkle inclusion proof of one anchored row against the rows_root of the epoch
// the mirror stands at.
type Proof struct {
	Key      Key              `json:"-"`
	Leaf     common.Hash      `json:"leaf"`
	Steps    []seal.ProofStep `json:"-"`
	RowsRoot common.Hash      `json:"rows_root"`
	Epoch    EpochInfo        `json:"epoch"`
	Staged   bool             `json:"staged"` // the live file has changes not yet anchored
	// Anchored is the epoch where the proven leaf was anchored, the one where the row last
	// changed (kint's anchored_version); nil when the tree has no anchor for it.
	Anchored *Anchor `json:"anchored,omitempty"`
}

package replica

import (
	"time"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/seal"
)

// mirrorRec is a row as of the newest applied epoch.
type mirrorRec struct {
	Row    seal.Row    `json:"row"`
	Leaf   common.Hash `json:"leaf"`
	Anchor Anchor      `json:"anchor"`
	Mtime  int64       `json:"mtime"` // unix nanoseconds
}

// stagedRec is a local change not yet anchored: a new row version, or a deletion.
type stagedRec struct {
	Del   bool     `json:"del,omitempty"`
	Row   seal.Row `json:"row"`
	Mtime int64    `json:"mtime"`
	Held  string   `json:"held,omitempty"`
	// Base is the mirror leaf the change was made on (zero for a new row), so a pull can tell
	// whether the chain changed the row under it.
	Base common.Hash `json:"base"`
	At   int64       `json:"at"` // when it was staged, for the oldest-staged age
}

// localRec is a local-only file.
type localRec struct {
	Key   Key    `json:"key"`
	Body  []byte `json:"body"`
	Mtime int64  `json:"mtime"`
}

// histRec is one anchored version of a row; Row is nil when the epoch deleted it.
type histRec struct {
	Row    *seal.Row `json:"row"`
	Anchor Anchor    `json:"anchor"`
	Mtime  int64     `json:"mtime"`
}

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
	Rows      int            `json:"rows"`    // rows the epoch carried
	Deleted   int            `json:"deleted"` // deletions it carried
}

// Head is a position in the chain of epochs.
type Head struct {
	Seq    uint64      `json:"seq"`
	Digest common.Hash `json:"digest"`
	Block  uint64      `json:"block"`
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Unix(0, 0)
	}
	return time.Unix(0, n)
}

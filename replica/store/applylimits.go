package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// Badger's limits on one entry, as openBadger configures it: a key of more than MaxKeyBytes
// or a value of more than valueLogFileSize is refused whatever the transaction.
const (
	MaxKeyBytes      = 65000 // badger's maxKeySize
	valueLogFileSize = 64 << 20
)

// A file of MaxFileBytes is stored as one value: badger must take it.
const _ = uint(valueLogFileSize - vault.MaxFileBytes)

// ErrApplyLimit marks an epoch holding a row this code cannot write to its state database.
var ErrApplyLimit = errors.New("past a limit of the state database")

// ApplyLimitError names, by position only, the row or deletion of an epoch that cannot be
// applied here. It carries no row content, so it is safe in any log.
type ApplyLimitError struct {
	Index   int  // in the epoch's rows, or its deletions when Deleted
	Deleted bool // a deletion
	Tier    string
	Why     string
}

func (e *ApplyLimitError) Error() string {
	what := "row"
	if e.Deleted {
		what = "deletion"
	}
	return fmt.Sprintf("%s %d (%s tier) cannot be applied: %s (%v)", what, e.Index, e.Tier, e.Why, ErrApplyLimit)
}

// Unwrap lets errors.Is(err, ErrApplyLimit) match.
func (e *ApplyLimitError) Unwrap() error { return ErrApplyLimit }

// CheckApplicable refuses an epoch that this code could not apply: one whose row would need
// a badger key or value past badger's limits. Row count and total size are no limit: a large
// epoch is applied in batches.
func CheckApplicable(p *seal.Plaintext) error {
	for i := range p.Rows {
		if why := rowLimit(&p.Rows[i]); why != "" {
			return &ApplyLimitError{Index: i, Tier: p.Rows[i].Tier, Why: why}
		}
	}
	for i, d := range p.Deleted {
		if why := keyLimit(d.Tier, d.Category, d.Key); why != "" {
			return &ApplyLimitError{Index: i, Deleted: true, Tier: d.Tier, Why: why}
		}
	}
	return nil
}

// rowLimit says why row r cannot be written to the state database, or "" when it can.
func rowLimit(r *seal.Row) string {
	if why := keyLimit(r.Tier, r.Category, r.Key); why != "" {
		return why
	}
	if r.Body.Len() > valueLogFileSize {
		return fmt.Sprintf("its body is %d bytes, more than the %d a value may hold", r.Body.Len(), valueLogFileSize)
	}
	// The largest value is the history record: the whole row, plus the anchor of the epoch
	// (a transaction hash of txHashLen characters) and a margin.
	if n := histRecLen(r, txHashLen); n+1024 > valueLogFileSize {
		return fmt.Sprintf("its history record is %d bytes, more than the %d a value may hold", n, valueLogFileSize)
	}
	return ""
}

// txHashLen is the length of an anchor's transaction hash, 0x and 64 hex digits.
const txHashLen = 66

// keyLimit says why a row named so cannot be keyed in the state database, or "" when it can.
// The longest keys are its history entry and, should a pull find it changed here too, the
// inode name of its conflict copy, whose name escapes "/" and "%" to three bytes.
func keyLimit(tier string, category *string, key string) string {
	id := seal.CanonicalID(tier, category, key)
	n := len(historyKey(id, 0, 0))
	cat := 1 // localID writes "\x01" for no category
	if category != nil && tier == seal.TierEntity {
		cat = len(*category)
	}
	// "i/" "L" tier \0 cat \0 "." name ".conflict-" seq
	if c := len(pIno) + 1 + len(tier) + 1 + cat + 1 + 1 + len(conflictName(key)) + len(".conflict-") + 20; c > n {
		n = c
	}
	if n > MaxKeyBytes {
		return fmt.Sprintf("its key is %d bytes long, and the state database keys it in up to %d bytes, more than the %d a key may hold", len(key), n, MaxKeyBytes)
	}
	return ""
}

// applyBatches splits the changes of e into batches that each fit well under badger's limits
// on one transaction (size and entry count), counting every write at its largest.
func (s *Store) applyBatches(e *epochApply) [][]leafChange {
	maxSize, maxCount := s.db.MaxBatchSize()/4, s.db.MaxBatchCount()/4
	if s.batchLimits != nil {
		maxSize, maxCount = s.batchLimits()
	}
	// the conflict list and the epoch's own records share a transaction with a batch
	const fixedCount = 8
	fixedSize := int64(fixedCount * entryCost(64))
	var out [][]leafChange
	var cur []leafChange
	size, count := fixedSize, int64(fixedCount)
	for _, ch := range e.changes {
		var c, n int64
		if r, ok := e.puts[ch.id]; ok {
			c, n = changeCost(r.Tier, r.Category, r.Key)
		} else {
			// a deletion's row is read from the mirror; its id has its tier and key in it
			c, n = changeCost("", nil, ch.id)
		}
		if len(cur) > 0 && (size+c > maxSize || count+n > maxCount) {
			out = append(out, cur)
			cur, size, count = nil, fixedSize, fixedCount
		}
		cur = append(cur, ch)
		size, count = size+c, count+n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// entryCost is the most badger counts against a transaction for one write under a key of n
// bytes: the key, a value kept inline (below valueThreshold) or a 12-byte pointer to the value
// log, two bytes of meta and ten of version.
func entryCost(n int) int64 { return int64(n + valueThreshold + 12) }

// tombstoneCost is what badger counts for the deletion of a key of n bytes.
func tombstoneCost(n int) int64 { return int64(n + 12) }

// changeCost is the most one id's changes can write in a batch and how many entries: the
// mirror record, the body, the history entry, the staged record and its body (whole, or the
// deletion of its pieces), the inode name and counter, and a conflict copy (record and
// content) with its inode name and counter.
func changeCost(tier string, category *string, key string) (size, count int64) {
	id := len(tier) + 2 + len(key)
	if category != nil {
		id += len(*category)
	}
	local := len(tier) + 3 + id + 2*len(key) + 32 // a conflict copy's local id, at its longest
	for _, k := range []int{len(pMirror) + id, len(pBody) + id, len(pHistory) + id + 17, len(pStaged) + id, len(pStagedBody) + id,
		len(pIno) + 1 + id, len(kInoNext), len(pLocal) + local, len(pLocalBody) + local, len(pIno) + 1 + local, len(kInoNext)} {
		size += entryCost(k)
		count++
	}
	size += maxPieces * tombstoneCost(len(pBodyPiece)+len(pStagedBody)+id+3)
	count += maxPieces
	return size, count
}

// JournalFits refuses an epoch whose push journal entry (the signed transaction, base64 in
// JSON, and the ids of the rows it carries) would pass the largest value badger holds.
func JournalFits(ids []string, blob int) error {
	names, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	tx := 4*(blob+1024)/3 + 4096 // the signed transaction, base64, and the rest of the entry
	if len(names)+tx > valueLogFileSize {
		return fmt.Errorf("%w: the names of its %d rows take %d bytes, and the push journal holds at most about %d", ErrApplyLimit, len(ids), len(names), valueLogFileSize-tx)
	}
	return nil
}

// shortName cuts a row's name for a message.
func shortName(name string) string {
	const most = 80
	if len(name) <= most {
		return name
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "..."
}

// UnapplicableReason says why this code could not apply row once anchored, as the reason a
// push holds it with ("" when it could).
func UnapplicableReason(row *seal.Row) string {
	why := rowLimit(row)
	if why == "" {
		return ""
	}
	return fmt.Sprintf("row %s %s cannot be anchored: %s; shrink it (push refuses it until then, nothing else is blocked)", row.Tier, shortName(keyString(rowKey(row))), why)
}

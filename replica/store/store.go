package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"kintfs/replica/vault"
)

// Badger key prefixes. Canonical ids contain NUL bytes, which sort below every printable byte,
// so a prefix scan over "m/<tier>\x00" visits exactly one tier.
const (
	pMirror     = "m/" // canonical id -> mirrorRec: the row after the newest applied epoch, without its body
	pBody       = "b/" // canonical id -> the body of the mirror row, raw bytes
	pStaged     = "s/" // canonical id -> stagedRec: a local change not yet anchored, without its body
	pStagedBody = "t/" // canonical id -> the body of the staged row, raw bytes (or in pieces under pBodyPiece)
	pLocal      = "l/" // local id -> localRec: dotfiles and conflict copies, never anchored, without content
	pLocalBody  = "u/" // local id -> the content of the local file, raw bytes
	pCategory   = "c/" // category -> "": an entity category made by mkdir
	pIno        = "i/" // name -> uint64 inode number
	pHistory    = "h/" // canonical id \x00 block(8) seq(8) -> histRec
	pEpoch      = "e/" // seq(8) -> EpochInfo
	pPending    = "p/" // seq(8) -> PendingPush: the durable push journal
	pJournalAt  = "j/" // seq(8) -> journalAt: how far the push of a journal entry got
	pGCHold     = "g/" // holds no key: the iterator that puts off a rewritten value log's delete (collectValueLog)
	kInoNext    = "x/ino"
	kHead       = "x/head"      // Head of the mirror
	kSeen       = "x/seen"      // the newest chain head this machine has seen (the watermark)
	kBucket     = "x/bucket"    // the bucket ratchet
	kGaps       = "x/gaps"      // []Gap
	kConflict   = "x/conflicts" // []Conflict
	kFormat     = "x/format"    // the layout of the database, storeFormat
	// the newest cached epoch up to which the epoch cache's metadata is in kint's form
	kCacheChecked = "x/cachechecked"
)

// memTableSize is the size of a memtable. Badger flushes a full one by building its table
// whole in memory (in buffers that double as they fill) while a new memtable takes writes, so
// a flush holds about four times this at once: at 8 MB, the peak of a 100,000-row mount that
// rewrote and flushed 10,000 rows was 25-40 MB higher (VmHWM 244 and 256 MB, against 213 and
// 218 MB at 4 MB, the flush no slower).
const memTableSize = 4 << 20

// valueThreshold is the size from which badger keeps a value in its value log; a mirror
// record (a row without its body) stays below it.
const valueThreshold = 512

// valueLogGCEvery is how often the value log is rewritten to drop the bodies of versions
// replaced since.
const valueLogGCEvery = 10 * time.Minute

// storeFormat is the layout this code writes. 1 (no kFormat key) kept each mirror row's body
// inside its record; 2 keeps it under pBody; 3 also keeps staged bodies under pStagedBody and
// local files' content under pLocalBody; 4 writes mirror, staged and history records in a
// binary layout (recbin.go), and reads those 3 left as JSON as they are; 5 writes the
// attribute records in a binary layout too, and rewrites those 4 left as JSON; 6 may keep a
// staged body in pieces (pieces.go), and reads the bodies 5 kept whole as they are; 7 keeps a
// push journal entry's row ids instead of its plaintext (PendingPush.IDs), and reads the
// entries 6 left as they are.
const storeFormat = 7

// openBadger opens (or creates) the badger database in dir with settings sized for a mount:
// commits are not synced by badger but in groups (see db), and a large vault stays within its
// memory budget.
//
// Values of valueThreshold bytes or more (bodies, history versions) go to the value log, so
// the tables hold keys and the small mirror records: memtables fill slowly, and flushing or
// compacting them builds small tables. Badger builds a table whole in memory and keeps the
// buffers of up to eight builders for reuse, so small tables are what bounds that memory.
// Tables are not compressed: a read then takes its block straight from the mapped file,
// where a compressed table allocates a decompressed copy of the block on every miss of a
// block cache. With nothing to decompress no block cache is needed, and without an index
// cache the table indexes stay in the mapped files too.
//
// A transaction may hold 15% of a memtable, counting a value in the log as its pointer: 0.6 MB
// of keys and small values, and about 6,500 entries. An epoch larger than that is applied in
// batches (see applyMarker); every other transaction that loops over rows takes a few
// hundred at a time.
//
// A value read from a value log is checked against its checksum: badger checks only the newest
// log when it opens, and a page of an older one lost in a power cut would otherwise read back
// as zeros (see itemValue).
func openBadger(dir string) (*badger.DB, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	opts := badger.DefaultOptions(dir).
		WithLogger(nil).
		WithSyncWrites(false).
		WithCompression(options.None).
		WithMemTableSize(memTableSizeFor(dir)).
		WithBaseTableSize(1 << 20).
		WithValueThreshold(valueThreshold).
		WithNumMemtables(2).
		WithBlockCacheSize(0).
		WithIndexCacheSize(0).
		WithValueLogFileSize(valueLogFileSize).
		WithNumCompactors(2).
		WithDetectConflicts(false).
		WithVerifyValueChecksum(true)
	// Every level's tables are 1 MB, not twice the level above's: a compaction builds each table
	// whole in memory, in buffers twice its size, several at once, so 8 MB tables of the deeper
	// levels made the mount's memory jump by tens of MB during a flush.
	opts.TableSizeMultiplier = 1
	db, err := badger.Open(opts)
	if err != nil && strings.Contains(err.Error(), "Cannot acquire directory lock") {
		// badger's flock: another process has the database open
		return nil, vault.ErrInUse
	}
	if err != nil {
		return nil, fmt.Errorf("open state database %s: %w", dir, err)
	}
	return db, nil
}

// CheckNotInUse opens and closes the state database in dir, taking badger's lock for that
// instant: ErrInUse when another process has it open.
func CheckNotInUse(dir string) error {
	db, err := openBadger(dir)
	if err != nil {
		return err
	}
	return db.Close()
}

// collectValueLog rewrites the value log files that are mostly replaced values, one at a time
// until none is, each rewrite made durable before badger deletes the log it rewrote. Badger
// copies a log's live values into the newest logs and deletes the log without syncing the
// copies; it puts the delete off while an iterator is open, so one is held across each
// rewrite and the sync after it, and a power cut finds either the old log or the copies
// durable. It returns the first sync's error (the next change's too).
func collectValueLog(d *db) error {
	for {
		txn := d.DB.NewTransaction(false)
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues, opts.Prefix = false, []byte(pGCHold)
		hold := txn.NewIterator(opts)
		rewrote := d.DB.RunValueLogGC(0.5) == nil
		var err error
		if rewrote {
			err = d.Sync()
		}
		hold.Close() // the rewritten log goes now
		txn.Discard()
		if !rewrote || err != nil {
			return err
		}
	}
}

func be64(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}

func historyKey(id string, block, seq uint64) []byte {
	k := make([]byte, 0, len(pHistory)+len(id)+17)
	k = append(k, pHistory...)
	k = append(k, id...)
	k = append(k, 0)
	k = append(k, be64(block)...)
	return append(k, be64(seq)...)
}

// getJSON reads key into v; found is false when the key is absent.
func getJSON(txn *badger.Txn, key string, v any) (found bool, err error) {
	return getDecoded(txn, key, func(b []byte) error {
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("decode %q: %w", key, err)
		}
		return nil
	})
}

// errValueLost is a value badger cannot read back: its bytes in the value log never reached
// the disk (a power cut after badger wrote a table pointing at them) or fail their checksum.
var errValueLost = errors.New("its bytes in the state database were lost in a power cut or are damaged: " +
	"if the file holds changes not flushed yet, write it again; an anchored version comes back with the next pull " +
	"(a mount pulls as it starts), which fetches its epoch from the chain, or when the state database is rebuilt " +
	"from the epoch cache (move KINT_HOME/db aside while kintfs is stopped; changes not flushed stay in the moved copy)")

// itemValue is item.Value, refusing a value badger could not read. Badger logs such a read
// and hands the value over empty (a value in the value log is never empty), so every read of a
// value goes through here or itemValueCopy.
func itemValue(item *badger.Item, fn func([]byte) error) error {
	return item.Value(func(b []byte) error {
		if len(b) == 0 && item.ValueSize() > 0 {
			return errValueLost
		}
		return fn(b)
	})
}

// itemValueCopy is item.ValueCopy, refusing a value badger could not read (see itemValue).
func itemValueCopy(item *badger.Item) ([]byte, error) {
	var v []byte
	err := itemValue(item, func(b []byte) error { v = append([]byte(nil), b...); return nil })
	return v, err
}

// getDecoded reads key and hands its value to decode; found is false when the key is absent.
func getDecoded(txn *badger.Txn, key string, decode func([]byte) error) (found bool, err error) {
	item, err := txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := itemValue(item, decode); err != nil {
		return false, err
	}
	return true, nil
}

// setJSON stores v as JSON. HTML is not escaped (a '<' in a row would take six bytes), so a
// record holding text is never much larger than the text. badger's errors are mapped by
// storeError: they may quote the value.
func setJSON(txn *badger.Txn, key string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return storeError("record", len(b), txn.Set([]byte(key), b))
}

// scanPrefix calls fn for every key under prefix, in key order.
func scanPrefix(txn *badger.Txn, prefix string, fn func(key, val []byte) error) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte(prefix)
	it := txn.NewIterator(opts)
	defer it.Close()
	for it.Seek(opts.Prefix); it.ValidForPrefix(opts.Prefix); it.Next() {
		item := it.Item()
		val, err := itemValueCopy(item)
		if err != nil {
			return err
		}
		if err := fn(item.KeyCopy(nil), val); err != nil {
			return err
		}
	}
	return nil
}

// scanValues is scanPrefix without copies: key and val are valid only inside fn. It suits a
// scan of many small records that fn decodes on the spot.
func scanValues(txn *badger.Txn, prefix string, fn func(key, val []byte) error) error {
	return eachItem(txn, prefix, func(item *badger.Item) error {
		return itemValue(item, func(val []byte) error { return fn(item.Key(), val) })
	})
}

// scanKeys calls fn with every key under prefix, in key order, reading no value; key is
// valid only inside fn.
func scanKeys(txn *badger.Txn, prefix string, fn func(key []byte) error) error {
	return eachItem(txn, prefix, func(item *badger.Item) error { return fn(item.Key()) })
}

// eachItem calls fn for every item under prefix, in key order, reading a value only when fn
// asks for it.
func eachItem(txn *badger.Txn, prefix string, fn func(item *badger.Item) error) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte(prefix)
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()
	for it.Seek(opts.Prefix); it.ValidForPrefix(opts.Prefix); it.Next() {
		if err := fn(it.Item()); err != nil {
			return err
		}
	}
	return nil
}

func decodeJSON(b []byte, v any) error { return json.Unmarshal(b, v) }

// memTableSizeFor is the memtable size to open dir with: memTableSize, or more when dir holds
// a memtable log that a mount with larger memtables left (killed before badger flushed it).
// Badger replays a log into one memtable, and panics when it does not fit; a log file is twice
// the memtable size it was made for. Once badger has flushed it, the next open is back to
// memTableSize.
func memTableSizeFor(dir string) int64 {
	size := int64(memTableSize)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return size
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".mem" {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Size()/2 > size {
			size = fi.Size() / 2
		}
	}
	return size
}

package store

import (
	"bytes"
	"errors"

	"github.com/dgraph-io/badger/v4"
)

// A staged row's body of up to maxPiecedBody bytes is stored in pieces smaller than
// valueThreshold, which badger keeps in its memtable log, in the entry of the transaction
// that also holds the staged record. A body stored whole goes to the value log, and the
// record's pointer to it is only safe on the disk once the value is (see syncNow): two logs
// synced one after the other, two flushes of the disk's cache. In pieces, the change a close,
// fsync or rename makes durable has one log to sync.
//
// A larger body is stored whole: its pieces would fill memtables quickly, and the time to
// write it weighs more than the second sync.
//
// A key's pieces are pBodyPiece, the key, a NUL and the piece's number as two bytes: a suffix of
// fixed length, so that the pieces of two keys never share a key, whatever bytes the keys
// hold. Every piece but the last is pieceSize bytes; the last is shorter, possibly empty, so a
// body of n bytes is stored in n/pieceSize+1 pieces. The record that points at the body says
// how many.
const (
	pBodyPiece    = "v/"
	pieceSize     = valueThreshold - 1
	maxPiecedBody = 4 << 10
	// maxPieces is the most pieces a body is stored in
	maxPieces = maxPiecedBody/pieceSize + 1
)

// piecesFor is how many pieces a body of n bytes is stored in; 0: it is stored whole.
func piecesFor(n int) int {
	if n > maxPiecedBody {
		return 0
	}
	return n/pieceSize + 1
}

func pieceKey(key string, i int) []byte {
	k := make([]byte, 0, len(pBodyPiece)+len(key)+3)
	k = append(k, pBodyPiece...)
	k = append(k, key...)
	return append(k, 0, byte(i>>8), byte(i))
}

// putBody stores val under key, in piecesFor(len(val)) pieces or whole, and deletes what key
// held before in the other form or in more pieces. val must not change until txn commits.
func putBody(txn *badger.Txn, key string, val []byte, what string) error {
	n := piecesFor(len(val))
	if n == 0 {
		if err := setValue(txn, []byte(key), val, what); err != nil {
			return err
		}
		return deletePiecesFrom(txn, key, 0)
	}
	for i := 0; i < n; i++ {
		piece := val[i*pieceSize : min((i+1)*pieceSize, len(val))]
		if err := setValue(txn, pieceKey(key, i), piece, what); err != nil {
			return err
		}
	}
	if err := deletePiecesFrom(txn, key, n); err != nil {
		return err
	}
	_, err := deleteIfPresent(txn, []byte(key))
	return err
}

// deleteBodyIn deletes the body stored under key in n pieces (0: whole), as its record says.
func deleteBodyIn(txn *badger.Txn, key string, n int) error {
	if n == 0 {
		return txn.Delete([]byte(key))
	}
	for i := 0; i < n; i++ {
		if err := txn.Delete(pieceKey(key, i)); err != nil {
			return err
		}
	}
	return nil
}

// deleteBody deletes the body stored under key, whole or in pieces, when no record says how.
func deleteBody(txn *badger.Txn, key string) error {
	if _, err := deleteIfPresent(txn, []byte(key)); err != nil {
		return err
	}
	return deletePiecesFrom(txn, key, 0)
}

// deletePiecesFrom deletes the pieces of key from the i-th on. A body's pieces are numbered
// from 0 without a gap, so the first one absent is the end.
func deletePiecesFrom(txn *badger.Txn, key string, i int) error {
	for ; ; i++ {
		present, err := deleteIfPresent(txn, pieceKey(key, i))
		if err != nil || !present {
			return err
		}
	}
}

// deleteIfPresent deletes key when it is there, and says whether it was: a deletion of a key
// never written would still add a tombstone to the tables.
func deleteIfPresent(txn *badger.Txn, key []byte) (present bool, err error) {
	if _, err := txn.Get(key); errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, txn.Delete(key)
}

// pieceReader reads bodies stored in pieces. Without an iterator (a single read) it gets
// each piece; with one, made for reads in key order (a scan of the staged records, a push
// reading its rows), it walks from one body's pieces to the next, seeking only when they are
// not next: on a vault whose tables are many, a get of each piece made a flush of 10,000
// rows take 0.8 s more.
type pieceReader struct {
	it *badger.Iterator
}

// newPieceReader is a pieceReader for reads in key order; close it when done.
func newPieceReader(txn *badger.Txn) *pieceReader {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Prefix = []byte(pBodyPiece)
	return &pieceReader{it: txn.NewIterator(opts)}
}

func (p *pieceReader) close() {
	if p != nil {
		p.it.Close()
	}
}

// read reads the body stored under key in n pieces; found is false when a piece is missing,
// or is not the size its place says. A nil reader gets each piece.
func (p *pieceReader) read(txn *badger.Txn, key string, n int) (val []byte, found bool, err error) {
	val = make([]byte, 0, min(n, maxPieces)*pieceSize)
	for i := 0; i < n; i++ {
		want := pieceKey(key, i)
		var item *badger.Item
		if p == nil {
			if item, err = txn.Get(want); errors.Is(err, badger.ErrKeyNotFound) {
				return nil, false, nil
			} else if err != nil {
				return nil, false, err
			}
		} else {
			if !p.it.Valid() || !bytes.Equal(p.it.Item().Key(), want) {
				p.it.Seek(want)
			}
			if !p.it.Valid() || !bytes.Equal(p.it.Item().Key(), want) {
				return nil, false, nil
			}
			item = p.it.Item()
		}
		if size := item.ValueSize(); (i < n-1 && size != pieceSize) || (i == n-1 && size >= pieceSize) {
			return nil, false, nil
		}
		if err := itemValue(item, func(piece []byte) error { val = append(val, piece...); return nil }); err != nil {
			return nil, false, err
		}
		if p != nil {
			p.it.Next()
		}
	}
	return val, true, nil
}

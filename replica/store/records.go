package store

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// mirrorRec is a row as of the newest applied epoch. The stored record leaves the body out
// (it is kept under pBody), so the tree loads without reading a single body.
type mirrorRec struct {
	Row     seal.Row     `json:"row"`
	Leaf    common.Hash  `json:"leaf"`
	Anchor  vault.Anchor `json:"anchor"`
	Mtime   int64        `json:"mtime"`    // unix nanoseconds
	Size    int64        `json:"size"`     // bytes of the file content
	HasBody bool         `json:"has_body"` // the row's body is not null: it is stored under pBody
}

func newMirrorRec(row seal.Row, leaf common.Hash, anchor vault.Anchor, mtime int64) mirrorRec {
	return mirrorRec{Row: row, Leaf: leaf, Anchor: anchor, Mtime: mtime, Size: contentSize(&row), HasBody: !row.Body.IsNull()}
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
	// Size is the bytes of the file content; RawBody says the body is stored apart, raw,
	// under pStagedBody (the stored record's Row.Body is then null).
	Size    int64 `json:"size,omitempty"`
	RawBody bool  `json:"raw_body,omitempty"`
	// Pieces is how many pieces the body apart is stored in (see pieces.go); 0: whole.
	Pieces int `json:"pieces,omitempty"`
	// leaf is Row's leaf: stored with the record (binary layout), so an epoch's apply and a
	// vault's load compare and show it without reading the body; else hashed once by rowLeaf
	leaf *common.Hash
}

// rowLeaf is the leaf of the staged row, hashed once. Row must not change after it, and its
// body must have been read when the record did not store the leaf (see getStagedHead).
func (st *stagedRec) rowLeaf() common.Hash {
	if st.leaf == nil {
		l := common.Hash(seal.Leaf(&st.Row))
		st.leaf = &l
	}
	return *st.leaf
}

// localRec is a local-only file.
type localRec struct {
	Key   recKey `json:"key"`
	Body  []byte `json:"body,omitempty"` // in layout 2; stored apart under pLocalBody since (RawBody)
	Mtime int64  `json:"mtime"`
	// RawBody says the content is stored raw under pLocalBody.
	RawBody bool `json:"raw_body,omitempty"`
	// Status and Meta are what setxattr gave the file; a rename onto a row carries them (rsync
	// and other copy tools set a file's attributes on a temporary dotfile, then rename it).
	Status *string `json:"status,omitempty"`
	Meta   *string `json:"meta,omitempty"`
}

// recKey is a key as a local file's record stores it, field for field the JSON it always had.
type recKey struct {
	Tier     string
	Category *string
	Key      string
	Local    bool
}

func recKeyOf(k vault.Key) recKey {
	return recKey{Tier: k.Tier, Category: k.CategoryPtr(), Key: k.Key, Local: k.Local}
}

func (r recKey) key() vault.Key {
	return vault.Key{Tier: r.Tier, Key: r.Key, Local: r.Local}.InCategory(r.Category)
}

// histRec is one anchored version of a row; Row is nil when the epoch deleted it.
type histRec struct {
	Row    *seal.Row    `json:"row"`
	Anchor vault.Anchor `json:"anchor"`
	Mtime  int64        `json:"mtime"`
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Unix(0, 0)
	}
	return time.Unix(0, n)
}

// A staged row is stored as JSON, and JSON strings hold only UTF-8: encoding/json would turn
// every other byte into U+FFFD. Yet a staged row may hold such bytes (a body, a key or a
// status that is not UTF-8 is held, not anchored, and must read back as written), and so may
// a local file's name. Those records carry such strings as raw bytes beside the JSON.

// rawStrings holds the strings of a record that are not valid UTF-8, by field name.
type rawStrings map[string][]byte

// stash moves the strings that are not valid UTF-8 out of the slots (of a copy of the record)
// into raw bytes.
func stash(plain map[string]*string, nullable map[string]**string) rawStrings {
	var raw rawStrings
	put := func(name, s string) {
		if raw == nil {
			raw = rawStrings{}
		}
		raw[name] = []byte(s)
	}
	for name, p := range plain {
		if !utf8.ValidString(*p) {
			put(name, *p)
			*p = ""
		}
	}
	for name, p := range nullable {
		if *p != nil && !utf8.ValidString(**p) {
			put(name, **p)
			*p = nil
		}
	}
	return raw
}

// restore puts stashed strings back into their slots.
func (raw rawStrings) restore(plain map[string]*string, nullable map[string]**string) error {
	for name, b := range raw {
		s := string(b)
		if p, ok := plain[name]; ok {
			*p = s
		} else if p, ok := nullable[name]; ok {
			*p = &s
		} else {
			return fmt.Errorf("raw bytes for an unknown field %q", name)
		}
	}
	return nil
}

func rowSlots(r *seal.Row) (map[string]*string, map[string]**string) {
	return map[string]*string{"key": &r.Key}, map[string]**string{"category": &r.Category, "status": &r.Status,
		"meta": &r.Meta, "ts": &r.TS, "evaluated": &r.Evaluated, "acted": &r.Acted,
		"forward": &r.Forward, "extra": &r.Extra}
}

// localSlots are the strings of a local file's record that may not be UTF-8.
func localSlots(r *localRec) (map[string]*string, map[string]**string) {
	return map[string]*string{"key": &r.Key.Key}, map[string]**string{"category": &r.Key.Category,
		"status": &r.Status, "meta": &r.Meta}
}

func (r *stagedRec) UnmarshalJSON(b []byte) error {
	type plain stagedRec
	var w struct {
		plain
		Raw rawStrings `json:"raw,omitempty"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = stagedRec(w.plain)
	if b, ok := w.Raw["body"]; ok {
		r.Row.Body = seal.BodyOf(b)
		delete(w.Raw, "body")
	}
	return w.Raw.restore(rowSlots(&r.Row))
}

func (r localRec) MarshalJSON() ([]byte, error) {
	type plain localRec
	w := struct {
		plain
		Raw rawStrings `json:"raw,omitempty"`
	}{plain: plain(r)}
	w.Raw = stash(localSlots((*localRec)(&w.plain)))
	return json.Marshal(w)
}

func (r *localRec) UnmarshalJSON(b []byte) error {
	type plain localRec
	var w struct {
		plain
		Raw rawStrings `json:"raw,omitempty"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = localRec(w.plain)
	return w.Raw.restore(localSlots(r))
}

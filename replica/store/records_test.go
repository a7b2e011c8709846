package store

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// TestLocalRecordKeyJSON: a local file's record stores its key as it always has, field for
// field, with a null category for none and "" for the empty one, and reads back the same key.
func TestLocalRecordKeyJSON(t *testing.T) {
	for _, c := range []struct {
		k    vault.Key
		want string
	}{
		{vault.Key{Tier: "state", Key: ".a", Local: true},
			`{"key":{"Tier":"state","Category":null,"Key":".a","Local":true},"mtime":1}`},
		{vault.Key{Tier: "entity", HasCategory: true, Key: ".b", Local: true},
			`{"key":{"Tier":"entity","Category":"","Key":".b","Local":true},"mtime":1}`},
		{vault.Key{Tier: "entity", Category: "person", HasCategory: true, Key: ".c", Local: true},
			`{"key":{"Tier":"entity","Category":"person","Key":".c","Local":true},"mtime":1}`},
	} {
		b, err := json.Marshal(localRec{Key: recKeyOf(c.k), Mtime: 1})
		if err != nil || string(b) != c.want {
			t.Fatalf("%+v stored as %s %v, want %s", c.k, b, err, c.want)
		}
		var back localRec
		if err := json.Unmarshal(b, &back); err != nil || back.Key.key() != c.k {
			t.Fatalf("%s read back as %+v %v, want %+v", b, back.Key.key(), err, c.k)
		}
	}
}

// MarshalJSON writes a staged record as layouts up to 3 stored it (the store writes the binary
// layout since, and reads both): the tests make older homes with it.
func (r stagedRec) MarshalJSON() ([]byte, error) {
	type plain stagedRec
	w := struct {
		plain
		Raw rawStrings `json:"raw,omitempty"`
	}{plain: plain(r)}
	w.Raw = stash(rowSlots(&w.Row))
	if !utf8.Valid(w.Row.Body.Bytes()) {
		if w.Raw == nil {
			w.Raw = rawStrings{}
		}
		w.Raw["body"], w.Row.Body = w.Row.Body.Bytes(), seal.Body{}
	}
	return json.Marshal(w)
}

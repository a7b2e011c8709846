package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// journalFields are the five content fields of a journal event, in the order the file shows them.
var journalFields = []string{"ts", "evaluated", "acted", "forward", "extra"}

func journalValues(r *seal.Row) []*string {
	return []*string{r.TS, r.Evaluated, r.Acted, r.Forward, r.Extra}
}

// RenderContent is a row's file content: the body byte for byte, or for a journal event the
// JSON object of its five fields, written the way kint writes JSON.
func RenderContent(r *seal.Row) []byte {
	if r.Tier != seal.TierJournal {
		return r.Body.Bytes()
	}
	b := []byte{'{'}
	for i, v := range journalValues(r) {
		if i > 0 {
			b = append(b, ',')
		}
		b = seal.AppendJSONString(b, journalFields[i])
		b = append(b, ':')
		if v == nil {
			b = append(b, "null"...)
		} else {
			b = seal.AppendJSONString(b, *v)
		}
	}
	return append(b, '}')
}

// parseJournal reads a journal event written as a JSON object of its fields. Every field is a
// string or null; a missing field is null. Anything else is refused, so that what is anchored
// is exactly what was written.
func parseJournal(content []byte) (seal.Row, error) {
	row := seal.Row{Tier: seal.TierJournal}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(content))
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return row, fmt.Errorf("%w: a journal event is a JSON object of ts, evaluated, acted, forward, extra", vault.ErrInvalid)
	}
	dst := []**string{&row.TS, &row.Evaluated, &row.Acted, &row.Forward, &row.Extra}
	known := map[string]bool{}
	for i, name := range journalFields {
		known[name] = true
		raw, ok := obj[name]
		if !ok || string(raw) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return row, fmt.Errorf("%w: journal field %q must be a string or null", vault.ErrInvalid, name)
		}
		*dst[i] = &s
	}
	for name := range obj {
		if !known[name] {
			return row, fmt.Errorf("%w: unknown journal field %q", vault.ErrInvalid, name)
		}
	}
	return row, nil
}

// heldReason says why a row cannot be anchored as it stands, or "" when it can. A row too
// long to travel in one epoch uncompressed is held at once; the compressed limit is checked
// when the row is sealed.
func heldReason(r *seal.Row) string {
	if n := contentSize(r); n > seal.MaxChunkPlain {
		return (&seal.RowTooLargeError{Row: *r, Plain: int(n)}).Error()
	}
	for _, v := range []*string{r.Category, r.Status, r.Meta, r.TS, r.Evaluated, r.Acted, r.Forward, r.Extra} {
		if v != nil && !utf8.ValidString(*v) {
			return "not valid UTF-8: kint anchors text"
		}
	}
	if !utf8.Valid(r.Body.Bytes()) {
		return "not valid UTF-8: kint anchors text"
	}
	if !utf8.ValidString(r.Key) {
		return "key is not valid UTF-8"
	}
	if r.Tier == seal.TierEntity && (r.Body.IsNull() || !json.Valid(r.Body.Bytes())) {
		return "entity body is not a JSON value (Sibyl stores entity bodies as JSON)"
	}
	return ""
}

func eqStrp(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

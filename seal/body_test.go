package seal

import (
	"encoding/json"
	"strings"
	"testing"
)

// A null body and an empty one stay apart through the wire JSON, the store's JSON and back.
func TestBodyNullAndEmptyStayApart(t *testing.T) {
	for _, c := range []struct {
		body Body
		wire string
	}{
		{Body{}, `"body":null`},
		{BodyOf(nil), `"body":""`},
		{BodyString(""), `"body":""`},
		{BodyString("a\"\n\u2028<"), `"body":"a\"\n` + "\u2028" + `<"`},
	} {
		r := Row{Tier: TierState, Key: "k", Body: c.body}
		enc := AppendRowJSON(nil, &r)
		if !strings.Contains(string(enc), c.wire) {
			t.Errorf("row JSON %s, want %s in it", enc, c.wire)
		}
		d := jsonDecoder{b: enc}
		back, err := d.row()
		if err != nil || !back.Body.Equal(c.body) || back.Body.IsNull() != c.body.IsNull() {
			t.Errorf("%s decodes to body %q (null %v), %v; want %q (null %v)", enc, back.Body.Bytes(), back.Body.IsNull(), err, c.body.Bytes(), c.body.IsNull())
		}
		js, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var rec Row
		if err := json.Unmarshal(js, &rec); err != nil || !rec.Body.Equal(c.body) || rec.Body.IsNull() != c.body.IsNull() {
			t.Errorf("store JSON %s reads back body %q (null %v), %v", js, rec.Body.Bytes(), rec.Body.IsNull(), err)
		}
	}
	// a record written by encoding/json when Body was a string reads back the same
	var old Row
	if err := json.Unmarshal([]byte(`{"Tier":"state","Key":"k","Body":"\u003cx\u003e \u0026 \/"}`), &old); err != nil || string(old.Body.Bytes()) != "<x> & /" {
		t.Errorf("older record: body %q, %v", old.Body.Bytes(), err)
	}
	if _, err := json.Marshal(Row{Body: BodyOf([]byte{0xff})}); err == nil {
		t.Error("a body that is not UTF-8 was written as a JSON string")
	}
}

// Writing a row's JSON copies the body once, into the JSON, and never to a string first.
func TestRowJSONDoesNotCopyTheBodyTwice(t *testing.T) {
	body := BodyOf([]byte(strings.Repeat("x", 1<<20)))
	r := Row{Tier: TierState, Key: "k", Body: body}
	dst := make([]byte, 0, 2<<20)
	if n := testing.AllocsPerRun(5, func() { dst = AppendRowJSON(dst[:0], &r) }); n != 0 {
		t.Errorf("AppendRowJSON of a 1 MiB body into room enough: %v allocations, want 0", n)
	}
}

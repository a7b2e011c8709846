package seal

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"kintfs/seal/vectors"
)

func TestAppendJSONStringMatchesPython(t *testing.T) {
	// Expected values are Python's json.dumps(s, ensure_ascii=False,
	// separators=(",", ":")).
	cases := []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{`quote"back\slash`, `"quote\"back\\slash"`},
		{"nl\ncr\rtab\tbs\bff\f", `"nl\ncr\rtab\tbs\bff\f"`},
		{"\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"\x7f", "\"\x7f\""},
		{"del\x7fx", "\"del\x7fx\""},
		{"\u2028\u2029", "\"\u2028\u2029\""},
		{"é ü ﬁ", `"é ü ﬁ"`},
		{"🔥 astral 𝄞", `"🔥 astral 𝄞"`},
		{"</script>&<>", `"</script>&<>"`},
		{"\x00end", `"\u0000end"`},
		{"mixed\x0b\x0e\x1b", `"mixed\u000b\u000e\u001b"`},
	}
	for _, c := range cases {
		if got := string(AppendJSONString(nil, c.in)); got != c.want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", c.in, got, c.want)
		}
		// What we write, a JSON reader reads back unchanged.
		var back string
		if err := json.Unmarshal([]byte(c.want), &back); err != nil || back != c.in {
			t.Errorf("%s does not read back: %q %v", c.want, back, err)
		}
	}
	if got := string(AppendJSONString([]byte("x="), "y")); got != `x="y"` {
		t.Errorf("append to a prefix: %s", got)
	}
}

func vectorPlaintext(v *vectors.Vectors, e *vectors.Epoch) *Plaintext {
	p := &Plaintext{
		Tenant:    v.Tenant,
		Space:     v.Space,
		Seq:       e.Seq,
		Prev:      e.Prev,
		Rows:      toRows(e.Rows),
		RowsRoot:  e.RowsRoot,
		NRows:     e.NRows,
		CreatedAt: e.CreatedAt,
		Snapshot:  e.SnapshotInPlaintext,
	}
	for _, d := range e.Deleted {
		p.Deleted = append(p.Deleted, Deleted(d))
	}
	return p
}

func TestEncodePlaintextVectors(t *testing.T) {
	v := vectors.Load(t)
	// Epoch 1 carries the vectors' rows, in their order.
	if !reflect.DeepEqual(toRows(v.Epoch1.Rows), vectorRows(v)) {
		t.Fatalf("epoch 1 rows differ from the vectors' rows")
	}
	for _, e := range []*vectors.Epoch{&v.Epoch1, &v.Epoch2} {
		if string(e.Plaintext) != e.PlaintextUTF8 {
			t.Fatalf("epoch %d: plaintext hex and utf8 disagree", e.Seq)
		}
		p := vectorPlaintext(v, e)
		got := EncodePlaintext(p)
		if !bytes.Equal(got, e.Plaintext) {
			t.Errorf("epoch %d plaintext:\n%s\nwant\n%s", e.Seq, got, e.Plaintext)
		}
		if e.CreatedAt != "2026-09-09T16:18:43Z" {
			t.Errorf("created_at = %q", e.CreatedAt)
		}
	}
	if v.Epoch1.NRows != len(v.Epoch1.Rows) || StateRoot(toRows(v.Epoch1.Rows)) != v.Epoch1.RowsRoot {
		t.Error("epoch 1 is the full state: its root and count must match its rows")
	}
}

func TestDecodePlaintextVectors(t *testing.T) {
	v := vectors.Load(t)
	for _, e := range []*vectors.Epoch{&v.Epoch1, &v.Epoch2} {
		p, err := DecodePlaintext(e.Plaintext)
		if err != nil {
			t.Fatalf("epoch %d: %v", e.Seq, err)
		}
		want := vectorPlaintext(v, e)
		if want.Deleted == nil {
			want.Deleted = []Deleted{}
		}
		if !reflect.DeepEqual(p, want) {
			t.Errorf("epoch %d decoded = %+v\nwant %+v", e.Seq, p, want)
		}
		if !bytes.Equal(EncodePlaintext(p), e.Plaintext) {
			t.Errorf("epoch %d does not re-encode byte for byte", e.Seq)
		}

		// Whitespace and key order are not significant.
		var generic map[string]any
		if err := json.Unmarshal(e.Plaintext, &generic); err != nil {
			t.Fatal(err)
		}
		pretty, _ := json.MarshalIndent(generic, "", "  ") // keys sorted, indented, \u escapes for <>&
		p2, err := DecodePlaintext(pretty)
		if err != nil {
			t.Fatalf("epoch %d reordered: %v", e.Seq, err)
		}
		if !reflect.DeepEqual(p2, p) {
			t.Errorf("epoch %d reordered decodes differently", e.Seq)
		}
	}
}

func TestDecodePlaintextEscapes(t *testing.T) {
	doc := `{"v":1,"tenant":"t\u00e9\ud83d\udd25\/\"","space":"` + strings.Repeat("AB", 32) + `","seq":0,"prev":"` + strings.Repeat("0", 64) +
		`","rows":[],"deleted":[["entity",null,"k"]],"rows_root":"` + strings.Repeat("f", 64) + `","n_rows":0,"created_at":"","snapshot":false}`
	p, err := DecodePlaintext([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if p.Tenant != "té🔥/\"" || p.Space[0] != 0xab || p.Snapshot || len(p.Deleted) != 1 || p.Deleted[0].Category != nil {
		t.Errorf("decoded %+v", p)
	}
}

func TestDecodePlaintextRefusals(t *testing.T) {
	v := vectors.Load(t)
	good := string(v.Epoch1.Plaintext)
	snap := string(v.Epoch2.Plaintext)
	row0 := `{"tier":"entity","key":"zeta","category":"person","status":"active","body":"{\"name\":\"zeta\",\"note\":\"the plain ascii control\"}","meta":null,"ts":null,"evaluated":null,"acted":null,"forward":null,"extra":null}`
	if !strings.Contains(good, row0) {
		t.Fatal("fixture row not found")
	}
	edits := map[string]string{
		"version 2":           strings.Replace(good, `"v":1`, `"v":2`, 1),
		"version float":       strings.Replace(good, `"v":1`, `"v":1.0`, 1),
		"version string":      strings.Replace(good, `"v":1`, `"v":"1"`, 1),
		"missing tenant":      strings.Replace(good, `"tenant":"demo",`, ``, 1),
		"duplicate tenant":    strings.Replace(good, `"tenant":"demo",`, `"tenant":"demo","tenant":"demo",`, 1),
		"unknown key":         strings.Replace(good, `"v":1,`, `"v":1,"x":1,`, 1),
		"negative seq":        strings.Replace(good, `"seq":1`, `"seq":-1`, 1),
		"leading zero":        strings.Replace(good, `"seq":1`, `"seq":01`, 1),
		"exponent":            strings.Replace(good, `"seq":1`, `"seq":1e0`, 1),
		"seq overflow":        strings.Replace(good, `"seq":1`, `"seq":18446744073709551616`, 1),
		"short space":         strings.Replace(good, `"space":"fd83`, `"space":"fd8`, 1),
		"non-hex prev":        strings.Replace(good, `"prev":"0`, `"prev":"g`, 1),
		"null tenant":         strings.Replace(good, `"tenant":"demo"`, `"tenant":null`, 1),
		"row missing key":     strings.Replace(good, `,"extra":null}`, `}`, 1),
		"row extra key":       strings.Replace(good, `"extra":null}`, `"extra":null,"rowid":1}`, 1),
		"row duplicate key":   strings.Replace(good, `"meta":null,`, `"meta":null,"meta":null,`, 1),
		"row unknown tier":    strings.Replace(good, `"tier":"state"`, `"tier":"status"`, 1),
		"row number body":     strings.Replace(good, `"body":"ship kint before the deadline"`, `"body":5`, 1),
		"row null key":        strings.Replace(good, `"key":"goal"`, `"key":null`, 1),
		"rows not a list":     strings.Replace(good, `"rows":[`+row0+`,`, `"rows":`+row0+`,"x":[`, 1),
		"deleted arity":       strings.Replace(snap, `["entity","person","ﬁrst"]`, `["entity","ﬁrst"]`, 1),
		"deleted four":        strings.Replace(snap, `["entity","person","ﬁrst"]`, `["entity","person","ﬁrst","x"]`, 1),
		"deleted bad tier":    strings.Replace(snap, `["entity","person","ﬁrst"]`, `["entities","person","ﬁrst"]`, 1),
		"n_rows negative":     strings.Replace(good, `"n_rows":8`, `"n_rows":-8`, 1),
		"n_rows huge":         strings.Replace(good, `"n_rows":8`, `"n_rows":4294967296`, 1),
		"snapshot not bool":   strings.Replace(snap, `"snapshot":true`, `"snapshot":1`, 1),
		"trailing data":       good + "x",
		"trailing object":     good + "{}",
		"truncated":           good[:len(good)-1],
		"raw control":         strings.Replace(good, `"tenant":"demo"`, "\"tenant\":\"de\nmo\"", 1),
		"lone high surrogate": strings.Replace(good, `"tenant":"demo"`, `"tenant":"\ud83d"`, 1),
		"lone low surrogate":  strings.Replace(good, `"tenant":"demo"`, `"tenant":"\udd25"`, 1),
		"bad escape":          strings.Replace(good, `"tenant":"demo"`, `"tenant":"\x"`, 1),
		"short \\u":           strings.Replace(good, `"tenant":"demo"`, `"tenant":"\u12"`, 1),
		"invalid utf-8":       strings.Replace(good, `"tenant":"demo"`, "\"tenant\":\"d\xffmo\"", 1),
		"bom":                 "\ufeff" + good,
		"not an object":       `[` + good + `]`,
		"empty":               ``,
		"empty object":        `{}`,
	}
	for name, doc := range edits {
		if doc == good || doc == snap {
			t.Errorf("%s: edit did not apply", name)
			continue
		}
		if _, err := DecodePlaintext([]byte(doc)); !errors.Is(err, ErrPlaintext) {
			t.Errorf("%s: got %v, want ErrPlaintext", name, err)
		}
	}
}

func TestFormatCreatedAt(t *testing.T) {
	zone := time.FixedZone("X", -7*3600)
	ts := time.Date(2026, 9, 9, 9, 18, 43, 999_000_000, zone)
	if got := FormatCreatedAt(ts); got != "2026-09-09T16:18:43Z" {
		t.Errorf("FormatCreatedAt = %q", got)
	}
}

func FuzzDecodePlaintext(f *testing.F) {
	// Small seeds keep the fuzzer's minimisation of new inputs quick; between
	// them they reach every key, null and non-null fields, escapes, a
	// deletion and the snapshot key.
	cat := "c\u00e9"
	seeds := []*Plaintext{
		{Tenant: "demo", Seq: 1, Rows: []Row{{Tier: TierEntity, Key: "🔥", Category: &cat, Body: bodyp(strp(`{"a":"\n"}`))}}, NRows: 1, CreatedAt: "2026-09-09T16:18:43Z"},
		{Tenant: "t", Seq: 2, Rows: []Row{{Tier: TierJournal, Key: "k:1", TS: strp("\x00"), Extra: strp("\u2028")}},
			Deleted: []Deleted{{Tier: TierState, Key: "g"}, {Tier: TierEntity, Category: &cat, Key: "x"}}, Snapshot: true},
		{},
	}
	for _, p := range seeds {
		f.Add(EncodePlaintext(p))
	}
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":1,"tenant":"\u0000\ud83d\udd25","space":"` + strings.Repeat("0", 64) + `","seq":0,"prev":"` + strings.Repeat("A", 64) +
		`","rows":[],"deleted":[["entity",null,"k"]],"rows_root":"` + strings.Repeat("0", 64) + `","n_rows":0,"created_at":"","snapshot":false}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePlaintext(b)
		if err != nil {
			if !errors.Is(err, ErrPlaintext) {
				t.Fatalf("error outside ErrPlaintext: %v", err)
			}
			return
		}
		enc := EncodePlaintext(p)
		p2, err := DecodePlaintext(enc)
		if err != nil {
			t.Fatalf("own encoding refused: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(p, p2) {
			t.Fatalf("decode(encode(p)) != p")
		}
		if again := EncodePlaintext(p2); !bytes.Equal(again, enc) {
			t.Fatalf("encoding is not a fixed point:\n%s\n%s", enc, again)
		}
	})
}

// FuzzRowJSONMax: the bound FitsAlone trusts without encoding a row is never below the row's
// encoded size, whatever its strings hold.
func FuzzRowJSONMax(f *testing.F) {
	f.Add("entity", "cat", "key", []byte("body"), "meta", true, true)
	f.Add("state", "", "k\x00\"\\", []byte("\x01\x1f\n\t\"\\é"), "\x7f\u2028", false, false)
	f.Add("journal", "c", "", []byte{}, "", true, false)
	f.Fuzz(func(t *testing.T, tier, cat, key string, body []byte, meta string, hasBody, hasMeta bool) {
		r := Row{Tier: tier, Category: &cat, Key: key, Status: &meta}
		if hasBody {
			r.Body = BodyOf(body)
		}
		if hasMeta {
			r.Meta, r.TS, r.Extra = &meta, &cat, &key
		}
		if got, bound := len(appendRowJSON(nil, &r)), rowJSONMax(&r); bound < got {
			t.Fatalf("rowJSONMax %d, the row encodes to %d bytes", bound, got)
		}
	})
}

// TestRowJSONMaxTight: a row whose every string byte is escaped as \u00XX encodes to exactly
// the bound.
func TestRowJSONMaxTight(t *testing.T) {
	ctl := string([]byte{0x01, 0x02, 0x1f})
	r := Row{Tier: ctl, Key: ctl, Category: &ctl, Status: &ctl, Body: BodyOf([]byte(ctl)), Meta: &ctl, TS: &ctl, Evaluated: &ctl, Acted: &ctl, Forward: &ctl, Extra: &ctl}
	if got, bound := len(appendRowJSON(nil, &r)), rowJSONMax(&r); got != bound {
		t.Errorf("every byte escaped: encoded %d bytes, bound %d", got, bound)
	}
	var nulls Row
	if got, bound := len(appendRowJSON(nil, &nulls)), rowJSONMax(&nulls); got != bound {
		t.Errorf("every field null: encoded %d bytes, bound %d", got, bound)
	}
}

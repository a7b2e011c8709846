package seal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/seal/vectors"
)

func vectorRows(v *vectors.Vectors) []Row {
	rows := make([]Row, len(v.Rows))
	for i, r := range v.Rows {
		rows[i] = fromVector(r.Row)
	}
	return rows
}

func toRows(vr []vectors.Row) []Row {
	rows := make([]Row, len(vr))
	for i := range vr {
		rows[i] = fromVector(vr[i])
	}
	return rows
}

// fromVector is the row of a vector (whose body is a *string, as the vectors file has it).
func fromVector(v vectors.Row) Row {
	return Row{Tier: v.Tier, Key: v.Key, Category: v.Category, Status: v.Status, Body: bodyp(v.Body),
		Meta: v.Meta, TS: v.TS, Evaluated: v.Evaluated, Acted: v.Acted, Forward: v.Forward, Extra: v.Extra}
}

// bodyp is the body of s, null for nil.
func bodyp(s *string) Body {
	if s == nil {
		return Body{}
	}
	return BodyString(*s)
}

func strp(s string) *string { return &s }

func TestRowVectors(t *testing.T) {
	v := vectors.Load(t)
	for _, rv := range v.Rows {
		r := fromVector(rv.Row)
		if got := r.ID(); got != rv.RowID {
			t.Errorf("ID = %q, want %q", got, rv.RowID)
		}
		if got := CanonicalID(r.Tier, r.Category, r.Key); got != rv.RowID {
			t.Errorf("CanonicalID = %q, want %q", got, rv.RowID)
		}
		if got := Leaf(&r); got != rv.Leaf {
			t.Errorf("Leaf(%q) = %x, want %x", rv.RowID, got, rv.Leaf)
		}
		if err := ValidUTF8Row(&r); err != nil {
			t.Errorf("ValidUTF8Row(%q) = %v", rv.RowID, err)
		}
	}

	rows := vectorRows(v)
	SortByID(rows)
	var ids []string
	var leaves [][32]byte
	for i := range rows {
		ids = append(ids, rows[i].ID())
		leaves = append(leaves, Leaf(&rows[i]))
	}
	if !slices.Equal(ids, v.SortedIDs) {
		t.Errorf("sorted ids = %q, want %q", ids, v.SortedIDs)
	}
	if got := MerkleRoot(leaves); got != v.RowsRoot {
		t.Errorf("MerkleRoot = %x, want %x", got, v.RowsRoot)
	}
	if got := StateRoot(vectorRows(v)); got != v.RowsRoot {
		t.Errorf("StateRoot = %x, want %x", got, v.RowsRoot)
	}
	if got := EmptyRoot(); got != v.EmptyRoot {
		t.Errorf("EmptyRoot = %x, want %x", got, v.EmptyRoot)
	}
	if got := MerkleRoot(nil); got != v.EmptyRoot {
		t.Errorf("MerkleRoot(nil) = %x", got)
	}
	if got := StateRoot(nil); got != v.EmptyRoot {
		t.Errorf("StateRoot(nil) = %x", got)
	}
}

func TestStateAfterEpoch2(t *testing.T) {
	v := vectors.Load(t)
	sa := v.Epoch2.StateAfter
	rows := toRows(v.Epoch2.Rows)
	SortByID(rows)
	var ids []string
	for i := range rows {
		ids = append(ids, rows[i].ID())
		if got, want := Leaf(&rows[i]), sa.Leaves[rows[i].ID()]; got != want {
			t.Errorf("leaf %q = %x, want %x", rows[i].ID(), got, want)
		}
	}
	if !slices.Equal(ids, sa.SortedIDs) {
		t.Errorf("ids = %q, want %q", ids, sa.SortedIDs)
	}
	if got := StateRoot(toRows(v.Epoch2.Rows)); got != sa.Root || got != v.Epoch2.RowsRoot {
		t.Errorf("state root = %x, want %x", got, sa.Root)
	}
	if len(rows) != sa.NRows {
		t.Errorf("n_rows = %d, want %d", len(rows), sa.NRows)
	}
	for i, d := range v.Epoch2.Deleted {
		if got := Deleted(d).ID(); got != v.Epoch2.DeletedIDs[i] {
			t.Errorf("deleted id = %q, want %q", got, v.Epoch2.DeletedIDs[i])
		}
	}
}

func TestCanonicalIDNullAndEmptyCategory(t *testing.T) {
	empty := ""
	a := Row{Tier: TierEntity, Key: "k", Category: nil, Body: bodyp(strp("b"))}
	b := Row{Tier: TierEntity, Key: "k", Category: &empty, Body: bodyp(strp("b"))}
	if a.ID() != b.ID() || a.ID() != "entity\x00\x00k" {
		t.Errorf("ids differ: %q %q", a.ID(), b.ID())
	}
	if Leaf(&a) == Leaf(&b) {
		t.Error("a null and an empty category must give different leaves")
	}
	if got := CanonicalID(TierState, strp("ignored"), "goal"); got != "state\x00\x00goal" {
		t.Errorf("state id = %q", got)
	}
}

func TestJournalKeyVector(t *testing.T) {
	v := vectors.Load(t)
	in := v.JournalKeyInputs
	if got := JournalKey(in.TS, in.Evaluated, in.Acted, in.Forward, in.Extra); got != in.Key {
		t.Errorf("JournalKey = %q, want %q", got, in.Key)
	}
	// The vector's journal row is keyed by the same content.
	for _, rv := range v.Rows {
		if rv.Row.Tier == TierJournal {
			r := fromVector(rv.Row)
			if JournalKey(r.TS, r.Evaluated, r.Acted, r.Forward, r.Extra) != r.Key {
				t.Errorf("journal row key %q is not its content key", r.Key)
			}
		}
	}
}

func TestAssignJournalKeys(t *testing.T) {
	ev := func(ts string) Row { return Row{Tier: TierJournal, TS: strp(ts), Evaluated: strp("e")} }
	base := JournalKey(strp("t1"), strp("e"), nil, nil, nil)
	other := JournalKey(strp("t2"), strp("e"), nil, nil, nil)
	rows := []Row{ev("t1"), {Tier: TierEntity, Key: "x"}, ev("t1"), ev("t2"), ev("t1"), {Tier: TierJournal, Key: "keep", TS: strp("t1"), Evaluated: strp("e")}}
	existing := map[string]bool{base + ":1": true}
	AssignJournalKeys(rows, func(k string) bool { return existing[k] })
	want := []string{base, "x", base + ":2", other, base + ":3", "keep"}
	for i := range rows {
		if rows[i].Key != want[i] {
			t.Errorf("row %d key = %q, want %q", i, rows[i].Key, want[i])
		}
	}
	// A key already carried by a row of the slice is taken too.
	rows = []Row{{Tier: TierJournal, Key: base}, ev("t1")}
	AssignJournalKeys(rows, nil)
	if rows[1].Key != base+":1" {
		t.Errorf("key = %q, want %q", rows[1].Key, base+":1")
	}
}

func TestSortByIDBytewise(t *testing.T) {
	// UTF-8 byte order: U+FB01 (ef ac 81) sorts before U+1F525 (f0 9f 94 a5),
	// though UTF-16 order would put the astral character first.
	rows := []Row{
		{Tier: TierEntity, Category: strp("p"), Key: "🔥"},
		{Tier: TierEntity, Category: strp("p"), Key: "ﬁ"},
		{Tier: TierEntity, Category: strp("p"), Key: "z"},
		{Tier: TierEntity, Key: "zz"},
	}
	SortByID(rows)
	var keys []string
	for _, r := range rows {
		keys = append(keys, r.Key)
	}
	if want := []string{"zz", "z", "ﬁ", "🔥"}; !slices.Equal(keys, want) {
		t.Errorf("order = %q, want %q", keys, want)
	}
}

func TestValidUTF8Row(t *testing.T) {
	bad := string([]byte{0xff, 'a'})
	for i, r := range []Row{
		{Tier: TierState, Key: bad},
		{Tier: TierState, Key: "k", Body: bodyp(&bad)},
		{Tier: TierJournal, Key: "k", Extra: &bad},
		{Tier: TierEntity, Key: "k", Category: &bad},
	} {
		if err := ValidUTF8Row(&r); !errors.Is(err, ErrInvalidUTF8) {
			t.Errorf("case %d: got %v", i, err)
		}
	}
}

func ExampleCanonicalID() {
	cat := "rules"
	fmt.Printf("%q\n", CanonicalID(TierEntity, &cat, "release-gate"))
	fmt.Printf("%q\n", CanonicalID(TierReference, nil, "doc/readme"))
	// Output:
	// "entity\x00rules\x00release-gate"
	// "reference\x00\x00doc/readme"
}

// A leaf too large to build in one buffer is hashed in pieces: the same hash as the preimage
// built whole, for every field around the pieces' edges.
func TestLeafOfLargeRow(t *testing.T) {
	whole := func(fields []*string) [32]byte {
		buf := append([]byte(nil), leafDomain...)
		for _, f := range fields {
			if f == nil {
				buf = append(buf, 0xff, 0xff, 0xff, 0xff)
				continue
			}
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(*f)))
			buf = append(buf, *f...)
		}
		return crypto.Keccak256Hash(buf)
	}
	lp := func(fields []*string, body int) []lpField {
		out := make([]lpField, len(fields))
		for i, f := range fields {
			out[i] = strField(f)
			if i == body && f != nil {
				out[i] = bodyLP(BodyString(*f)) // the body hashed where it lies
			}
		}
		return out
	}
	piece := 32 << 10
	for _, n := range []int{0, 1, piece - 16, piece - 13, piece - 12, piece, piece + 1, leafInline - 40, leafInline, leafInline + 1, 3*piece - 17, 1 << 20} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte('a' + i%23)
		}
		b := string(body)
		meta := b[:n/3]
		for _, r := range []Row{
			{Tier: TierState, Key: "k", Body: bodyp(&b)},
			{Tier: TierEntity, Category: strp("person"), Key: "k", Status: strp("s"), Body: bodyp(&b), Meta: &meta},
			{Tier: TierReference, Key: string(body[:min(n, 70000)]), Body: bodyp(&b)},
			{Tier: TierJournal, Key: "j", TS: &meta, Evaluated: &b, Extra: &meta},
		} {
			tier, key, body := r.Tier, r.Key, string(r.Body.Bytes())
			fields, bodyAt := []*string{&tier, r.Category, &key, r.Status, &body, r.Meta}, 4
			if r.Tier == TierJournal {
				fields, bodyAt = []*string{&tier, nil, &key, nil, r.TS, r.Evaluated, r.Acted, r.Forward, r.Extra}, -1
			}
			if got, want := Leaf(&r), whole(fields); got != want {
				t.Fatalf("%s row with a body of %d: leaf %x, want %x", r.Tier, n, got[:6], want[:6])
			}
			if got, want := leafStreamed(lp(fields, bodyAt)), whole(fields); got != want {
				t.Fatalf("%s row with a body of %d: streamed leaf %x, want %x", r.Tier, n, got[:6], want[:6])
			}
		}
	}
}

package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/ethereum/go-ethereum/common"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// randomRow fills every *string field of seal.Row, found by reflection (a field added to
// Row and not to rowStrings fails the round trip), each null, empty, text, or bytes that are
// not UTF-8; the body likewise.
func randomRow(rng *rand.Rand) seal.Row {
	str := func() string {
		switch rng.IntN(4) {
		case 0:
			return ""
		case 1:
			return "text <&> \"quoted\" \\ \n é"
		case 2:
			return string([]byte{0xff, 0xfe, 0, byte(rng.IntN(256))})
		}
		return strings.Repeat("x", rng.IntN(300))
	}
	r := seal.Row{Tier: []string{seal.TierEntity, seal.TierState, seal.TierReference, seal.TierJournal, "other", ""}[rng.IntN(6)], Key: str()}
	v := reflect.ValueOf(&r).Elem()
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Type() == reflect.TypeFor[*string]() && rng.IntN(3) > 0 {
			s := str()
			f.Set(reflect.ValueOf(&s))
		}
	}
	switch rng.IntN(3) {
	case 0:
		r.Body = seal.BodyOf([]byte{})
	case 1:
		r.Body = seal.BodyString(str())
	}
	return r
}

func randomHash(rng *rand.Rand) (h common.Hash) {
	for i := range h {
		h[i] = byte(rng.Uint32())
	}
	return h
}

func randomInt(rng *rand.Rand) int64 {
	return []int64{0, -1, 1, 1 << 62, -1 << 63, rng.Int64()}[rng.IntN(6)]
}

func randomMirrorRec(rng *rand.Rand) mirrorRec {
	return mirrorRec{Row: randomRow(rng), Leaf: randomHash(rng),
		Anchor: vault.Anchor{Seq: rng.Uint64(), Block: uint64(rng.IntN(1 << 20)), Tx: randomHash(rng).Hex()},
		Mtime:  randomInt(rng), Size: randomInt(rng), HasBody: rng.IntN(2) == 0}
}

func randomStagedRec(rng *rand.Rand) stagedRec {
	st := stagedRec{Del: rng.IntN(2) == 0, Row: randomRow(rng), Mtime: randomInt(rng), Held: []string{"", "not UTF-8"}[rng.IntN(2)],
		Base: randomHash(rng), At: randomInt(rng), Size: randomInt(rng), RawBody: rng.IntN(2) == 0}
	if rng.IntN(2) == 0 {
		leaf := randomHash(rng)
		st.leaf = &leaf
	}
	if st.RawBody && rng.IntN(2) == 0 {
		st.Pieces = 1 + rng.IntN(1<<16)
	}
	return st
}

func randomHistRec(rng *rand.Rand) histRec {
	h := histRec{Anchor: vault.Anchor{Seq: rng.Uint64(), Block: rng.Uint64(), Tx: randomHash(rng).Hex()}, Mtime: randomInt(rng)}
	if rng.IntN(4) > 0 {
		r := randomRow(rng)
		h.Row = &r
	}
	return h
}

func randomAttrRec(rng *rand.Rand) attrRec {
	a := attrRec{HasPerm: rng.IntN(2) == 0, Perm: []uint32{0, 0o644, 0o7777, 1<<32 - 1}[rng.IntN(4)], Chmod: rng.IntN(2) == 0,
		HasTimes: rng.IntN(2) == 0, Ctime: randomInt(rng)}
	if rng.IntN(2) == 0 {
		a.Mtime, a.Atime, a.Base = randomInt(rng), randomInt(rng), randomInt(rng)
	}
	if rng.IntN(3) == 0 {
		a.BaseLeaf = randomHash(rng)
	}
	return a
}

// TestRecordsRoundTrip: a mirror, staged or history record in the binary layout reads back field for
// field, whatever its strings and body hold.
func TestRecordsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		m := randomMirrorRec(rng)
		var mb mirrorRec
		if err := decodeRecord(encodeRecord(&m), &mb); err != nil || !reflect.DeepEqual(m, mb) {
			t.Fatalf("mirror record %+v read back as %+v %v", m, mb, err)
		}
		st := randomStagedRec(rng)
		var sb stagedRec
		if err := decodeRecord(encodeRecord(&st), &sb); err != nil || !reflect.DeepEqual(st, sb) {
			t.Fatalf("staged record %+v read back as %+v %v", st, sb, err)
		}
		h := randomHistRec(rng)
		var hb histRec
		if err := decodeRecord(encodeRecord(&h), &hb); err != nil || !reflect.DeepEqual(h, hb) {
			t.Fatalf("history record %+v read back as %+v %v", h, hb, err)
		}
		a := randomAttrRec(rng)
		var ab attrRec
		if err := decodeRecord(encodeRecord(&a), &ab); err != nil || ab != a {
			t.Fatalf("attribute record %+v read back as %+v %v", a, ab, err)
		}
	}
}

// TestRecordsReadTheJSONLayout: a record stored as JSON, as layout 3 stored it, reads through
// the same decoder as before.
func TestRecordsReadTheJSONLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 500; i++ {
		st := randomStagedRec(rng)
		st.leaf = nil // hashed from the body when read, not stored in JSON
		b, err := json.Marshal(&st)
		if err != nil {
			t.Fatal(err)
		}
		var sb stagedRec
		if err := decodeRecord(b, &sb); err != nil || !reflect.DeepEqual(st, sb) {
			t.Fatalf("staged record %+v read from JSON as %+v %v", st, sb, err)
		}
		m := randomMirrorRec(rng)
		m.Row = seal.Row{Tier: seal.TierEntity, Category: cat("person"), Key: "ann", Status: cat("active"), Body: seal.BodyString("b")}
		if b, err = json.Marshal(&m); err != nil {
			t.Fatal(err)
		}
		var mb mirrorRec
		if err := decodeRecord(b, &mb); err != nil || !reflect.DeepEqual(m, mb) {
			t.Fatalf("mirror record %+v read from JSON as %+v %v", m, mb, err)
		}
		h := randomHistRec(rng)
		if h.Row != nil {
			h.Row = &m.Row
		}
		if b, err = json.Marshal(&h); err != nil {
			t.Fatal(err)
		}
		var hb histRec
		if err := decodeRecord(b, &hb); err != nil || !reflect.DeepEqual(h, hb) {
			t.Fatalf("history record %+v read from JSON as %+v %v", h, hb, err)
		}
		a := randomAttrRec(rng)
		if b, err = json.Marshal(&a); err != nil {
			t.Fatal(err)
		}
		var ab attrRec
		if err := decodeRecord(b, &ab); err != nil || ab != a {
			t.Fatalf("attribute record %+v read from JSON as %+v %v", a, ab, err)
		}
	}
}

// TestRecordsRefuseBadBytes: a binary record cut short anywhere, with a byte after its end, or
// with flags this code does not know, is an error, never a record half read.
func TestRecordsRefuseBadBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	st := randomStagedRec(rng)
	st.Row.Body = seal.BodyString("body")
	b := encodeRecord(&st)
	for n := 1; n < len(b); n++ {
		var got stagedRec
		if err := decodeRecord(b[:n], &got); !errors.Is(err, errTruncated) {
			t.Fatalf("cut at %d of %d: %v, want %v", n, len(b), err, errTruncated)
		}
	}
	var got stagedRec
	if err := decodeRecord(append(bytes.Clone(b), 0), &got); !errors.Is(err, errTrailing) {
		t.Fatalf("a byte after the end: %v", err)
	}
	flags := bytes.Clone(b)
	flags[1] |= 1 << 4
	if err := decodeRecord(flags, &got); !errors.Is(err, errUnknownFlags) {
		t.Fatalf("an unknown staged flag: %v", err)
	}
	// a body in no pieces, or in more than a piece's two-byte number can count
	for _, pieces := range []uint64{0, 1<<16 + 1} {
		bad := stagedRec{RawBody: true, Pieces: 1}
		enc := encodeRecord(&bad)
		at := bytes.LastIndexByte(enc, 1) // the count, the record's last byte
		if at != len(enc)-1 {
			t.Fatalf("the piece count is not the last byte of %x", enc)
		}
		enc = binary.AppendUvarint(enc[:at], pieces)
		if err := decodeRecord(enc, &got); !errors.Is(err, errOutOfRange) {
			t.Fatalf("a body in %d pieces: %v", pieces, err)
		}
	}
	// a row whose presence bits (two bytes: 512) name a field after the body
	unknown := append([]byte{recBinary, 0, 5, 's', 't', 'a', 't', 'e', 1, 'k', 0x80, 0x04, 0, 0}, make([]byte, 32+2)...)
	if err := decodeRecord(unknown, &got); !errors.Is(err, errUnknownFlags) {
		t.Fatalf("an unknown field of a row: %v", err)
	}
	a := attrRec{HasPerm: true, Perm: 0o644, Ctime: 1, Mtime: 2}
	ab := encodeRecord(&a)
	for n := 1; n < len(ab); n++ {
		var got attrRec
		if err := decodeRecord(ab[:n], &got); !errors.Is(err, errTruncated) {
			t.Fatalf("attribute record cut at %d of %d: %v, want %v", n, len(ab), err, errTruncated)
		}
	}
	var agot attrRec
	if err := decodeRecord([]byte{recBinary, 1 << 4, 0, 0}, &agot); !errors.Is(err, errUnknownFlags) {
		t.Fatalf("an unknown attribute flag: %v", err)
	}
	if err := decodeRecord([]byte{recBinary, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0}, &agot); !errors.Is(err, errOutOfRange) {
		t.Fatalf("a permission past 32 bits: %v", err)
	}
	m := mirrorRec{Row: seal.Row{Tier: "state", Key: "k"}}
	mb := encodeRecord(&m)
	mb[len(mb)-1] = 2
	var mgot mirrorRec
	if err := decodeRecord(mb, &mgot); !errors.Is(err, errNotBool) {
		t.Fatalf("has_body 2: %v", err)
	}
}

// FuzzDecodeRecord: no input makes the decoder panic, and what it accepts is stored again as
// a record that reads back the same.
func FuzzDecodeRecord(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 8; i++ {
		m, st, h, a := randomMirrorRec(rng), randomStagedRec(rng), randomHistRec(rng), randomAttrRec(rng)
		f.Add(encodeRecord(&m))
		f.Add(encodeRecord(&st))
		f.Add(encodeRecord(&h))
		f.Add(encodeRecord(&a))
	}
	f.Add([]byte(`{"row":{"tier":"state","key":"k"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m mirrorRec
		if decodeRecord(b, &m) == nil && b[0] == recBinary {
			var again mirrorRec
			if err := decodeRecord(encodeRecord(&m), &again); err != nil || !reflect.DeepEqual(m, again) {
				t.Fatalf("mirror record %+v stored again reads %+v %v", m, again, err)
			}
		}
		var st stagedRec
		if decodeRecord(b, &st) == nil && b[0] == recBinary {
			var again stagedRec
			if err := decodeRecord(encodeRecord(&st), &again); err != nil || !reflect.DeepEqual(st, again) {
				t.Fatalf("staged record %+v stored again reads %+v %v", st, again, err)
			}
		}
		var h histRec
		if decodeRecord(b, &h) == nil && b[0] == recBinary {
			var again histRec
			if err := decodeRecord(encodeRecord(&h), &again); err != nil || !reflect.DeepEqual(h, again) {
				t.Fatalf("history record %+v stored again reads %+v %v", h, again, err)
			}
		}
		var a attrRec
		if decodeRecord(b, &a) == nil && b[0] == recBinary {
			var again attrRec
			if err := decodeRecord(encodeRecord(&a), &again); err != nil || again != a {
				t.Fatalf("attribute record %+v stored again reads %+v %v", a, again, err)
			}
		}
	})
}

// TestLayout3Opens: a database of layout 3, its mirror and staged records JSON, opens at
// the current layout without a rewrite of them; every row reads back, and a row written after is stored in the
// binary layout beside the JSON ones.
func TestLayout3Opens(t *testing.T) {
	dir := t.TempDir()
	db, err := openBadger(dir)
	if err != nil {
		t.Fatal(err)
	}
	mirrored := []seal.Row{
		{Tier: "state", Key: "goal", Body: seal.BodyString("to write it all down")},
		{Tier: "entity", Category: cat("person"), Key: "ann", Status: cat("active"), Body: seal.BodyString(`{"name":"ann"}`)},
		{Tier: "reference", Key: "null body", Meta: cat(`{"url":"x"}`)},
	}
	staged := []seal.Row{
		{Tier: "state", Key: "goal", Body: seal.BodyString("to write it all down, again")},
		{Tier: "state", Key: "binary", Body: seal.BodyString("\xff\xfe not text")},
	}
	anchor := vault.Anchor{Seq: 1, Block: 10, Tx: "0x01"}
	err = db.Update(func(txn *badger.Txn) error {
		for i := range mirrored {
			r := mirrored[i]
			m := newMirrorRec(r, common.Hash(seal.Leaf(&r)), anchor, 1)
			m.Row.Body = seal.Body{}
			if err := setJSON(txn, pMirror+r.ID(), &m); err != nil { // as layout 3 stored it
				return err
			}
			if err := setJSON(txn, string(historyKey(r.ID(), anchor.Block, anchor.Seq)), &histRec{Row: &r, Anchor: anchor, Mtime: 1}); err != nil {
				return err
			}
			if !r.Body.IsNull() {
				if err := txn.Set([]byte(pBody+r.ID()), r.Body.Bytes()); err != nil {
					return err
				}
			}
		}
		for i := range staged {
			r := staged[i]
			rec := stagedRec{Row: seal.Row{Tier: r.Tier, Key: r.Key}, Mtime: 2, At: 2, Size: int64(r.Body.Len()), RawBody: true}
			if err := setJSON(txn, pStaged+r.ID(), &rec); err != nil {
				return err
			}
			if err := txn.Set([]byte(pStagedBody+r.ID()), r.Body.Bytes()); err != nil {
				return err
			}
		}
		if err := setJSON(txn, kHead, &vault.Head{Seq: 1, Digest: common.Hash{1}, Block: 10}); err != nil {
			return err
		}
		return setJSON(txn, kFormat, 3)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	check := func(rows []seal.Row, isStaged bool) {
		t.Helper()
		for i := range rows {
			k := rowKey(&rows[i])
			v, err := s.Get(k)
			if err != nil || v == nil || v.Staged != isStaged || v.Leaf != seal.Leaf(&rows[i]) {
				t.Fatalf("%s: %+v %v", keyString(k), v, err)
			}
			if got, err := s.Content(k); err != nil || !bytes.Equal(got, RenderContent(&rows[i])) {
				t.Fatalf("%s reads %q %v", keyString(k), got, err)
			}
		}
	}
	check(mirrored[1:], false)
	check(staged, true)
	var format int
	if err := s.db.View(func(txn *badger.Txn) error { _, err := getJSON(txn, kFormat, &format); return err }); err != nil || format != storeFormat {
		t.Fatalf("layout %d %v, want %d", format, err, storeFormat)
	}
	if _, err := s.Write(vault.Key{Tier: "state", Key: "new"}, []byte("new row"), time.Unix(3, 0)); err != nil {
		t.Fatal(err)
	}
	err = s.db.View(func(txn *badger.Txn) error {
		return scanPrefix(txn, pStaged, func(k, v []byte) error {
			if binary := v[0] == recBinary; binary != strings.HasSuffix(string(k), "new") {
				t.Errorf("record %q: binary %v", k, binary)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	// epochs settle the staged rows of JSON records: this machine's own version of goal drops
	// its record; another machine's version of binary makes a conflict, whose copy holds the
	// body the JSON record kept apart
	state := map[string]seal.Row{}
	for _, r := range mirrored {
		state[r.ID()] = r
	}
	p2 := plaintextFor(state, 2, staged[:1], nil)
	if _, _, err := s.ApplyEpoch(vault.EpochInfo{Seq: 2, Block: 20, Digest: common.Hash{2}}, p2, ApplyOptions{Own: true}); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(rowKey(&staged[0])); err != nil || v.Staged || v.Leaf != seal.Leaf(&staged[0]) {
		t.Fatalf("goal after its own epoch: %+v %v", v, err)
	}
	theirs := seal.Row{Tier: "state", Key: "binary", Body: seal.BodyString("theirs")}
	p3 := plaintextFor(state, 3, []seal.Row{theirs}, nil)
	_, conflicts, err := s.ApplyEpoch(vault.EpochInfo{Seq: 3, Block: 30, Digest: common.Hash{3}}, p3, ApplyOptions{})
	if err != nil || len(conflicts) != 1 {
		t.Fatalf("binary's conflict: %+v %v", conflicts, err)
	}
	copyKey := vault.Key{Tier: "state", Key: conflicts[0].Copy, Local: true}
	if got, err := s.Content(copyKey); err != nil || !bytes.Equal(got, staged[1].Body.Bytes()) {
		t.Fatalf("the conflict's copy holds %q %v", got, err)
	}
	// history holds goal's version of layout 3 (JSON) and its own epoch's (binary)
	goal := rowKey(&mirrored[0])
	for block, want := range map[uint64]seal.Row{10: mirrored[0], 19: mirrored[0], 20: staged[0]} {
		if got, err := s.At(block).Content(goal); err != nil || !bytes.Equal(got, RenderContent(&want)) {
			t.Fatalf("goal at block %d: %q %v", block, got, err)
		}
	}
	if vs, err := s.Versions(goal); err != nil || len(vs) != 2 || vs[0].Anchor.Seq != 1 || vs[1].Anchor.Seq != 2 {
		t.Fatalf("goal's versions: %+v %v", vs, err)
	}
	s.Close()
}

// TestNewerLayoutRefused: a database a newer kintfs wrote is not opened, and the error says
// which layouts and what to do.
func TestNewerLayoutRefused(t *testing.T) {
	dir := t.TempDir()
	db, err := openBadger(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(txn *badger.Txn) error { return setJSON(txn, kFormat, storeFormat+1) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = OpenStore(dir)
	want := fmt.Sprintf("has layout %d, newer than this kintfs reads (%d): open it with the kintfs that wrote it, or a newer one", storeFormat+1, storeFormat)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("opened a layout-%d database: %v", storeFormat+1, err)
	}
}

// TestLayout4AttrsRewritten: the attribute records a database of layout 4 stored as JSON are
// rewritten in the binary layout when it opens, and every file keeps its mode and set times.
func TestLayout4AttrsRewritten(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 10))
	want := map[uint64]attrRec{}
	for ino := uint64(100); ino < 700; ino++ { // more than one batch of the rewrite
		want[ino] = randomAttrRec(rng)
	}
	err = s.db.Update(func(txn *badger.Txn) error {
		for ino, a := range want {
			b, err := json.Marshal(&a)
			if err != nil {
				return err
			}
			if err := txn.Set(attrKey(ino), b); err != nil {
				return err
			}
		}
		return setJSON(txn, kFormat, 4)
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = OpenStore(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for ino, a := range want {
		if got, ok := s.attrs.get(ino); !ok || got != a {
			t.Fatalf("ino %d: %+v %v, want %+v", ino, got, ok, a)
		}
	}
	n := 0
	err = s.db.View(func(txn *badger.Txn) error {
		return scanPrefix(txn, pAttr, func(k, v []byte) error {
			if v[0] != recBinary {
				t.Errorf("attribute record %x still JSON: %s", k, v)
			}
			n++
			return nil
		})
	})
	if err != nil || n != len(want) {
		t.Fatalf("%d attribute records, %v; want %d", n, err, len(want))
	}
	var format int
	if err := s.db.View(func(txn *badger.Txn) error { _, err := getJSON(txn, kFormat, &format); return err }); err != nil || format != storeFormat {
		t.Fatalf("layout %d %v, want %d", format, err, storeFormat)
	}
}

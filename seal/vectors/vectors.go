// Package vectors loads kint's public v1 test vectors into typed values for
// tests across kintfs. The file is read where it lives, beside the
// repository (../shared/vectors/kint-v1-vectors.json from the directory that
// holds go.mod); it is never copied into the project.
package vectors

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// FileName is the vectors file's name under shared/vectors.
const FileName = "kint-v1-vectors.json"

// Row has the shape of seal.Row, so a seal.Row(v) conversion works.
type Row struct {
	Tier      string
	Key       string
	Category  *string
	Status    *string
	Body      *string
	Meta      *string
	TS        *string
	Evaluated *string
	Acted     *string
	Forward   *string
	Extra     *string
}

// Deleted has the shape of seal.Deleted.
type Deleted struct {
	Tier     string
	Category *string
	Key      string
}

// KEK is one derived key-encryption key.
type KEK struct {
	Kind       byte
	Passphrase *string // the passphrase, or the salt passphrase of a salted signature
	KEK        [32]byte
	Tag        [16]byte
}

// Wrap is one wrap of the data key, with its inputs.
type Wrap struct {
	Label   string // "signature", "signature_salted" or "passphrase"
	Kind    byte
	KEK     [32]byte
	Tag     [16]byte
	Nonce   [12]byte
	Wrapped [48]byte
	Bytes   []byte // the 77-byte header encoding
}

// ForeignWrap is a wrap of a reserved kind that readers must carry along.
type ForeignWrap struct {
	Kind  byte
	Tag   [16]byte
	Bytes []byte
}

// JournalKeyInputs are the content fields of a journal event and its key.
type JournalKeyInputs struct {
	TS, Evaluated, Acted, Forward, Extra *string
	Key                                  string
}

// RowVector is a row with its canonical id and leaf.
type RowVector struct {
	Row   Row
	RowID string
	Leaf  [32]byte
}

// ProofStep is one level of a merkle proof.
type ProofStep struct {
	Sibling       [32]byte
	SiblingIsLeft bool
}

// Proof is a merkle proof of one row against RowsRoot.
type Proof struct {
	RowID string
	Leaf  [32]byte
	Steps []ProofStep
}

// Header is the decoded epoch header as the vectors list it.
type Header struct {
	Version  byte
	Flags    byte
	Nonce    [12]byte
	RowsRoot [32]byte
	DekID    [8]byte
	Bucket   uint32
	NWraps   int
	Length   int
}

// StateAfter is the full state after an epoch.
type StateAfter struct {
	SortedIDs []string
	Leaves    map[string][32]byte // by canonical id
	Root      [32]byte
	NRows     int
}

// Epoch is one sealed epoch of the demo vault.
type Epoch struct {
	Seq                 uint64
	Prev                common.Hash
	Flags               byte
	SnapshotFlagSet     bool
	SnapshotInPlaintext bool
	RowsRoot            [32]byte
	NRows               int
	Plaintext           []byte
	PlaintextUTF8       string
	Bucket              int
	AAD                 [32]byte
	Header              Header
	Blob                []byte
	Digest              common.Hash
	Deleted             []Deleted
	DeletedIDs          []string
	StateAfter          *StateAfter // only where the vectors give it

	// Read from the plaintext with encoding/json, independently of the
	// package under test.
	CreatedAt string
	Rows      []Row
}

// PushCalldata is the push(owner, space, prev, ct) call carrying epoch 1.
type PushCalldata struct {
	Selector [4]byte
	Data     []byte
	Owner    common.Address
	Space    common.Hash
	Prev     common.Hash
	CTKeccak common.Hash
	CTLength int
}

// Vectors is the whole file.
type Vectors struct {
	ChainID              uint64
	Owner                common.Address
	OwnerKeyNote         string
	Tenant               string
	Space                common.Hash
	Purpose              string
	TypedData            json.RawMessage
	CanonicalPayloadJSON string
	VaultDigest          common.Hash
	DeriveSignature      []byte
	KEKInfo              []byte
	KEKSignature         KEK
	KEKSignatureSalted   KEK
	KEKPassphrase        KEK
	ScryptN              int
	ScryptR              int
	ScryptP              int
	ScryptDKLen          int
	DEK                  [32]byte
	DEKID                [8]byte
	RecoveryCode         string
	Wraps                []Wrap
	ForeignWrap          ForeignWrap
	EmptyRoot            [32]byte
	JournalKeyInputs     JournalKeyInputs
	Rows                 []RowVector
	SortedIDs            []string
	RowsRoot             [32]byte
	Proofs               []Proof
	Epoch1               Epoch
	Epoch2               Epoch
	PushCalldata         PushCalldata
}

// Path finds the vectors file by walking up from the working directory to
// the repository root (the first directory with a go.mod).
func Path() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "..", "shared", "vectors", FileName)
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("vectors: repository root %s has no %s beside it: %w", dir, filepath.Join("..", "shared", "vectors", FileName), err)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("vectors: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Read loads and decodes the vectors file.
func Read() (*Vectors, error) {
	p, err := Path()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("vectors: %w", err)
	}
	return Parse(b)
}

// Load is Read for tests: it fails tb on any error. Every call returns a
// fresh copy, so tests may change what they get.
func Load(tb testing.TB) *Vectors {
	tb.Helper()
	v, err := Read()
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

type rawRow struct {
	Tier      string  `json:"tier"`
	Key       string  `json:"key"`
	Category  *string `json:"category"`
	Status    *string `json:"status"`
	Body      *string `json:"body"`
	Meta      *string `json:"meta"`
	TS        *string `json:"ts"`
	Evaluated *string `json:"evaluated"`
	Acted     *string `json:"acted"`
	Forward   *string `json:"forward"`
	Extra     *string `json:"extra"`
}

func (r rawRow) row() Row { return Row(r) }

type rawKEK struct {
	Kind       byte    `json:"kind"`
	Passphrase *string `json:"passphrase"`
	KEK        string  `json:"kek"`
	Tag        string  `json:"tag"`
}

type rawEpoch struct {
	Seq                 uint64   `json:"seq"`
	Prev                string   `json:"prev"`
	Flags               byte     `json:"flags"`
	SnapshotFlagSet     bool     `json:"snapshot_flag_set"`
	SnapshotInPlaintext bool     `json:"snapshot_in_plaintext"`
	RowsRoot            string   `json:"rows_root"`
	NRows               int      `json:"n_rows"`
	Plaintext           string   `json:"plaintext"`
	PlaintextUTF8       string   `json:"plaintext_utf8"`
	Bucket              int      `json:"bucket"`
	AAD                 string   `json:"aad"`
	Blob                string   `json:"blob"`
	Digest              string   `json:"digest"`
	Deleted             [][]any  `json:"deleted"`
	DeletedIDs          []string `json:"deleted_ids"`
	Header              struct {
		Version  byte   `json:"version"`
		Flags    byte   `json:"flags"`
		Nonce    string `json:"nonce"`
		RowsRoot string `json:"rows_root"`
		DekID    string `json:"dek_id"`
		Bucket   uint32 `json:"bucket"`
		NWraps   int    `json:"n_wraps"`
		Length   int    `json:"length"`
	} `json:"header"`
	StateAfter *struct {
		SortedIDs []string          `json:"sorted_ids"`
		Leaves    map[string]string `json:"leaves"`
		Root      string            `json:"root"`
		NRows     int               `json:"n_rows"`
	} `json:"state_after"`
}

type rawFile struct {
	ChainID              uint64          `json:"chain_id"`
	Owner                string          `json:"owner"`
	OwnerKeyNote         string          `json:"owner_key_note"`
	Tenant               string          `json:"tenant"`
	Space                string          `json:"space"`
	Purpose              string          `json:"purpose"`
	TypedData            json.RawMessage `json:"typed_data"`
	CanonicalPayloadJSON string          `json:"canonical_payload_json"`
	VaultDigest          string          `json:"vault_digest"`
	DeriveSignature      string          `json:"derive_signature"`
	KEKInfo              string          `json:"kek_info"`
	KEKs                 struct {
		Signature       rawKEK `json:"signature"`
		SignatureSalted rawKEK `json:"signature_salted"`
		Passphrase      rawKEK `json:"passphrase"`
	} `json:"keks"`
	Scrypt struct {
		N     int `json:"N"`
		R     int `json:"r"`
		P     int `json:"p"`
		DKLen int `json:"dkLen"`
	} `json:"scrypt"`
	DEK          string `json:"dek"`
	DEKID        string `json:"dek_id"`
	RecoveryCode string `json:"recovery_code"`
	Wraps        []struct {
		Label   string `json:"label"`
		Kind    byte   `json:"kind"`
		KEK     string `json:"kek"`
		Tag     string `json:"tag"`
		Nonce   string `json:"nonce"`
		Wrapped string `json:"wrapped"`
		Bytes   string `json:"bytes"`
	} `json:"wraps"`
	ForeignWrap struct {
		Kind  byte   `json:"kind"`
		Tag   string `json:"tag"`
		Bytes string `json:"bytes"`
	} `json:"foreign_wrap"`
	EmptyRoot        string `json:"empty_root"`
	JournalKeyInputs struct {
		TS        *string `json:"ts"`
		Evaluated *string `json:"evaluated"`
		Acted     *string `json:"acted"`
		Forward   *string `json:"forward"`
		Extra     *string `json:"extra"`
		Key       string  `json:"key"`
	} `json:"journal_key_inputs"`
	Rows []struct {
		Row   rawRow `json:"row"`
		RowID string `json:"row_id"`
		Leaf  string `json:"leaf"`
	} `json:"rows"`
	SortedIDs []string `json:"sorted_ids"`
	RowsRoot  string   `json:"rows_root"`
	Proofs    []struct {
		RowID string  `json:"row_id"`
		Leaf  string  `json:"leaf"`
		Proof [][]any `json:"proof"`
	} `json:"proofs"`
	Epoch1       rawEpoch `json:"epoch1"`
	Epoch2       rawEpoch `json:"epoch2"`
	PushCalldata struct {
		Selector string `json:"selector"`
		Data     string `json:"data"`
		Owner    string `json:"owner"`
		Space    string `json:"space"`
		Prev     string `json:"prev"`
		CTKeccak string `json:"ct_keccak"`
		CTLength int    `json:"ct_length"`
	} `json:"push_calldata"`
}

// decoder turns hex fields into bytes, keeping the first error.
type decoder struct{ err error }

func (d *decoder) bytes(field, s string, n int) []byte {
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err == nil && n >= 0 && len(b) != n {
		err = fmt.Errorf("%d bytes, want %d", len(b), n)
	}
	if err != nil {
		if d.err == nil {
			d.err = fmt.Errorf("vectors: %s: %w", field, err)
		}
		b = make([]byte, max(n, 0))
	}
	return b
}

func (d *decoder) b32(field, s string) (out [32]byte) { copy(out[:], d.bytes(field, s, 32)); return }
func (d *decoder) b16(field, s string) (out [16]byte) { copy(out[:], d.bytes(field, s, 16)); return }
func (d *decoder) b12(field, s string) (out [12]byte) { copy(out[:], d.bytes(field, s, 12)); return }
func (d *decoder) b8(field, s string) (out [8]byte)   { copy(out[:], d.bytes(field, s, 8)); return }

func (d *decoder) address(field, s string) common.Address {
	if !common.IsHexAddress(s) && d.err == nil {
		d.err = fmt.Errorf("vectors: %s: not an address", field)
	}
	return common.HexToAddress(s)
}

func (d *decoder) kek(field string, r rawKEK) KEK {
	return KEK{Kind: r.Kind, Passphrase: r.Passphrase, KEK: d.b32(field+".kek", r.KEK), Tag: d.b16(field+".tag", r.Tag)}
}

func (d *decoder) deleted(field string, raw [][]any) []Deleted {
	out := make([]Deleted, 0, len(raw))
	for _, t := range raw {
		var del Deleted
		ok := len(t) == 3
		if ok {
			del.Tier, ok = t[0].(string)
		}
		if ok && t[1] != nil {
			var c string
			c, ok = t[1].(string)
			del.Category = &c
		}
		if ok {
			del.Key, ok = t[2].(string)
		}
		if !ok && d.err == nil {
			d.err = fmt.Errorf("vectors: %s: malformed entry %v", field, t)
		}
		out = append(out, del)
	}
	return out
}

func (d *decoder) epoch(field string, r rawEpoch) Epoch {
	e := Epoch{
		Seq:                 r.Seq,
		Prev:                d.b32(field+".prev", r.Prev),
		Flags:               r.Flags,
		SnapshotFlagSet:     r.SnapshotFlagSet,
		SnapshotInPlaintext: r.SnapshotInPlaintext,
		RowsRoot:            d.b32(field+".rows_root", r.RowsRoot),
		NRows:               r.NRows,
		Plaintext:           d.bytes(field+".plaintext", r.Plaintext, -1),
		PlaintextUTF8:       r.PlaintextUTF8,
		Bucket:              r.Bucket,
		AAD:                 d.b32(field+".aad", r.AAD),
		Blob:                d.bytes(field+".blob", r.Blob, -1),
		Digest:              d.b32(field+".digest", r.Digest),
		Deleted:             d.deleted(field+".deleted", r.Deleted),
		DeletedIDs:          r.DeletedIDs,
		Header: Header{
			Version:  r.Header.Version,
			Flags:    r.Header.Flags,
			Nonce:    d.b12(field+".header.nonce", r.Header.Nonce),
			RowsRoot: d.b32(field+".header.rows_root", r.Header.RowsRoot),
			DekID:    d.b8(field+".header.dek_id", r.Header.DekID),
			Bucket:   r.Header.Bucket,
			NWraps:   r.Header.NWraps,
			Length:   r.Header.Length,
		},
	}
	if sa := r.StateAfter; sa != nil {
		e.StateAfter = &StateAfter{SortedIDs: sa.SortedIDs, Leaves: map[string][32]byte{}, Root: d.b32(field+".state_after.root", sa.Root), NRows: sa.NRows}
		for id, leaf := range sa.Leaves {
			e.StateAfter.Leaves[id] = d.b32(field+".state_after.leaves", leaf)
		}
	}
	var pt struct {
		CreatedAt string   `json:"created_at"`
		Rows      []rawRow `json:"rows"`
	}
	if err := json.Unmarshal([]byte(r.PlaintextUTF8), &pt); err != nil && d.err == nil {
		d.err = fmt.Errorf("vectors: %s.plaintext_utf8: %w", field, err)
	}
	e.CreatedAt = pt.CreatedAt
	for _, rr := range pt.Rows {
		e.Rows = append(e.Rows, rr.row())
	}
	return e
}

// Parse decodes the contents of the vectors file.
func Parse(b []byte) (*Vectors, error) {
	var r rawFile
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("vectors: %w", err)
	}
	d := &decoder{}
	v := &Vectors{
		ChainID:              r.ChainID,
		Owner:                d.address("owner", r.Owner),
		OwnerKeyNote:         r.OwnerKeyNote,
		Tenant:               r.Tenant,
		Space:                d.b32("space", r.Space),
		Purpose:              r.Purpose,
		TypedData:            r.TypedData,
		CanonicalPayloadJSON: r.CanonicalPayloadJSON,
		VaultDigest:          d.b32("vault_digest", r.VaultDigest),
		DeriveSignature:      d.bytes("derive_signature", r.DeriveSignature, 65),
		KEKInfo:              d.bytes("kek_info", r.KEKInfo, -1),
		KEKSignature:         d.kek("keks.signature", r.KEKs.Signature),
		KEKSignatureSalted:   d.kek("keks.signature_salted", r.KEKs.SignatureSalted),
		KEKPassphrase:        d.kek("keks.passphrase", r.KEKs.Passphrase),
		ScryptN:              r.Scrypt.N,
		ScryptR:              r.Scrypt.R,
		ScryptP:              r.Scrypt.P,
		ScryptDKLen:          r.Scrypt.DKLen,
		DEK:                  d.b32("dek", r.DEK),
		DEKID:                d.b8("dek_id", r.DEKID),
		RecoveryCode:         r.RecoveryCode,
		ForeignWrap: ForeignWrap{
			Kind:  r.ForeignWrap.Kind,
			Tag:   d.b16("foreign_wrap.tag", r.ForeignWrap.Tag),
			Bytes: d.bytes("foreign_wrap.bytes", r.ForeignWrap.Bytes, 77),
		},
		EmptyRoot: d.b32("empty_root", r.EmptyRoot),
		JournalKeyInputs: JournalKeyInputs{
			TS: r.JournalKeyInputs.TS, Evaluated: r.JournalKeyInputs.Evaluated, Acted: r.JournalKeyInputs.Acted,
			Forward: r.JournalKeyInputs.Forward, Extra: r.JournalKeyInputs.Extra, Key: r.JournalKeyInputs.Key,
		},
		SortedIDs: r.SortedIDs,
		RowsRoot:  d.b32("rows_root", r.RowsRoot),
		Epoch1:    d.epoch("epoch1", r.Epoch1),
		Epoch2:    d.epoch("epoch2", r.Epoch2),
		PushCalldata: PushCalldata{
			Data:     d.bytes("push_calldata.data", r.PushCalldata.Data, -1),
			Owner:    d.address("push_calldata.owner", r.PushCalldata.Owner),
			Space:    d.b32("push_calldata.space", r.PushCalldata.Space),
			Prev:     d.b32("push_calldata.prev", r.PushCalldata.Prev),
			CTKeccak: d.b32("push_calldata.ct_keccak", r.PushCalldata.CTKeccak),
			CTLength: r.PushCalldata.CTLength,
		},
	}
	copy(v.PushCalldata.Selector[:], d.bytes("push_calldata.selector", r.PushCalldata.Selector, 4))
	for _, w := range r.Wraps {
		v.Wraps = append(v.Wraps, Wrap{
			Label:   w.Label,
			Kind:    w.Kind,
			KEK:     d.b32("wraps.kek", w.KEK),
			Tag:     d.b16("wraps.tag", w.Tag),
			Nonce:   d.b12("wraps.nonce", w.Nonce),
			Wrapped: [48]byte(d.bytes("wraps.wrapped", w.Wrapped, 48)),
			Bytes:   d.bytes("wraps.bytes", w.Bytes, 77),
		})
	}
	for _, rv := range r.Rows {
		v.Rows = append(v.Rows, RowVector{Row: rv.Row.row(), RowID: rv.RowID, Leaf: d.b32("rows.leaf", rv.Leaf)})
	}
	for _, p := range r.Proofs {
		pr := Proof{RowID: p.RowID, Leaf: d.b32("proofs.leaf", p.Leaf)}
		for _, step := range p.Proof {
			var s ProofStep
			hexSib, ok1 := "", false
			left, ok2 := false, false
			if len(step) == 2 {
				hexSib, ok1 = step[0].(string)
				left, ok2 = step[1].(bool)
			}
			if !(ok1 && ok2) && d.err == nil {
				d.err = fmt.Errorf("vectors: proofs: malformed step %v", step)
			}
			s.Sibling = d.b32("proofs.sibling", hexSib)
			s.SiblingIsLeft = left
			pr.Steps = append(pr.Steps, s)
		}
		v.Proofs = append(v.Proofs, pr)
	}
	if d.err != nil {
		return nil, d.err
	}
	return v, nil
}

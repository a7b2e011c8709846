package seal

import (
	"testing"

	"github.com/ethereum/go-ethereum/crypto"

	"kintfs/seal/vectors"
)

func sortedVectorLeaves(v *vectors.Vectors) ([]string, [][32]byte) {
	rows := vectorRows(v)
	SortByID(rows)
	ids := make([]string, len(rows))
	leaves := make([][32]byte, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID()
		leaves[i] = Leaf(&rows[i])
	}
	return ids, leaves
}

func TestProofVectors(t *testing.T) {
	v := vectors.Load(t)
	ids, leaves := sortedVectorLeaves(v)
	for _, p := range v.Proofs {
		idx := -1
		for i, id := range ids {
			if id == p.RowID {
				idx = i
			}
		}
		if idx < 0 || leaves[idx] != p.Leaf {
			t.Fatalf("row %q not found with its leaf", p.RowID)
		}
		got := MerkleProof(leaves, idx)
		if len(got) != len(p.Steps) {
			t.Fatalf("%q: proof has %d steps, want %d", p.RowID, len(got), len(p.Steps))
		}
		want := make([]ProofStep, len(p.Steps))
		for i, s := range p.Steps {
			want[i] = ProofStep(s)
			if got[i] != want[i] {
				t.Errorf("%q step %d = %x/%v, want %x/%v", p.RowID, i, got[i].Sibling, got[i].SiblingIsLeft, s.Sibling, s.SiblingIsLeft)
			}
		}
		if !VerifyProof(p.Leaf, want, v.RowsRoot) {
			t.Errorf("%q: vector proof does not verify", p.RowID)
		}
		bad := append([]ProofStep(nil), want...)
		bad[0].SiblingIsLeft = !bad[0].SiblingIsLeft
		if VerifyProof(p.Leaf, bad, v.RowsRoot) {
			t.Errorf("%q: proof with a flipped side verifies", p.RowID)
		}
		if VerifyProof(leaves[(idx+1)%len(leaves)], want, v.RowsRoot) {
			t.Errorf("%q: proof verifies another leaf", p.RowID)
		}
	}
}

func TestProofEverySize(t *testing.T) {
	for n := 1; n <= 33; n++ {
		leaves := make([][32]byte, n)
		for i := range leaves {
			leaves[i] = crypto.Keccak256Hash([]byte{byte(i), byte(n)})
		}
		root := MerkleRoot(leaves)
		for i := range leaves {
			if !VerifyProof(leaves[i], MerkleProof(leaves, i), root) {
				t.Fatalf("n=%d i=%d: proof does not verify", n, i)
			}
		}
	}
	one := [][32]byte{crypto.Keccak256Hash([]byte("x"))}
	if MerkleRoot(one) != one[0] || len(MerkleProof(one, 0)) != 0 {
		t.Error("a single leaf is its own root with an empty proof")
	}
	if MerkleProof(one, 1) != nil || MerkleProof(one, -1) != nil {
		t.Error("out of range index gives a proof")
	}
	// Odd last node carried up: root of three is H(H(a,b), c).
	a, b, c := crypto.Keccak256Hash([]byte("a")), crypto.Keccak256Hash([]byte("b")), crypto.Keccak256Hash([]byte("c"))
	ab := crypto.Keccak256Hash(a[:], b[:])
	if got, want := MerkleRoot([][32]byte{a, b, c}), crypto.Keccak256Hash(ab[:], c[:]); got != want {
		t.Errorf("root of three = %x, want %x", got, want)
	}
}

func TestMerkleBuilderMatchesMerkleRoot(t *testing.T) {
	var b MerkleBuilder
	if b.Root() != EmptyRoot() {
		t.Fatal("an empty builder is not the empty root")
	}
	var leaves [][32]byte
	for n := 1; n <= 600; n++ {
		leaf := crypto.Keccak256Hash([]byte{byte(n), byte(n >> 8)})
		leaves = append(leaves, leaf)
		b.Add(leaf)
		if got, want := b.Root(), MerkleRoot(leaves); got != want {
			t.Fatalf("n=%d: builder root %x, MerkleRoot %x", n, got[:6], want[:6])
		}
	}
}

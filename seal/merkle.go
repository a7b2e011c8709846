package seal

import "github.com/ethereum/go-ethereum/crypto"

// EmptyRoot is the rows_root of an empty state: keccak256("kint-empty-v1").
func EmptyRoot() [32]byte { return crypto.Keccak256Hash([]byte("kint-empty-v1")) }

func hashPair(left, right *[32]byte) [32]byte {
	var buf [64]byte
	copy(buf[:32], left[:])
	copy(buf[32:], right[:])
	return crypto.Keccak256Hash(buf[:])
}

// MerkleRoot folds leaves, already in canonical-id order, pairwise with
// keccak256(left || right); an odd last node moves up unchanged.
func MerkleRoot(leaves [][32]byte) [32]byte {
	if len(leaves) == 0 {
		return EmptyRoot()
	}
	level := make([][32]byte, len(leaves))
	copy(level, leaves)
	for len(level) > 1 {
		next := level[:0]
		for i := 0; i < len(level); i += 2 {
			if i+1 == len(level) {
				next = append(next, level[i])
			} else {
				next = append(next, hashPair(&level[i], &level[i+1]))
			}
		}
		level = next
	}
	return level[0]
}

// PairHasher hashes merkle node pairs, keccak256(left || right), reusing one keccak state:
// a state of a hundred thousand rows hashes as many pairs.
type PairHasher struct {
	kh  crypto.KeccakState
	buf [64]byte
}

// Pair is the parent of left and right.
func (h *PairHasher) Pair(left, right *[32]byte) [32]byte {
	if h.kh == nil {
		h.kh = crypto.NewKeccakState()
	}
	copy(h.buf[:32], left[:])
	copy(h.buf[32:], right[:])
	return crypto.HashData(h.kh, h.buf[:])
}

// MerkleBuilder computes MerkleRoot of leaves added one at a time, in order, keeping only one
// node per level: a state of any size is hashed without holding its leaves.
type MerkleBuilder struct {
	// stack holds the roots of complete subtrees, largest first; heights strictly decrease.
	stack []merkleNode
	h     PairHasher
}

type merkleNode struct {
	hash   [32]byte
	height int
}

// Add appends the next leaf.
func (b *MerkleBuilder) Add(leaf [32]byte) { b.AddSubtree(leaf, 0) }

// AddSubtree appends the root of a complete subtree of 2^height leaves, as if its leaves were
// added one by one. It must sit where such a subtree can: after a multiple of 2^height leaves.
func (b *MerkleBuilder) AddSubtree(hash [32]byte, height int) {
	n := merkleNode{hash: hash, height: height}
	for len(b.stack) > 0 && b.stack[len(b.stack)-1].height == n.height {
		top := b.stack[len(b.stack)-1]
		b.stack = b.stack[:len(b.stack)-1]
		n = merkleNode{hash: b.h.Pair(&top.hash, &n.hash), height: n.height + 1}
	}
	b.stack = append(b.stack, n)
}

// Root is MerkleRoot of the leaves added so far. The complete subtrees left over fold from the
// right: that is where MerkleRoot's odd last nodes, moved up level by level, meet them.
func (b *MerkleBuilder) Root() [32]byte {
	if len(b.stack) == 0 {
		return EmptyRoot()
	}
	acc := b.stack[len(b.stack)-1].hash
	for i := len(b.stack) - 2; i >= 0; i-- {
		acc = b.h.Pair(&b.stack[i].hash, &acc)
	}
	return acc
}

// StateRoot is the rows_root of a full state given in any order.
func StateRoot(rows []Row) [32]byte {
	sorted := make([]Row, len(rows))
	copy(sorted, rows)
	SortByID(sorted)
	leaves := make([][32]byte, len(sorted))
	for i := range sorted {
		leaves[i] = Leaf(&sorted[i])
	}
	return MerkleRoot(leaves)
}

// ProofStep is one level of a merkle path.
type ProofStep struct {
	Sibling       [32]byte
	SiblingIsLeft bool
}

// MerkleProof is the path from leaves[index] to the root, bottom up. A level
// where the node is the odd one out contributes no step. It returns nil for
// an index out of range.
func MerkleProof(leaves [][32]byte, index int) []ProofStep {
	if index < 0 || index >= len(leaves) {
		return nil
	}
	level := make([][32]byte, len(leaves))
	copy(level, leaves)
	proof := []ProofStep{}
	for len(level) > 1 {
		if sib := index ^ 1; sib < len(level) {
			proof = append(proof, ProofStep{Sibling: level[sib], SiblingIsLeft: index&1 == 1})
		}
		next := level[:0]
		for i := 0; i < len(level); i += 2 {
			if i+1 == len(level) {
				next = append(next, level[i])
			} else {
				next = append(next, hashPair(&level[i], &level[i+1]))
			}
		}
		level = next
		index /= 2
	}
	return proof
}

// VerifyProof reports whether leaf with proof hashes up to root.
func VerifyProof(leaf [32]byte, proof []ProofStep, root [32]byte) bool {
	node := leaf
	for i := range proof {
		if proof[i].SiblingIsLeft {
			node = hashPair(&proof[i].Sibling, &node)
		} else {
			node = hashPair(&node, &proof[i].Sibling)
		}
	}
	return node == root
}

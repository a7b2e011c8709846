// Package store is the local store under the sync engine: the badger state database of one
// vault and the in-memory index of its live tree. It holds the staged rows, the mirror of the
// anchored state with its leaves and merkle root, the history index and its views at a block,
// the local-only files and attributes, inode numbers, trash, the epoch records, the push
// journal's entries, gaps, conflicts and the other status records, and the apply of an opened
// epoch (in bounded batches under a crash marker when it is large). Everything here is local:
// nothing waits on the chain.
//
// It imports seal for the format and replica/vault for the shared vocabulary (keys,
// versions, the tree reader, the errors), and no other package of the project: no chain, no
// keys, no KINT_HOME. replica, the engine, is its only user; fs reaches it through replica.
package store

// Package vault is the vocabulary the local store, the sync engine, the mount and the CLI
// share: the key of a file, a version of a row, a directory entry, the tree reader, where an
// epoch stands, the local attributes of a file, the vault models and the errors every layer
// checks with errors.Is. It holds no state and does no I/O.
//
// It imports seal for the row and its tiers, and no other package of the project, so each
// layer names these values the same way without reaching through another.
package vault

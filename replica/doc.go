// Package replica is the sync engine under the mount: it seals and pushes the staged changes
// as epochs (with a durable push journal between prepare, send and receipt, and its recovery
// after a crash), walks, fetches, verifies and applies the chain's epochs, rebases what a pull
// overtakes, backfills history, follows the chain's new epochs, runs the mount's background
// worker, and inits, rekeys, rebuilds from the epoch cache and discards a vault's local state.
//
// It keeps no state of its own on disk: the local store is replica/store, reached only
// through its exported API, and only by Replica's own methods (the store is a private field):
// the reads in tree.go, every change in readonly.go, where a read-only replica refuses it. A
// method added to the store reaches the mount or the CLI only when one is written here. The
// keys, versions, tree reader and errors that the store, the engine, fs and the CLI all name
// are in replica/vault. It imports seal for the format, chain for its types and the RPC
// client, replica/vault for that vocabulary, replica/store for the badger state and
// replica/homedir for KINT_HOME, the vault config, keys and the epoch cache. The chain is
// reached only through the Chain interface, so its tests run on replica/memchain; fs imports
// replica, never the other way.
package replica

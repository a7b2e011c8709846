// Package replica is the sync engine under the mount: it stages changes in the local store,
// seals and pushes them as epochs (with a durable push journal between prepare, send and
// receipt), walks, fetches, verifies and applies the chain's epochs, rebases what a pull
// overtakes, backfills history, and runs the mount's background worker.
//
// It imports seal for the format, chain for its types and the RPC client, and
// replica/homedir for KINT_HOME, the vault config and keys. The chain is reached only
// through the Chain interface, so its tests run on replica/memchain; fs imports replica,
// never the other way.
package replica

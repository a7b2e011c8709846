// Package seal implements kint's v1 epoch format: the canonical plaintext
// JSON, row leaves and the rows_root merkle tree, the sealed envelope
// (gzip, bucket padding, AES-256-GCM, header and wraps), key derivation and
// recovery codes, and the splitting of large diffs into epochs.
//
// Everything here is pure: no I/O, no clocks, no randomness of its own.
// Nonces and times come in as parameters so that every output can be
// reproduced byte for byte against kint's public test vectors.
package seal

package seal

import "errors"

// Sentinel errors. Callers match them with errors.Is; the functions here wrap
// them with context where it helps.
var (
	ErrHeaderShort      = errors.New("epoch header is truncated")
	ErrHeaderVersion    = errors.New("epoch header has an unknown version")
	ErrCiphertextLength = errors.New("ciphertext length does not match bucket + 16")
	ErrNoWrap           = errors.New("no wrap for this key in the epoch header")
	ErrDekIDMismatch    = errors.New("dek_id mismatch: wrong data key for this epoch")
	ErrTagMismatch      = errors.New("aes-gcm authentication failed")
	ErrPayloadLength    = errors.New("padded payload length prefix is out of bounds")
	ErrPlaintext        = errors.New("epoch plaintext is malformed")
	ErrSeqMismatch      = errors.New("plaintext seq does not match the chain")
	ErrSpaceMismatch    = errors.New("plaintext space does not match the chain")
	ErrPrevMismatch     = errors.New("plaintext prev does not match the chain")
	ErrRootMismatch     = errors.New("plaintext rows_root does not match the header")
	ErrSnapshotDisagree = errors.New("snapshot flag disagrees between header and plaintext")
	ErrTooLarge         = errors.New("compressed epoch does not fit the largest bucket")
	ErrSnapshotTooLarge = errors.New("snapshot does not fit one epoch")
	ErrSignatureOwner   = errors.New("signature does not recover to the vault owner")
	ErrEmptyPassphrase  = errors.New("passphrase is empty")
	ErrRecoveryChecksum = errors.New("recovery code checksum failed (typo?)")
	ErrRecoveryFormat   = errors.New("recovery code is not 55 base32 characters")
	ErrInvalidUTF8      = errors.New("row field is not valid utf-8")
)

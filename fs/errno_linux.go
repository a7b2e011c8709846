package fs

import "syscall"

// The errnos a ctl command answers a key problem with; Linux has a family for them.
const (
	errnoKeyMissing  = syscall.ENOKEY
	errnoKeyExpired  = syscall.EKEYEXPIRED
	errnoKeyRejected = syscall.EKEYREJECTED
)

// errnoReverted is a ctl command's answer to a transaction the chain reverted.
const errnoReverted = syscall.EREMOTEIO

package fs

import "syscall"

// The errnos a ctl command answers a key problem with; Linux has a family for them.
const (
	errnoKeyMissing  = syscall.ENOKEY
	errnoKeyExpired  = syscall.EKEYEXPIRED
	errnoKeyRejected = syscall.EKEYREJECTED
)

package fs

import "syscall"

// The errnos a ctl command answers a key problem with. macOS has no key errnos; its
// authentication ones say the same to a script.
const (
	errnoKeyMissing  = syscall.ENEEDAUTH
	errnoKeyExpired  = syscall.EAUTH
	errnoKeyRejected = syscall.EPERM
)

// errnoReverted is a ctl command's answer to a transaction the chain reverted.
const errnoReverted = syscall.EREMOTE

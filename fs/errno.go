package fs

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"kintfs/chain"
	"kintfs/replica"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
)

// errnos are the errors with an errno of their own, in the order they are asked for: the
// first that matches wins.
var errnos = []struct {
	match func(error) bool
	errno syscall.Errno
}{
	{is(vault.ErrNotFound), syscall.ENOENT},
	{is(vault.ErrExists), syscall.EEXIST},
	{is(vault.ErrNotEmpty), syscall.ENOTEMPTY},
	{is(vault.ErrReadOnly), syscall.EROFS},
	{is(vault.ErrNotPermitted), syscall.EPERM},
	{is(vault.ErrInvalid), syscall.EINVAL},
	{is(vault.ErrStagingFull), syscall.ENOSPC},
	{is(vault.ErrFileTooBig, vault.ErrValueTooLarge), syscall.EFBIG},
	{is(vault.ErrCrossTier), syscall.EXDEV},
	// The RPC cannot be reached (refused, or never answered): a ctl command can be tried
	// again later; not a fault, and not ENOTCONN, which says the mount died.
	{replica.Offline, syscall.EHOSTUNREACH},
	// What stops a ctl flush or pull, as the CLI's exit codes tell them apart.
	{is(replica.ErrGapOpen), syscall.EBADMSG}, // an epoch that cannot be applied: see gaps in status
	{is(replica.ErrChainMoved, replica.ErrFork), syscall.ESTALE},
	{replica.LyingRPC, syscall.EPROTO},
	{is(homedir.ErrKeyMissing), errnoKeyMissing},
	{is(homedir.ErrKeyExpired), errnoKeyExpired},
	{is(replica.ErrNotAuthorized, chain.ErrNotAuthorized, chain.ErrAuthorizationExpired, chain.ErrInsufficientFunds), errnoKeyRejected},
	{is(replica.ErrReverted, chain.ErrTxFailed, chain.ErrWouldRevert), errnoReverted},
	// the gas price is out of the range the cap allows: flush again later, or raise the cap
	{is(replica.ErrGasPriceCap), syscall.ERANGE},
	{is(errBadName, errUnknownCommand), syscall.EINVAL},
	{is(errNameTooLong), syscall.ENAMETOOLONG},
	// Only the mount's own context is ever canceled: the mount is going away.
	{is(context.Canceled), syscall.ECANCELED},
	{is(context.DeadlineExceeded), syscall.ETIMEDOUT},
}

// is matches an error that is one of targets.
func is(targets ...error) func(error) bool {
	return func(err error) bool {
		for _, t := range targets {
			if errors.Is(err, t) {
				return true
			}
		}
		return false
	}
}

// toErrno is the one place an error becomes an errno. It unwraps (go-fuse's own ToErrno does
// not, and would turn a wrapped replica error into ENOSYS). It reports whether the error is
// unexpected, which callers log: EIO is only ever a real fault.
func toErrno(err error) (errno syscall.Errno, unexpected bool) {
	if err == nil {
		return 0, false
	}
	for _, e := range errnos {
		if e.match(err) {
			return e.errno, false
		}
	}
	if en := syscall.Errno(0); errors.As(err, &en) && en != 0 {
		return en, false
	}
	return syscall.EIO, true
}

// fail maps err for the operation op on name under the node at, and logs it, once, when it is
// a real fault. The path is only worked out then.
func (f *mountFS) fail(op string, at *node, name string, err error) syscall.Errno {
	errno, unexpected := toErrno(err)
	switch {
	case unexpected:
		where := name
		if at != nil {
			where = at.where(name)
		}
		f.logf("error: %s %s: %v", op, where, err)
	case errno == syscall.EINVAL && op != "lookup" && !strings.HasPrefix(op, "ctl"):
		// a user acts on it: say what was refused, not the name or value (a key, a meta)
		f.logf("warn: %s: EINVAL: %s", op, einvalReason(err))
	case errno == syscall.EPERM && errors.Is(err, vault.ErrNotPermitted):
		// the rule and the way out, naming the tier but not the key or a value
		f.logf("warn: %s: EPERM: %s", op, strings.TrimPrefix(err.Error(), vault.ErrNotPermitted.Error()+": "))
	}
	return errno
}

// einvalReason says why a name or value was refused without quoting it.
func einvalReason(err error) string {
	switch {
	case errors.Is(err, errBadName):
		return "a name with a % that is not one of the escapes (%2F %25 %00 %2E)"
	case errors.Is(err, vault.ErrKeptInvalid):
		return err.Error() // names the local file that keeps what was written, never its content
	case errors.Is(err, vault.ErrInvalid):
		return "an invalid value (user.kint.status and user.kint.meta must be UTF-8, meta JSON; a journal event must be a JSON object of its fields)"
	}
	return "an invalid argument"
}

// logf writes one line to the mount's log, whose logger carries the "kintfs: " prefix.
func (f *mountFS) logf(format string, args ...any) {
	if f.log != nil {
		f.log.Printf(format, args...)
	}
}

// IsKeyErrno reports whether a ctl command's errno says the data key or session key is
// missing, expired or not authorized.
func IsKeyErrno(en syscall.Errno) bool {
	return en == errnoKeyMissing || en == errnoKeyExpired || en == errnoKeyRejected
}

// IsRevertErrno reports whether a ctl command's errno says the chain reverted a transaction.
func IsRevertErrno(en syscall.Errno) bool { return en == errnoReverted }

// ErrnoOf is the errno a ctl command answers err with (EIO for a fault kintfs did not foresee).
func ErrnoOf(err error) syscall.Errno {
	en, _ := toErrno(err)
	return en
}

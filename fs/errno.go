package fs

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"kintfs/replica"
	"kintfs/replica/homedir"
)

// toErrno is the one place an error becomes an errno. It unwraps (go-fuse's own ToErrno does
// not, and would turn a wrapped replica error into ENOSYS). It reports whether the error is
// unexpected, which callers log: EIO is only ever a real fault.
func toErrno(err error) (errno syscall.Errno, unexpected bool) {
	var en syscall.Errno
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, replica.ErrNotFound):
		return syscall.ENOENT, false
	case errors.Is(err, replica.ErrExists):
		return syscall.EEXIST, false
	case errors.Is(err, replica.ErrNotEmpty):
		return syscall.ENOTEMPTY, false
	case errors.Is(err, replica.ErrReadOnly):
		return syscall.EROFS, false
	case errors.Is(err, replica.ErrInvalid):
		return syscall.EINVAL, false
	case errors.Is(err, replica.ErrStagingFull):
		return syscall.ENOSPC, false
	case errors.Is(err, replica.ErrFileTooBig), errors.Is(err, replica.ErrValueTooLarge):
		return syscall.EFBIG, false
	case errors.Is(err, replica.ErrCrossTier):
		return syscall.EXDEV, false
	case replica.Offline(err):
		// No chain connection: a ctl command can be tried again later; not a fault.
		return syscall.ENOTCONN, false
	// What stops a ctl flush or pull, as the CLI's exit codes tell them apart.
	case errors.Is(err, replica.ErrGapOpen):
		return syscall.EBADMSG, false // an epoch that cannot be applied: see gaps in status
	case errors.Is(err, replica.ErrChainMoved), errors.Is(err, replica.ErrFork):
		return syscall.ESTALE, false
	case replica.LyingRPC(err):
		return syscall.EPROTO, false
	case errors.Is(err, homedir.ErrKeyMissing):
		return errnoKeyMissing, false
	case errors.Is(err, homedir.ErrKeyExpired):
		return errnoKeyExpired, false
	case errors.Is(err, replica.ErrNotAuthorized):
		return errnoKeyRejected, false
	case errors.Is(err, errBadName), errors.Is(err, errUnknownCommand):
		return syscall.EINVAL, false
	case errors.Is(err, errNameTooLong):
		return syscall.ENAMETOOLONG, false
	case errors.Is(err, context.Canceled):
		// Only the mount's own context is ever canceled: the mount is going away.
		return syscall.ECANCELED, false
	case errors.Is(err, context.DeadlineExceeded):
		return syscall.ETIMEDOUT, false
	case errors.As(err, &en) && en != 0:
		return en, false
	default:
		return syscall.EIO, true
	}
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
	}
	return errno
}

// einvalReason says why a name or value was refused without quoting it.
func einvalReason(err error) string {
	switch {
	case errors.Is(err, errBadName):
		return "a name with a % that is not one of the escapes (%2F %25 %00 %2E)"
	case errors.Is(err, replica.ErrInvalid):
		return "an invalid value (user.kint.meta must be JSON; a journal event must be a JSON object of its fields)"
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

package fs

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"kintfs/replica"
	"kintfs/replica/vault"
)

// errnos gives each cause (replica.KindOf) that has an errno of its own its errno. The ctl
// refusals come last: where two kinds share an errno (macOS answers a rejected key with EPERM),
// kindOfErrno reads it back as the later one.
var errnos = []struct {
	kind  replica.Kind
	errno syscall.Errno
}{
	{replica.KindNotFound, syscall.ENOENT},
	{replica.KindExists, syscall.EEXIST},
	{replica.KindNotEmpty, syscall.ENOTEMPTY},
	{replica.KindReadOnly, syscall.EROFS},
	{replica.KindNotPermitted, syscall.EPERM},
	{replica.KindInvalid, syscall.EINVAL},
	{replica.KindStagingFull, syscall.ENOSPC},
	{replica.KindTooBig, syscall.EFBIG},
	{replica.KindCrossTier, syscall.EXDEV},
	// The RPC cannot be reached (refused, or never answered): a ctl command can be tried
	// again later; not a fault, and not ENOTCONN, which says the mount died.
	{replica.KindOffline, syscall.EHOSTUNREACH},
	// What stops a ctl flush or pull, as the CLI's exit codes tell them apart.
	{replica.KindGapOpen, syscall.EBADMSG}, // an epoch that cannot be applied: see gaps in status
	{replica.KindMoved, syscall.ESTALE},
	{replica.KindLyingRPC, syscall.EPROTO},
	{replica.KindKeyMissing, errnoKeyMissing},
	{replica.KindKeyExpired, errnoKeyExpired},
	{replica.KindKeyRejected, errnoKeyRejected},
	{replica.KindReverted, errnoReverted},
	// the gas price is out of the range the cap allows: flush again later, or raise the cap
	{replica.KindGasCap, syscall.ERANGE},
}

// localErrnos are the mount's own errors, asked for after the causes.
var localErrnos = []struct {
	err   error
	errno syscall.Errno
}{
	{errBadName, syscall.EINVAL},
	{errUnknownCommand, syscall.EINVAL},
	{errNameTooLong, syscall.ENAMETOOLONG},
	// Only the mount's own context is ever canceled: the mount is going away.
	{context.Canceled, syscall.ECANCELED},
	{context.DeadlineExceeded, syscall.ETIMEDOUT},
}

// ErrnoOfKind is the errno of a cause, 0 for one without an errno of its own.
func ErrnoOfKind(k replica.Kind) syscall.Errno {
	for _, e := range errnos {
		if e.kind == k {
			return e.errno
		}
	}
	return 0
}

// KindOfErrno reads a ctl command's errno back as the cause it was answered for
// (replica.KindUnknown for an errno no cause has).
func KindOfErrno(en syscall.Errno) replica.Kind {
	for i := len(errnos) - 1; i >= 0; i-- {
		if errnos[i].errno == en {
			return errnos[i].kind
		}
	}
	return replica.KindUnknown
}

// toErrno is the one place an error becomes an errno. It unwraps (go-fuse's own ToErrno does
// not, and would turn a wrapped replica error into ENOSYS). It reports whether the error is
// unexpected, which callers log: EIO is only ever a real fault.
func toErrno(err error) (errno syscall.Errno, unexpected bool) {
	if err == nil {
		return 0, false
	}
	if en := ErrnoOfKind(replica.KindOf(err)); en != 0 {
		return en, false
	}
	for _, e := range localErrnos {
		if errors.Is(err, e.err) {
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
	switch KindOfErrno(en) {
	case replica.KindKeyMissing, replica.KindKeyExpired, replica.KindKeyRejected:
		return true
	}
	return false
}

// IsRevertErrno reports whether a ctl command's errno says the chain reverted a transaction.
func IsRevertErrno(en syscall.Errno) bool { return KindOfErrno(en) == replica.KindReverted }

// ErrnoOf is the errno a ctl command answers err with (EIO for a fault kintfs did not foresee).
func ErrnoOf(err error) syscall.Errno {
	en, _ := toErrno(err)
	return en
}

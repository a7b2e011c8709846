package vault

import "errors"

// Errors the mount maps to errnos and the CLI to exit codes. Callers check them with
// errors.Is; the message of a refusal wraps one of them with its cause and the way out.
var (
	ErrNotFound    = errors.New("no such row")
	ErrExists      = errors.New("already exists")
	ErrNotEmpty    = errors.New("category is not empty")
	ErrReadOnly    = errors.New("read-only")
	ErrInvalid     = errors.New("invalid value")
	ErrStagingFull = errors.New("staging cap reached")
	ErrCrossTier   = errors.New("rename across tiers")
	ErrFileTooBig  = errors.New("file too large")

	// ErrValueTooLarge is a value the store cannot take in one piece.
	ErrValueTooLarge = errors.New("too large for the state database")

	// ErrHistoryIncomplete refuses a history view of a block this machine holds no versions for.
	ErrHistoryIncomplete = errors.New("history not on this machine")

	// ErrInUse: another process (a mount, or a command outside one) has the state database open.
	ErrInUse = errors.New("another kintfs process is using this KINT_HOME (a mount starting or stopping, or a command still running): wait for it to finish, or unmount the vault")

	// ErrNotPermitted is a change the vault's model does not allow (EPERM).
	ErrNotPermitted = errors.New("not permitted")

	// ErrKeptInvalid is a journal write that is not an event, kept as a local file (its error
	// names it); it is also ErrInvalid.
	ErrKeptInvalid = errors.New("not a journal event")
)

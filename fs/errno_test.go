package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"syscall"
	"testing"

	"kintfs/chain"
	"kintfs/replica"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
)

func TestToErrno(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("write entity/x: %w", err) }
	for _, c := range []struct {
		err        error
		want       syscall.Errno
		unexpected bool
	}{
		{nil, 0, false},
		{vault.ErrNotFound, syscall.ENOENT, false},
		{wrap(vault.ErrNotFound), syscall.ENOENT, false},
		{wrap(vault.ErrExists), syscall.EEXIST, false},
		{wrap(vault.ErrNotEmpty), syscall.ENOTEMPTY, false},
		{wrap(vault.ErrReadOnly), syscall.EROFS, false},
		{wrap(vault.ErrInvalid), syscall.EINVAL, false},
		{wrap(vault.ErrStagingFull), syscall.ENOSPC, false},
		{wrap(vault.ErrCrossTier), syscall.EXDEV, false},
		{wrap(errBadName), syscall.EINVAL, false},
		{errNameTooLong, syscall.ENAMETOOLONG, false},
		{wrap(errUnknownCommand), syscall.EINVAL, false},
		{wrap(context.Canceled), syscall.ECANCELED, false},
		{wrap(replica.ErrOffline), syscall.EHOSTUNREACH, false},
		{wrap(&chain.UnreachableError{Err: context.DeadlineExceeded}), syscall.EHOSTUNREACH, false},
		{wrap(&chain.FundsError{}), errnoKeyRejected, false},
		{wrap(replica.ErrReverted), errnoReverted, false},
		{wrap(replica.ErrGapOpen), syscall.EBADMSG, false},
		{wrap(replica.ErrChainMoved), syscall.ESTALE, false},
		{wrap(replica.ErrFork), syscall.ESTALE, false},
		{wrap(replica.ErrStaleRPC), syscall.EPROTO, false},
		{wrap(chain.ErrDigestMismatch), syscall.EPROTO, false},
		{wrap(homedir.ErrKeyMissing), errnoKeyMissing, false},
		{wrap(homedir.ErrKeyExpired), errnoKeyExpired, false},
		{wrap(replica.ErrNotAuthorized), errnoKeyRejected, false},
		{syscall.EACCES, syscall.EACCES, false},
		{errors.New("badger: disk on fire"), syscall.EIO, true},
		{wrap(errors.New("gcm: message authentication failed")), syscall.EIO, true},
	} {
		got, unexpected := toErrno(c.err)
		if got != c.want || unexpected != c.unexpected {
			t.Errorf("toErrno(%v) = %v, %v; want %v, %v", c.err, got, unexpected, c.want, c.unexpected)
		}
	}
}

func TestFailLogsOnlyRealFaults(t *testing.T) {
	var buf bytes.Buffer
	f := &mountFS{log: log.New(&buf, "", 0)}
	if errno := f.fail("lookup", nil, "/state/x", vault.ErrNotFound); errno != syscall.ENOENT {
		t.Fatalf("got %v", errno)
	}
	if buf.Len() != 0 {
		t.Fatalf("ENOENT was logged: %q", buf.String())
	}
	if errno := f.fail("write", nil, "/state/x", errors.New("badger: disk on fire")); errno != syscall.EIO {
		t.Fatalf("got %v", errno)
	}
	line := buf.String()
	for _, want := range []string{"write", "/state/x", "disk on fire"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %q", line, want)
		}
	}
	if strings.Count(line, "\n") != 1 {
		t.Errorf("logged %d lines, want 1: %q", strings.Count(line, "\n"), line)
	}
}

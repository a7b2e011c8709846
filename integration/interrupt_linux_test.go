package integration

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// threadID is the id of the calling thread, which the caller has locked to its goroutine.
func threadID() int { return unix.Gettid() }

// interruptThread sends SIGUSR1 to thread tid of this process: a call it is blocked in on a
// mount is interrupted (the caller handles the signal, so the call is restarted).
func interruptThread(tid int) error { return unix.Tgkill(os.Getpid(), tid, syscall.SIGUSR1) }

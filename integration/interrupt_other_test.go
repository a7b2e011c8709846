//go:build !linux

package integration

import (
	"os"
	"syscall"
)

func threadID() int { return 0 }

// interruptThread signals the process: without thread-directed signals, any of its threads
// may take it.
func interruptThread(int) error { return syscall.Kill(os.Getpid(), syscall.SIGUSR1) }

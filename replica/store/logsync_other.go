//go:build !linux

package store

import "syscall"

// dirWatch elsewhere says changed every time: each sync lists the directory.
type dirWatch struct{}

func newDirWatch(dir string) *dirWatch { return &dirWatch{} }
func (w *dirWatch) changed() bool      { return true }
func (w *dirWatch) close()             {}

// fdatasync is fsync where the system has no fdatasync.
func fdatasync(fd int) error { return syscall.Fsync(fd) }

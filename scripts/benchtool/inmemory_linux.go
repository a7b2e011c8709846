package main

import "golang.org/x/sys/unix"

// inMemory says dir is on tmpfs.
func inMemory(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC
}

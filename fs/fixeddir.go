package fs

import (
	"context"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// fixedDir is embedded by the directories whose entries are fixed (the root, .kint/ and
// @<block>/): it refuses every change to their entries with one errno. A directory with an
// exception (the root's trash directories, a rename under @<block>/) defines that method
// itself.
type fixedDir struct {
	refusal syscall.Errno
}

func (d fixedDir) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fusefs.Inode, fusefs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, d.refusal
}

func (d fixedDir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	return nil, d.refusal
}

func (d fixedDir) Unlink(ctx context.Context, name string) syscall.Errno { return d.refusal }

func (d fixedDir) Rmdir(ctx context.Context, name string) syscall.Errno { return d.refusal }

func (d fixedDir) Rename(ctx context.Context, name string, newParent fusefs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return d.refusal
}

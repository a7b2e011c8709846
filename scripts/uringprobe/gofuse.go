//go:build linux && (amd64 || arm64)

package main

import (
	"context"
	"sync"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The same tree served by go-fuse's node API, the way kintfs mounts (NodeFS, fuse.NewServer,
// default_permissions, an hour of entry and attribute validity).
type goRoot struct {
	fusefs.Inode
	fs *trivialFS
}

type goFile struct {
	fusefs.Inode
	fs *trivialFS
}

var (
	_ fusefs.NodeOnAdder    = (*goRoot)(nil)
	_ fusefs.NodeGetattrer  = (*goFile)(nil)
	_ fusefs.NodeOpener     = (*goFile)(nil)
	_ fusefs.NodeReader     = (*goFile)(nil)
	_ fusefs.NodeGetxattrer = (*goFile)(nil)
	_ fusefs.NodeFlusher    = (*goFile)(nil)
	_ fusefs.NodeReleaser   = (*goFile)(nil)
)

func (r *goRoot) OnAdd(ctx context.Context) {
	f := &goFile{fs: r.fs}
	r.AddChild(fileName, r.NewPersistentInode(ctx, f, fusefs.StableAttr{Mode: fuse.S_IFREG, Ino: fileID}), false)
}

func (f *goFile) Getattr(ctx context.Context, fh fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.fs.served.Add(1)
	out.Mode = fuse.S_IFREG | 0o644
	out.Size = fileBytes
	out.Blocks = (fileBytes + 511) / 512
	out.Nlink = 1
	out.Blksize = 4096
	return 0
}

func (f *goFile) Open(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	f.fs.served.Add(1)
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (f *goFile) Read(ctx context.Context, fh fusefs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f.fs.served.Add(1)
	if off >= fileBytes {
		return fuse.ReadResultData(nil), 0
	}
	end := min(off+int64(len(dest)), fileBytes)
	return fuse.ReadResultData(fileData[off:end]), 0
}

func (f *goFile) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	f.fs.served.Add(1)
	if attr != xattrName {
		return 0, syscall.ENODATA
	}
	if len(dest) < len(xattrVal) {
		return uint32(len(xattrVal)), syscall.ERANGE
	}
	return uint32(copy(dest, xattrVal)), 0
}

func (f *goFile) Flush(ctx context.Context, fh fusefs.FileHandle) syscall.Errno {
	f.fs.served.Add(1)
	return 0
}

func (f *goFile) Release(ctx context.Context, fh fusefs.FileHandle) syscall.Errno {
	f.fs.served.Add(1)
	return 0
}

// goMount is the go-fuse server of the tree at dir.
type goMount struct {
	server  *fuse.Server
	down    sync.Once
	downErr error
}

func mountGoFuse(dir string, fs *trivialFS) (*goMount, error) {
	valid := time.Duration(validSecs) * time.Second
	o := &fusefs.Options{
		MountOptions: fuse.MountOptions{
			FsName:      "uringprobe-gofuse",
			Name:        "uringprobe-gofuse",
			DirectMount: true,
			Options:     []string{"default_permissions"},
		},
		EntryTimeout: &valid,
		AttrTimeout:  &valid,
	}
	server, err := fuse.NewServer(fusefs.NewNodeFS(&goRoot{fs: fs}, o), dir, &o.MountOptions)
	if err != nil {
		return nil, err
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		_ = server.Unmount()
		return nil, err
	}
	return &goMount{server: server}, nil
}

func (g *goMount) unmount() error {
	g.down.Do(func() { g.downErr = g.server.Unmount() })
	return g.downErr
}

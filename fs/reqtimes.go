package fs

import (
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// requestTimes is what a mount made with MountOptions.TimeRequests spent answering the kernel:
// of each kind of request, how many it answered and the time from the call into the tree to
// the answer. That is the mount's own part of a request; what a caller waits for beyond it is
// the kernel's transport of the request and its answer. .kint/requests shows it.
type requestTimes struct {
	kinds [numRequestKinds]struct{ count, nanos atomic.Int64 }
}

type requestKind int

// The kinds of request timed, by the names the kernel's protocol gives them.
const (
	reqLookup requestKind = iota
	reqGetAttr
	reqSetAttr
	reqMkdir
	reqUnlink
	reqRmdir
	reqRename
	reqCreate
	reqOpen
	reqRead
	reqWrite
	reqFlush
	reqFsync
	reqRelease
	reqOpenDir
	reqReadDir
	reqReadDirPlus
	reqReleaseDir
	reqGetXAttr
	reqListXAttr
	reqSetXAttr
	reqRemoveXAttr
	reqAccess
	reqStatFs
	numRequestKinds
)

var requestKindNames = [numRequestKinds]string{"LOOKUP", "GETATTR", "SETATTR", "MKDIR", "UNLINK", "RMDIR", "RENAME",
	"CREATE", "OPEN", "READ", "WRITE", "FLUSH", "FSYNC", "RELEASE", "OPENDIR", "READDIR", "READDIRPLUS", "RELEASEDIR",
	"GETXATTR", "LISTXATTR", "SETXATTR", "REMOVEXATTR", "ACCESS", "STATFS"}

// done counts one request of kind k, answered now, begun at t0.
func (t *requestTimes) done(k requestKind, t0 time.Time) {
	d := time.Since(t0)
	t.kinds[k].count.Add(1)
	t.kinds[k].nanos.Add(int64(d))
}

// RequestTime is one kind's line of .kint/requests: the requests answered since the mount
// began, and the mount's time on them all.
type RequestTime struct {
	Count int64 `json:"count"`
	Nanos int64 `json:"nanos"`
}

// JSON is every kind answered at least once, by name.
func (t *requestTimes) JSON() []byte {
	out := map[string]RequestTime{}
	for k := range t.kinds {
		if n := t.kinds[k].count.Load(); n > 0 {
			out[requestKindNames[k]] = RequestTime{Count: n, Nanos: t.kinds[k].nanos.Load()}
		}
	}
	b, _ := json.MarshalIndent(out, "", "  ") // a map of plain values: never fails
	return append(b, '\n')
}

// timedFS is the tree's answers to the kernel, each timed into t. Kinds not listed above
// (locks, links, fallocate and the like) pass through untimed.
type timedFS struct {
	fuse.RawFileSystem
	t *requestTimes
}

func (f timedFS) Lookup(c <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	defer f.t.done(reqLookup, time.Now())
	return f.RawFileSystem.Lookup(c, h, name, out)
}

func (f timedFS) GetAttr(c <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	defer f.t.done(reqGetAttr, time.Now())
	return f.RawFileSystem.GetAttr(c, in, out)
}

func (f timedFS) SetAttr(c <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	defer f.t.done(reqSetAttr, time.Now())
	return f.RawFileSystem.SetAttr(c, in, out)
}

func (f timedFS) Mkdir(c <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	defer f.t.done(reqMkdir, time.Now())
	return f.RawFileSystem.Mkdir(c, in, name, out)
}

func (f timedFS) Unlink(c <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	defer f.t.done(reqUnlink, time.Now())
	return f.RawFileSystem.Unlink(c, h, name)
}

func (f timedFS) Rmdir(c <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	defer f.t.done(reqRmdir, time.Now())
	return f.RawFileSystem.Rmdir(c, h, name)
}

func (f timedFS) Rename(c <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	defer f.t.done(reqRename, time.Now())
	return f.RawFileSystem.Rename(c, in, oldName, newName)
}

func (f timedFS) Create(c <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	defer f.t.done(reqCreate, time.Now())
	return f.RawFileSystem.Create(c, in, name, out)
}

func (f timedFS) Open(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer f.t.done(reqOpen, time.Now())
	return f.RawFileSystem.Open(c, in, out)
}

func (f timedFS) Read(c <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	defer f.t.done(reqRead, time.Now())
	return f.RawFileSystem.Read(c, in, buf)
}

func (f timedFS) Write(c <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	defer f.t.done(reqWrite, time.Now())
	return f.RawFileSystem.Write(c, in, data)
}

// Writev is timed only when the tree answers it: otherwise the server falls back to Write,
// which counts the request.
func (f timedFS) Writev(c <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	t0 := time.Now()
	n, st := f.RawFileSystem.Writev(c, in, data)
	if st != fuse.ENOSYS {
		f.t.done(reqWrite, t0)
	}
	return n, st
}

func (f timedFS) Flush(c <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	defer f.t.done(reqFlush, time.Now())
	return f.RawFileSystem.Flush(c, in)
}

func (f timedFS) Fsync(c <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	defer f.t.done(reqFsync, time.Now())
	return f.RawFileSystem.Fsync(c, in)
}

func (f timedFS) Release(c <-chan struct{}, in *fuse.ReleaseIn) {
	defer f.t.done(reqRelease, time.Now())
	f.RawFileSystem.Release(c, in)
}

func (f timedFS) OpenDir(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer f.t.done(reqOpenDir, time.Now())
	return f.RawFileSystem.OpenDir(c, in, out)
}

func (f timedFS) ReadDir(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer f.t.done(reqReadDir, time.Now())
	return f.RawFileSystem.ReadDir(c, in, out)
}

func (f timedFS) ReadDirPlus(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer f.t.done(reqReadDirPlus, time.Now())
	return f.RawFileSystem.ReadDirPlus(c, in, out)
}

func (f timedFS) ReleaseDir(in *fuse.ReleaseIn) {
	defer f.t.done(reqReleaseDir, time.Now())
	f.RawFileSystem.ReleaseDir(in)
}

func (f timedFS) GetXAttr(c <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	defer f.t.done(reqGetXAttr, time.Now())
	return f.RawFileSystem.GetXAttr(c, h, attr, dest)
}

func (f timedFS) ListXAttr(c <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	defer f.t.done(reqListXAttr, time.Now())
	return f.RawFileSystem.ListXAttr(c, h, dest)
}

func (f timedFS) SetXAttr(c <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	defer f.t.done(reqSetXAttr, time.Now())
	return f.RawFileSystem.SetXAttr(c, in, attr, data)
}

func (f timedFS) RemoveXAttr(c <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	defer f.t.done(reqRemoveXAttr, time.Now())
	return f.RawFileSystem.RemoveXAttr(c, h, attr)
}

func (f timedFS) Access(c <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	defer f.t.done(reqAccess, time.Now())
	return f.RawFileSystem.Access(c, in)
}

func (f timedFS) StatFs(c <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	defer f.t.done(reqStatFs, time.Now())
	return f.RawFileSystem.StatFs(c, h, out)
}

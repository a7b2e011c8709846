package fs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"kintfs/replica"
)

// .kint/ is the mount's control directory: never listed, mode 0700, its files 0600.
//
//	ctl     write a command (one of replica.Commands); the write returns when it is done, or
//	        fails with its errno. Reading it lists the commands.
//	status  the replica's status as JSON.
//	blocks  one line per anchored epoch this machine holds: seq block tx time.
//	requests  only with MountOptions.TimeRequests: of each kind of FUSE request, how many the
//	        mount answered and its own time on them, as JSON (see requestTimes).

var errUnknownCommand = errors.New("unknown command")

// maxCtlWrite bounds one write to ctl; commands are a few bytes.
const maxCtlWrite = 4096

// parseCtl reads the commands of one write to ctl: one per line, words separated by any
// blanks. Nothing runs unless every line is a known command.
func parseCtl(data []byte) ([]string, error) {
	if len(data) > maxCtlWrite {
		return nil, fmt.Errorf("%w: %d bytes", errUnknownCommand, len(data))
	}
	var cmds []string
	for _, line := range strings.Split(string(data), "\n") {
		cmd := strings.Join(strings.Fields(line), " ")
		if cmd == "" {
			continue
		}
		known := false
		for _, c := range replica.Commands {
			known = known || c == cmd
		}
		if !known {
			return nil, fmt.Errorf("%w %q (try one of: %s)", errUnknownCommand, cmd, strings.Join(replica.Commands, ", "))
		}
		cmds = append(cmds, cmd)
	}
	if len(cmds) == 0 {
		return nil, fmt.Errorf("%w: empty", errUnknownCommand)
	}
	return cmds, nil
}

type kintDir struct {
	node
	fixedDir // EPERM: its files are fixed, even on a read-only mount
}

var (
	_ = (fusefs.NodeLookuper)((*kintDir)(nil))
	_ = (fusefs.NodeReaddirer)((*kintDir)(nil))
	_ = (fusefs.NodeGetattrer)((*kintDir)(nil))
	_ = (fusefs.NodeCreater)((*kintDir)(nil))
	_ = (fusefs.NodeMkdirer)((*kintDir)(nil))
	_ = (fusefs.NodeUnlinker)((*kintDir)(nil))
	_ = (fusefs.NodeRmdirer)((*kintDir)(nil))
	_ = (fusefs.NodeRenamer)((*kintDir)(nil))
)

func newKintDir(ctx context.Context, parent *node, out *fuse.EntryOut) *fusefs.Inode {
	d := &kintDir{node: node{fs: parent.fs}, fixedDir: fixedDir{syscall.EPERM}}
	parent.fs.dirAttr(&out.Attr, inoKint, 2, 0700)
	return parent.NewInode(ctx, d, fusefs.StableAttr{Mode: syscall.S_IFDIR, Ino: inoKint})
}

func (d *kintDir) Getattr(ctx context.Context, f fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.fs.dirAttr(&out.Attr, inoKint, 2, 0700)
	return 0
}

// ctlFiles maps the control files to their inode numbers.
var ctlFiles = map[string]uint64{"blocks": inoBlocks, "ctl": inoCtl, "status": inoStatus, "requests": inoRequests}

func (d *kintDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	ino, ok := ctlFiles[name]
	if !ok || (ino == inoRequests && d.fs.times == nil) {
		return nil, syscall.ENOENT
	}
	c := &ctlFile{node: node{fs: d.fs}, name: name}
	c.attr(&out.Attr)
	out.SetAttrTimeout(time.Nanosecond)
	return d.NewInode(ctx, c, fusefs.StableAttr{Mode: syscall.S_IFREG, Ino: ino}), 0
}

func (d *kintDir) Readdir(ctx context.Context) (fusefs.DirStream, syscall.Errno) {
	ents := []fuse.DirEntry{
		{Name: ".", Mode: syscall.S_IFDIR, Ino: inoKint},
		{Name: "..", Mode: syscall.S_IFDIR, Ino: inoRoot},
		{Name: "blocks", Mode: syscall.S_IFREG, Ino: inoBlocks},
		{Name: "ctl", Mode: syscall.S_IFREG, Ino: inoCtl},
		{Name: "status", Mode: syscall.S_IFREG, Ino: inoStatus},
	}
	if d.fs.times != nil {
		ents = append(ents, fuse.DirEntry{Name: "requests", Mode: syscall.S_IFREG, Ino: inoRequests})
	}
	return fusefs.NewListDirStream(ents), 0
}

// ctlFile is ctl, status, blocks or requests. Its content is made when it is opened, and read with
// direct I/O, so the kernel never serves an old copy or trusts an old size.
type ctlFile struct {
	node
	name string

	mu   sync.Mutex
	snap []byte // no-open mode: the content the last getattr gave the size of
}

var (
	_ = (fusefs.NodeGetattrer)((*ctlFile)(nil))
	_ = (fusefs.NodeSetattrer)((*ctlFile)(nil))
	_ = (fusefs.NodeOpener)((*ctlFile)(nil))
)

func (c *ctlFile) content() []byte {
	switch c.name {
	case "status":
		return c.fs.b.StatusJSON()
	case "blocks":
		return c.fs.b.BlocksText()
	case "requests":
		return c.fs.times.JSON()
	}
	return []byte(strings.Join(replica.Commands, "\n") + "\n")
}

func (c *ctlFile) attr(out *fuse.Attr) {
	data := c.content()
	c.fs.fileAttr(out, ctlFiles[c.name], int64(len(data)), c.fs.started, 0600)
	if c.fs.noOpen() {
		c.mu.Lock()
		c.snap = data
		c.mu.Unlock()
		uncachedAttr(out)
	}
}

func (c *ctlFile) Getattr(ctx context.Context, f fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	c.attr(&out.Attr)
	out.SetTimeout(time.Nanosecond) // its size is its content's, which changes unannounced
	return 0
}

// Setattr accepts the truncation that comes with `echo flush > ctl`.
func (c *ctlFile) Setattr(ctx context.Context, f fusefs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if c.name != "ctl" {
		return syscall.EACCES
	}
	return c.Getattr(ctx, f, out)
}

func (c *ctlFile) Open(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	write := flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0
	if write && c.name != "ctl" {
		return nil, 0, syscall.EACCES
	}
	return &ctlHandle{c: c, data: c.content()}, fuse.FOPEN_DIRECT_IO, 0
}

// ctlHandle is one open control file with the content it was opened with.
type ctlHandle struct {
	c    *ctlFile
	data []byte
}

var (
	_ = (fusefs.FileReader)((*ctlHandle)(nil))
	_ = (fusefs.FileWriter)((*ctlHandle)(nil))
)

func (h *ctlHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(h.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(h.data[off:min(int64(len(h.data)), off+int64(len(dest)))]), 0
}

// Write runs the commands written, one after the other, and returns when the last is done. They
// run under the mount's context, not the request's: the kernel cancels a request on any signal
// the writer gets, even one it ignores.
func (h *ctlHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	f := h.c.fs
	cmds, err := parseCtl(data)
	if err != nil {
		return 0, f.fail("ctl", &h.c.node, "", err)
	}
	// what a pull or flush changed is out of the kernel's caches before the write returns
	defer f.settle()
	for _, cmd := range cmds {
		if err := f.b.Control(f.ctx, cmd); err != nil {
			errno := f.fail("ctl "+cmd, &h.c.node, "", err)
			if _, unexpected := toErrno(err); !unexpected {
				f.logf("warn: ctl %s: %s: %v", cmd, errno.Error(), err) // a refusal the writer acts on
			}
			return 0, errno
		}
	}
	return uint32(len(data)), 0
}

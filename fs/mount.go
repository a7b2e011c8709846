package fs

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// MountOptions configure one mount.
type MountOptions struct {
	// AllowOther lets other users in; the kernel then checks permissions (default_permissions).
	AllowOther bool
	// ReadOnly refuses every change to the tree with EROFS; .kint/ctl still takes commands.
	ReadOnly bool
	// AllowNonEmpty mounts over a directory that has entries.
	AllowNonEmpty bool
	// Debug logs every FUSE request.
	Debug bool
	// Xattrs turns extended attributes on. When off, getxattr answers ENOSYS, which the kernel
	// remembers, so it stops asking.
	Xattrs bool
	// Umask clears permission bits of every file and directory the mount serves (as sshfs's
	// and rclone's --umask do): with AllowOther and default_permissions, it is what keeps
	// other users out of the plaintext.
	Umask uint32
	// UID and GID own every file; zero means the mounting user.
	UID, GID uint32
	// Logger receives real faults (EIO) with operation, path and cause; nil discards them.
	Logger *log.Logger
	// FileMode and DirMode are the permission bits of files and directories never given a
	// mode here (chmod, or the mode of a create); zero means 0644 and 0755.
	FileMode, DirMode uint32
	// EntryTimeout and AttrTimeout are the kernel's cache times for the live tree, names that
	// do not exist included (default liveTimeout). Every change that does not come through the
	// kernel is invalidated (see invalidate.go), so they bound nothing a user can see.
	EntryTimeout, AttrTimeout time.Duration
	// Current, when set, is closed once the start-up pull has applied what the chain holds,
	// or has failed. Until then a lookup in the live tree that finds nothing waits for it (at
	// most currentWait) instead of answering, and caching, ENOENT.
	Current <-chan struct{}
	// MaxCachedFiles bounds the file nodes the mount keeps for names the kernel caches: past
	// it, the kernel is made to drop the names of idle files (see fileNodes). Zero means
	// DefaultMaxCachedFiles; less than zero, no bound.
	MaxCachedFiles int
	// TimeRequests counts the requests the mount answers, and its own time on each kind,
	// shown in .kint/requests (see requestTimes). Off, the mount serves no such file.
	TimeRequests bool
}

// currentWait bounds how long a lookup that misses waits for the start-up pull.
const currentWait = 10 * time.Second

// liveTimeout is the default cache time of the live tree: long, since a pull, a flush and
// every change made through the mount drop what they change.
const liveTimeout = time.Hour

// historyTimeout is how long the kernel may cache anything under @<block>.
const historyTimeout = time.Hour

// Mounted is a mounted tree.
type Mounted struct {
	dir    string
	server *fuse.Server
	fs     *mountFS
}

// Mount mounts b on dir and serves it until Unmount. The file system type is fuse.kintfs.
func Mount(dir string, b Backend, o MountOptions) (*Mounted, error) {
	if b == nil {
		return nil, errors.New("mount: no backend")
	}
	if err := checkMountpoint(dir, o.AllowNonEmpty); err != nil {
		return nil, err
	}
	if o.UID == 0 && o.GID == 0 {
		o.UID, o.GID = uint32(os.Getuid()), uint32(os.Getgid())
	}
	if o.EntryTimeout <= 0 {
		o.EntryTimeout = liveTimeout
	}
	if o.AttrTimeout <= 0 {
		o.AttrTimeout = liveTimeout
	}
	if o.FileMode == 0 {
		o.FileMode = defaultFileMode
	}
	if o.DirMode == 0 {
		o.DirMode = defaultDirMode
	}
	o.FileMode, o.DirMode = o.FileMode&0o777, o.DirMode&0o777
	f := newMountFS(b, o)

	// Set explicitly: a nil timeout in a non-nil Options means no caching at all.
	entry, attr := o.EntryTimeout, o.AttrTimeout
	fo := &fusefs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther: o.AllowOther,
			FsName:     "kintfs",
			Name:       "kintfs",
			Debug:      o.Debug,
			Logger:     o.Logger,
			// Not IgnoreSecurityLabels: its ENODATA for ACL names keeps ls asking of every
			// file; xattrRefused answers them with EOPNOTSUPP instead.
			DisableXAttrs: !o.Xattrs,
		},
		EntryTimeout: &entry,
		AttrTimeout:  &attr,
		// A name that does not exist is remembered too (cp -r and tar x look each one up
		// twice); a lookup where names come and go unseen opts out (see noNegative).
		NegativeTimeout: &entry,
		UID:             o.UID,
		GID:             o.GID,
		Logger:          o.Logger,
		// Every node sets its permission bits itself: a mode of 0000 (a create with mode 0,
		// chmod 000) shows as set, not filled in with 0644.
		NullPermissions: true,
	}
	// The kernel checks the modes kept here (chmod 600 keeps others out).
	fo.MountOptions.Options = append(fo.MountOptions.Options, "default_permissions")
	if o.ReadOnly {
		// the kernel refuses writes itself (EROFS before a request is sent), and /proc/mounts
		// says ro; the replica refuses them again for every path that does not come through FUSE
		fo.MountOptions.Options = append(fo.MountOptions.Options, "ro")
	}
	raw := fusefs.NewNodeFS(f.root, fo)
	if f.times != nil {
		raw = timedFS{RawFileSystem: raw, t: f.times}
	}
	server, err := fuse.NewServer(raw, dir, &fo.MountOptions)
	if err != nil {
		f.stop()
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		f.stop()
		_ = server.Unmount()
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	f.noteHead()
	f.startInvalidator()
	b.Subscribe(f.changed)
	return &Mounted{dir: dir, server: server, fs: f}, nil
}

// CheckMountpoint is checkMountpoint, for the command line to call before it contacts the
// chain.
func CheckMountpoint(dir string, allowNonEmpty bool) error {
	return checkMountpoint(dir, allowNonEmpty)
}

// checkMountpoint refuses a missing mountpoint, a file, and a non-empty directory unless asked.
func checkMountpoint(dir string, allowNonEmpty bool) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("mountpoint: %w", err)
	}
	defer d.Close()
	st, err := d.Stat()
	if err != nil {
		return fmt.Errorf("mountpoint: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("mountpoint %s is not a directory", dir)
	}
	if allowNonEmpty {
		return nil
	}
	names, err := d.Readdirnames(1)
	if err != nil && err != io.EOF {
		return fmt.Errorf("mountpoint: %w", err)
	}
	if len(names) > 0 {
		return fmt.Errorf("mountpoint %s is not empty: empty it, pick another directory, or pass --allow-non-empty", dir)
	}
	return nil
}

// Settle returns once the kernel has dropped what the changes told to the mount so far
// touched (bounded by a few seconds): a command run beside the mount (kintfs pull, push,
// compact) calls it before it answers, so that a read right after sees the change.
func (m *Mounted) Settle() { m.fs.settle() }

// Dir is the mountpoint.
func (m *Mounted) Dir() string { return m.dir }

// Wait blocks until the file system is unmounted.
func (m *Mounted) Wait() {
	m.server.Wait()
	m.fs.stop()
}

// Unmount unmounts the tree; it fails while files are open (EBUSY), and may be retried.
func (m *Mounted) Unmount() error {
	if err := m.server.Unmount(); err != nil {
		return fmt.Errorf("unmount %s: %w", m.dir, err)
	}
	m.fs.stop()
	return nil
}

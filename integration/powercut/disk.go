// Package powercut is a disk that can lose its power: one image file, served over FUSE, to put
// a loop device and a file system on. What was written to it since the last fsync of the file
// (the loop device's cache flush) sits in a volatile cache, as in a real disk: Cut returns the
// image a power cut at that instant leaves, the synced content with each page written since
// kept or lost at random. A kill -9 cannot test a promise of durability, since the kernel's
// page cache survives it; this can.
package powercut

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// PageSize is the unit a cut keeps or loses: a page of the file system's block size, which a
// disk writes whole.
const PageSize = 4096

// ImageName is the image's name in the directory Serve mounts.
const ImageName = "disk.img"

// Disk is the image and its volatile cache.
type Disk struct {
	mu     sync.Mutex
	cur    []byte             // what reads see: the synced content and the cache over it
	synced []byte             // what survives a cut
	dirty  map[int64]struct{} // pages written since the last fsync
	syncs  int
	// a cut asked for at the next sync: taken when the sync arrives, before it makes anything
	// durable, and sent back
	cutAtSync chan cutResult
	keep      func(int64) bool
	cutSkip   int // syncs with writes in the cache to let pass before the cut
	server    *fuse.Server
	dir       string
}

// Serve mounts dir with the image file in it, starting from image (all of it synced), an image
// from Empty or a cut, which the disk owns from then on: Close frees it. Its size is the
// image's, a multiple of PageSize.
func Serve(dir string, image []byte) (*Disk, error) {
	if len(image) == 0 || len(image)%PageSize != 0 {
		return nil, fmt.Errorf("an image of %d bytes: want a positive multiple of %d", len(image), PageSize)
	}
	cur, err := copyImage(image)
	if err != nil {
		return nil, err
	}
	d := &Disk{cur: cur, synced: image, dirty: map[int64]struct{}{}, dir: dir}
	root := &rootNode{d: d}
	server, err := fs.Mount(dir, root, &fs.Options{MountOptions: fuse.MountOptions{
		FsName: "powercut", Name: "powercut", MaxWrite: 1 << 20,
		DisableSplice: true, // its reads are bytes in memory: nothing to splice from
	}})
	if err != nil {
		Free(cur)
		return nil, fmt.Errorf("mount the disk at %s: %w", dir, err)
	}
	d.server = server
	return d, nil
}

// Path is the image file's path, to give to losetup.
func (d *Disk) Path() string { return filepath.Join(d.dir, ImageName) }

// Syncs is the number of fsyncs the image has had.
func (d *Disk) Syncs() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.syncs
}

// Cut is a power cut now: the image it leaves is the synced content, with each page written
// since the last sync kept (as the disk may have written it before the power went) when keep
// says so, or lost. kept and lost count those pages. The disk goes on serving as if nothing
// happened; its writes after this instant are not in the image. The image is to Serve, or to
// Free.
func (d *Disk) Cut(keep func(page int64) bool) (image []byte, kept, lost int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cutLocked(keep)
}

func (d *Disk) cutLocked(keep func(page int64) bool) (image []byte, kept, lost int) {
	image, err := copyImage(d.synced)
	if err != nil {
		panic(err) // the test machine is out of memory: nothing after this could run
	}
	for page := range d.dirty {
		if !keep(page) {
			lost++
			continue
		}
		kept++
		copy(image[page:page+PageSize], d.cur[page:page+PageSize])
	}
	return image, kept, lost
}

type cutResult struct {
	image      []byte
	kept, lost int
}

// CutInSync is a power cut while the disk flushes its cache: at the fsync that finds writes in
// the cache after skip others that did, after every write it covers has reached the cache and
// before any is durable. That is when a cut hurts most: the file system has written what its
// sync needed and is waiting. It waits up to timeout for the sync.
func (d *Disk) CutInSync(keep func(page int64) bool, skip int, timeout time.Duration) (image []byte, kept, lost int, err error) {
	c := make(chan cutResult, 1)
	d.mu.Lock()
	d.cutAtSync, d.keep, d.cutSkip = c, keep, skip
	d.mu.Unlock()
	select {
	case r := <-c:
		return r.image, r.kept, r.lost, nil
	case <-time.After(timeout):
		d.mu.Lock()
		d.cutAtSync = nil
		d.mu.Unlock()
		// a sync that came in between still answered
		select {
		case r := <-c:
			return r.image, r.kept, r.lost, nil
		default:
		}
		return nil, 0, 0, fmt.Errorf("no sync came within %s", timeout)
	}
}

// Close unmounts the disk and frees its image. Detach the loop device first.
func (d *Disk) Close() error {
	err := d.server.Unmount()
	d.mu.Lock()
	defer d.mu.Unlock()
	Free(d.cur)
	Free(d.synced)
	d.cur, d.synced = nil, nil // a request still under way finds a disk of no bytes
	return err
}

func (d *Disk) write(data []byte, off int64) (uint32, syscall.Errno) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if off < 0 || off+int64(len(data)) > int64(len(d.cur)) {
		return 0, syscall.ENOSPC
	}
	copy(d.cur[off:], data)
	for page := off / PageSize * PageSize; page < off+int64(len(data)); page += PageSize {
		d.dirty[page] = struct{}{}
	}
	return uint32(len(data)), 0
}

func (d *Disk) read(dest []byte, off int64) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	if off >= int64(len(d.cur)) {
		return nil
	}
	return append(dest[:0], d.cur[off:min(off+int64(len(dest)), int64(len(d.cur)))]...)
}

// sync makes every page written so far survive a cut.
func (d *Disk) sync() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cutAtSync != nil && len(d.dirty) > 0 && d.cutSkip > 0 {
		d.cutSkip--
	} else if d.cutAtSync != nil && len(d.dirty) > 0 {
		image, kept, lost := d.cutLocked(d.keep)
		d.cutAtSync <- cutResult{image, kept, lost}
		d.cutAtSync = nil
	}
	for page := range d.dirty {
		copy(d.synced[page:page+PageSize], d.cur[page:page+PageSize])
	}
	clear(d.dirty)
	d.syncs++
}

type rootNode struct {
	fs.Inode
	d *Disk
}

var _ = (fs.NodeOnAdder)((*rootNode)(nil))

func (r *rootNode) OnAdd(ctx context.Context) {
	img := r.NewPersistentInode(ctx, &imageNode{d: r.d}, fs.StableAttr{Mode: syscall.S_IFREG})
	r.AddChild(ImageName, img, false)
}

// imageNode is the image file. It is opened for direct I/O: the disk sees every write the
// loop device makes as it makes it, with no page cache of the file in between.
type imageNode struct {
	fs.Inode
	d *Disk
}

var (
	_ = (fs.NodeOpener)((*imageNode)(nil))
	_ = (fs.NodeGetattrer)((*imageNode)(nil))
	_ = (fs.NodeSetattrer)((*imageNode)(nil))
	_ = (fs.NodeReader)((*imageNode)(nil))
	_ = (fs.NodeWriter)((*imageNode)(nil))
	_ = (fs.NodeFsyncer)((*imageNode)(nil))
	_ = (fs.NodeFlusher)((*imageNode)(nil))
)

func (n *imageNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (n *imageNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o600
	out.Size = uint64(len(n.d.cur)) // fixed at Serve
	out.Blocks = out.Size / 512
	return 0
}

// Setattr refuses a change of size: the disk's is fixed.
func (n *imageNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok && size != uint64(len(n.d.cur)) {
		return syscall.EPERM
	}
	return n.Getattr(ctx, f, out)
}

func (n *imageNode) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return fuse.ReadResultData(n.d.read(dest, off)), 0
}

func (n *imageNode) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	return n.d.write(data, off)
}

func (n *imageNode) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	n.d.sync()
	return 0
}

// Flush is a close, which promises nothing about durability.
func (n *imageNode) Flush(ctx context.Context, f fs.FileHandle) syscall.Errno { return 0 }

// Empty returns a zeroed image of size bytes, rounded up to a page, to Serve or to Free.
//
// Images live outside the Go heap, in memory of their own (mmap), freed at once by Free or
// by the Close of the disk that took them. A disk holds two (what reads see, what survives a
// cut), and every cut makes one, which the next disk takes and copies. The power-cut tests'
// disks are 256 MB: in the heap, under the race detector, the process running those tests
// alone grew to 15 GB.
func Empty(size int64) ([]byte, error) {
	return mapImage(int((size + PageSize - 1) / PageSize * PageSize))
}

// Free frees an image from Empty or a cut that no disk took.
func Free(image []byte) {
	if len(image) > 0 {
		unix.Munmap(image)
	}
}

func mapImage(n int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("an image of %d bytes: %w", n, err)
	}
	return b, nil
}

func copyImage(image []byte) ([]byte, error) {
	b, err := mapImage(len(image))
	if err != nil {
		return nil, err
	}
	copy(b, image)
	return b, nil
}

// AtRandom keeps each page with odds of one in two.
func AtRandom(rng *rand.Rand) func(int64) bool {
	return func(int64) bool { return rng.Intn(2) == 0 }
}

// LoseAll keeps no page written since the last sync.
func LoseAll(int64) bool { return false }

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// floors measures what the targets cannot go below on this machine: one FUSE round trip, the
// open and close of a warm file (two round trips on a read-write mount: OPEN, and RELEASE sent
// after close returns), and one durable write on the disk. The report turns them into the
// lowest ratio each missed target could reach with the daemon doing no work at all.
func (b *bench) floors() error {
	if b.cfg.skip["warm"] {
		return nil
	}
	say("floors: FUSE round trip, open + close, fsync")
	mf, err := firstFile(filepath.Join(b.mnt, "entity"))
	if err != nil {
		return err
	}
	nf, err := firstFile(filepath.Join(b.nat, "entity"))
	if err != nil {
		return err
	}
	r := map[string]any{}
	// getxattr of a name kintfs never has: answered at once, and the kernel caches no answer
	// but ENOSYS, so each call is one round trip
	if r["roundtrip_us"], err = perOp(20000, func() error {
		_, err := unix.Getxattr(mf, "security.selinux", make([]byte, 64))
		if err == nil || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENODATA) {
			return nil
		}
		return err
	}); err != nil {
		return err
	}
	openClose := func(path string) func() error {
		return func() error {
			fd, err := syscall.Open(path, syscall.O_RDONLY, 0)
			if err != nil {
				return err
			}
			return syscall.Close(fd)
		}
	}
	if r["open_close_mount_us"], err = perOp(20000, openClose(mf)); err != nil {
		return err
	}
	if r["open_close_native_us"], err = perOp(20000, openClose(nf)); err != nil {
		return err
	}
	dir := filepath.Join(b.work, "fsync-probe")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	body := make([]byte, b.cfg.rowBytes)
	i := 0
	if r["fsync_ms"], err = perOp(200, func() error {
		i++
		return writeFile(filepath.Join(dir, fmt.Sprint(i)), body, true)
	}); err != nil {
		return err
	}
	r["fsync_ms"] = r["fsync_ms"].(float64) / 1000
	// a new inode alone: what every file the epoch cache writes (three an epoch) costs first
	if r["create_us"], err = createCost(dir, 1000); err != nil {
		return err
	}
	return b.keep("floors", r)
}

// createCost is the microseconds a new empty file takes to create and close in dir, the
// median of 5 batches of n/5. The files stay: a deletion would make the next new files dearer
// (ext4 without a journal passes over every inode freed in the last minute, six while the block
// that holds it is not written back, when it allocates one).
func createCost(dir string, n int) (float64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	i := 0
	return perOp(n, func() error {
		i++
		fd, err := syscall.Open(filepath.Join(dir, fmt.Sprintf("new-%d", i)), syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		return syscall.Close(fd)
	})
}

// perOp runs fn n times in 5 batches and returns the median batch's microseconds per call.
func perOp(n int, fn func() error) (float64, error) {
	var per []float64
	for batch := 0; batch < 5; batch++ {
		t := time.Now()
		for i := 0; i < n/5; i++ {
			if err := fn(); err != nil {
				return 0, err
			}
		}
		per = append(per, float64(time.Since(t).Nanoseconds())/1e3/float64(n/5))
	}
	return median(per), nil
}

// firstFile is the first regular file under dir, in walk order.
func firstFile(dir string) (string, error) {
	found := ""
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	if err == nil && found == "" {
		err = fmt.Errorf("no file under %s", dir)
	}
	return found, err
}

// newFileTrips is how many round trips a new file's open, write and close wait for.
const newFileTrips = 5

// floorsSection renders floors.json: the machine's costs, and the lowest ratio each target
// that depends on them could reach if kintfs itself took no time.
func (rp *report) floorsSection(r results, p map[string]any) {
	f := r.json("floors.json")
	if f == nil {
		return
	}
	rt, ocm, ocn, fsyncMS := num(f, "roundtrip_us"), num(f, "open_close_mount_us"), num(f, "open_close_native_us"), num(f, "fsync_ms")
	rows := float64(integer(p, "rows"))
	rp.w("## Floors")
	rp.w("")
	rp.w("What this machine charges for the requests FUSE cannot skip, measured in the same run (median of 5 batches):")
	rp.w("")
	rp.w("| cost | measured |")
	rp.w("|---|---|")
	rp.w("| one FUSE round trip (a getxattr kintfs answers at once) | %.1f µs |", rt)
	rp.w("| open + close of a warm file: mount (OPEN, and RELEASE after close returns) vs native | %.1f µs vs %.1f µs |", ocm, ocn)
	rp.w("| write %d B + fsync + close of a new file on the native disk | %.2f ms |", integer(p, "row_bytes"), fsyncMS)
	if _, ok := f["create_us"]; ok {
		rp.w("| create + close of an empty file on the native disk (a new inode; the epoch cache writes three an epoch) | %.1f µs |", num(f, "create_us"))
	}
	rp.w("")
	rp.w("The lowest each target could reach if kintfs took no time beyond these:")
	rp.w("")
	rp.w("| target | floor | target |")
	rp.w("|---|---|---|")
	if g := r.hf("grep-warm"); len(g) >= 2 {
		nat := g[1].Median
		rp.w("| `grep -r`, warm, read-write mount: native plus one open + close per file | %.2fx | <= 2x |", (nat+rows*(ocm-ocn)/1e6)/nat)
	}
	if _, cold := r.coldPasses(); len(cold) > 0 {
		nat := median(cold)
		rp.w("| `grep -r`, cold: native cold plus one open + close and one READ per file | %.2fx | <= 1.5x |", (nat+rows*(ocm-ocn+rt)/1e6)/nat)
	}
	if rh := r.json("readhist.json"); rh != nil {
		cur := num(rh, "current_median_us")
		rp.w("| first read at an arbitrary `@<block>`: the current version's read plus 5 round trips (4 LOOKUPs and a READ) | %.2fx | <= 2x |", (cur+5*rt)/cur)
	}
	// A new file waits for five round trips: GETATTR of its directory (the create before it
	// made the kernel drop the directory's attributes, which its permission check needs),
	// LOOKUP, CREATE, WRITE and FLUSH; RELEASE comes after close returns.
	newFile := fsyncMS + newFileTrips*rt/1000
	if cp := r.hf("cp"); len(cp) >= 2 {
		nat := cp[1].Median
		rp.w("| `cp -r` into the mount vs native with fsync per file: native plus %d round trips per file | %.2fx | <= 1.5x |", newFileTrips,
			(nat+float64(integer(p, "cp_files"))*newFileTrips*rt/1e6)/nat)
	}
	rp.w("| a new file durable at close: one durable write and the %d round trips it waits for (GETATTR of its directory, LOOKUP, CREATE, WRITE, FLUSH) | %.2f ms | <= 0.5 ms |", newFileTrips, newFile)
	rp.w("| writing many new rows, per file: the same | %.2f ms | <= 0.3 ms |", newFile)
	d := r.json("durable.json")
	trips, transport := num(d, "trips_per_file"), num(d, "transport_per_file")
	if trips > 0 {
		if cp := r.hf("cp"); len(cp) >= 2 {
			nat := cp[1].Median
			rp.w("| `cp -r` into the mount vs native with fsync per file: native plus each file's requests' transport as measured while the mount wrote (below) | %.2fx | <= 1.5x |",
				(nat+float64(integer(p, "cp_files"))*transport)/nat)
		}
		rp.w("| a new file durable at close: one durable write and its requests' transport as measured while the mount wrote (below) | %.2f ms | <= 0.5 ms |", fsyncMS+transport*1000)
	}
	rp.w("")
	if trips > 0 {
		rp.ownPart(d, rt)
	}
}

// ownPart says where a new file's time through the mount went in the durable step: the
// mount's own time on its requests (.kint/requests), by kind, and the rest, the kernel's
// transport of them, against a round trip in a tight loop (rt, µs).
func (rp *report) ownPart(d map[string]any, rt float64) {
	trips, transport := num(d, "trips_per_file"), num(d, "transport_per_file")
	kinds, _ := d["own_by_kind"].(map[string]any)
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return num(kinds, names[i]) > num(kinds, names[j]) })
	var parts []string
	rest := 0.0 // kinds under a microsecond a file: the copy's mkdir and the like, spread over its files
	for _, k := range names {
		if us := num(kinds, k) * 1e6; us >= 1 {
			parts = append(parts, fmt.Sprintf("%s %.0f µs", k, us))
		} else {
			rest += us
		}
	}
	if rest >= 0.05 {
		parts = append(parts, fmt.Sprintf("other kinds %.1f µs", rest))
	}
	rp.w("Where a new file's time through the mount goes (step durable, its median run; each mount counts its own time on"+
		" every request it answers, `KINTFS_TIME_REQUESTS=1`, `.kint/requests`): %s a file, of which the mount's own %s"+
		" (%s) and the rest, the kernel's transport of its %.1f requests with the copy's own few microseconds a file (reading its source),"+
		" %s, %.0f µs a request, against %.1f µs a round trip in a tight loop above.",
		fmtS(num(d, "own_run_per_file")), fmtS(num(d, "own_per_file")), strings.Join(parts, ", "), trips, fmtS(transport),
		transport/trips*1e6, rt)
	rp.w("")
}

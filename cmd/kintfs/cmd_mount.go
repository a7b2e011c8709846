package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"kintfs/fs"
	"kintfs/replica"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
)

// mountOptions are one mount invocation's flags.
type mountOptions struct {
	dev           bool
	devChainID    uint64
	poll          time.Duration
	allowOther    bool
	allowNonEmpty bool
	readOnly      bool
	xattrs        bool
	daemon        bool
	verbose       int
	logFile       string
	flushTimeout  time.Duration
	debugFuse     bool
	fileMode      string
	dirMode       string
	umask         string
	vaultModel    string
	uid, gid      int64
	opts          []string
}

var errMountBusy = errors.New("the mount is busy")

func init() {
	register(&command{
		name:  "mount",
		usage: "[--dev] [options] MOUNTPOINT",
		short: "mount the vault as a directory (--dev: on a local development chain)",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &mountOptions{}
			fs.BoolVar(&o.dev, "dev", false, "start or reuse the local development chain, create the vault and session key, then mount")
			fs.Uint64Var(&o.devChainID, "chain-id", 0, "with --dev: the dev chain's id, fixed when it is created (default 1337; 8453 lets tools bound to Base's id read the vault; it is still not Base)")
			fs.DurationVar(&o.poll, "poll", 30*time.Second, "how often to read the chain head for other machines' epochs")
			fs.BoolVar(&o.allowOther, "allow-other", false, "let other users use the mount (needs user_allow_other in /etc/fuse.conf)")
			fs.BoolVar(&o.allowNonEmpty, "allow-non-empty", false, "mount over a directory that is not empty")
			fs.BoolVar(&o.readOnly, "read-only", false, "mount with no way to change the vault")
			fs.BoolVar(&o.xattrs, "xattrs", true, "serve user.kint.* extended attributes (off: ls -l is faster; use .kint/ and the CLI)")
			fs.BoolVar(&o.daemon, "daemon", false, "run in the background; return once the mount answers")
			fs.CountVarP(&o.verbose, "verbose", "v", "log more: -v every background poll, -vv every FUSE request")
			fs.StringVar(&o.logFile, "log-file", "", "append the log to this file instead of stderr")
			fs.DurationVar(&o.flushTimeout, "flush-timeout", 60*time.Second, "how long unmounting may spend anchoring what is staged")
			fs.BoolVar(&o.debugFuse, "debug-fuse", false, "log every FUSE request")
			fs.StringVar(&o.fileMode, "file-mode", "0644", "the mode (octal) of files never given one by chmod or create")
			fs.StringVar(&o.dirMode, "dir-mode", "0755", "the mode (octal) of directories never given one by chmod")
			fs.StringVar(&o.vaultModel, "vault-model", "", "set and keep what the vault may anchor: kint or full (see kintfs vault-model); default: as kept")
			fs.StringVar(&o.umask, "umask", "", "permission bits to clear on every file, in octal (default 077 with --allow-other: rows 0600, only you; else 022)")
			fs.Int64Var(&o.uid, "uid", -1, "the user id that owns every file (default: the mounting user)")
			fs.Int64Var(&o.gid, "gid", -1, "the group id that owns every file (default: the mounting user's group)")
			fs.StringSliceVarP(&o.opts, "options", "o", nil, "mount options as in fstab, comma-separated: "+mountOptNames())
			return func(ctx context.Context, cio *cmdIO, args []string) error {
				over, err := applyMountOpts(fs, o.opts)
				if err != nil {
					return err
				}
				cio.set = cio.set.with(over)
				return runMount(ctx, cio, o, args)
			}
		},
	})
}

// mountRun is one mount as it starts, serves and stops: its options, its log and what it
// opened.
type mountRun struct {
	o                 *mountOptions
	dir, absDir       string
	fileMode, dirMode uint32
	umask             uint32
	logger            *log.Logger
	set               settings
	home              homedir.Home
	env               *vaultEnv
}

func (r *mountRun) say(format string, a ...any) { r.logger.Printf(format, a...) }

// replicaLog is the log of the replica's lines: failures always, what it anchors and pulls
// by default, routine polls at -v.
func (r *mountRun) replicaLog() *slog.Logger {
	min := slog.LevelInfo
	if r.o.verbose >= 1 {
		min = slog.LevelDebug
	}
	return newLineLog(func(line string) { r.logger.Print(line) }, min, "info: ")
}

// fail reports why the mount did not start: to a waiting --daemon parent, and to the log
// file, which is all a background start leaves behind.
func (r *mountRun) fail(err error) error {
	if r.o.logFile != "" {
		r.say("error: mount %s: %v", r.dir, err)
	}
	return reportReady(err)
}

// checkMountFlags refuses flags that do not go together or do not parse, before anything
// starts.
func checkMountFlags(o *mountOptions, args []string) (r *mountRun, err error) {
	if len(args) != 1 {
		return nil, usagef("mount takes one mountpoint")
	}
	if o.devChainID != 0 && !o.dev {
		return nil, usagef("--chain-id is for the development chain: use it with --dev")
	}
	if o.vaultModel != "" && o.vaultModel != vault.ModelKint && o.vaultModel != vault.ModelFull {
		return nil, usagef("--vault-model is kint or full, not %q", o.vaultModel)
	}
	r = &mountRun{o: o, dir: args[0]}
	if r.umask, err = parseUmask(o.umask, o.allowOther); err != nil {
		return nil, err
	}
	if r.fileMode, r.dirMode, err = parseModes(o.fileMode, o.dirMode); err != nil {
		return nil, err
	}
	for _, id := range []struct {
		name string
		v    int64
	}{{"uid", o.uid}, {"gid", o.gid}} {
		if id.v < -1 || id.v > 1<<32-2 {
			return nil, usagef("--%s %d: give a numeric id", id.name, id.v)
		}
	}
	if err := checkMountDir(r.dir, o.allowNonEmpty); err != nil {
		return nil, err
	}
	return r, nil
}

func runMount(ctx context.Context, cio *cmdIO, o *mountOptions, args []string) error {
	r, err := checkMountFlags(o, args)
	if err != nil {
		return err
	}
	if o.daemon && os.Getenv(readyFDEnv) == "" {
		return daemonize(cio.argv, cio.set.environ(), o.logFile)
	}
	logger, closeLog, err := openLog(o.logFile)
	if err != nil {
		return err
	}
	defer closeLog()
	r.logger = logger
	limitMemory()
	if stop := startCPUProfile(cio.set, r.say); stop != nil {
		defer stop()
	}
	if stop := startHeapProfile(cio.set, r.say); stop != nil {
		defer stop()
	}
	stopDev, err := r.prepare(ctx, cio)
	if err != nil {
		return r.fail(err)
	}
	defer stopDev()
	r.set = cio.set // with what --dev added
	if o.vaultModel != "" {
		if err := replica.SaveVaultModel(r.home, o.vaultModel); err != nil {
			return r.fail(err)
		}
	}
	restoreGC := collectOftenWhileLoading()
	r.env, err = openVault(ctx, cio, openOptions{dek: true, redial: true, readOnly: o.readOnly, log: r.replicaLog()})
	restoreGC(ctx)
	if err != nil {
		return r.fail(err)
	}
	defer r.env.Close()
	return r.serve(ctx, cio)
}

// prepare readies the mountpoint and the home: a dead mount on the directory cleared, no other
// mount of this home, with --dev the development chain started and the vault on it. The
// returned func stops what it started.
func (r *mountRun) prepare(ctx context.Context, cio *cmdIO) (stop func(), err error) {
	stop = func() {}
	if r.absDir, err = filepath.Abs(r.dir); err != nil {
		return stop, err
	}
	if err := clearStaleMount(r.dir, r.say); err != nil {
		return stop, err
	}
	if r.home, err = defaultHome(cio.set); err != nil {
		return stop, err
	}
	if _, err := r.home.Ensure(); err != nil {
		return stop, err
	}
	if err := refuseIfMounted(r.home); err != nil {
		return stop, err
	}
	if r.o.dev {
		if stop, err = devSetup(ctx, cio, r.home, r.o.devChainID, r.say); err != nil {
			return func() {}, err
		}
	}
	if r.o.allowOther && os.Getuid() != 0 {
		if err := checkUserAllowOther(); err != nil {
			return stop, err
		}
	}
	return stop, nil
}

// serve starts the worker, the FUSE server and the control socket, says the mount is ready,
// and returns once it is unmounted and the worker has flushed.
func (r *mountRun) serve(ctx context.Context, cio *cmdIO) error {
	e := r.env
	if e.client() == nil {
		r.say("offline: cannot reach the RPC %s; serving the local replica, changes stay staged; trying again at each poll", redactURL(e.vault.RPC))
	}
	r.startWorker()
	pulled := make(chan struct{})
	m, err := fs.Mount(r.dir, e.rep, fs.MountOptions{AllowOther: r.o.allowOther, ReadOnly: r.o.readOnly,
		AllowNonEmpty: r.o.allowNonEmpty, Xattrs: r.o.xattrs, FileMode: r.fileMode, DirMode: r.dirMode, Logger: r.logger,
		Debug: r.o.debugFuse || r.o.verbose >= 2, Umask: r.umask, UID: ownerID(r.o.uid, os.Getuid()), GID: ownerID(r.o.gid, os.Getgid()), Current: pulled,
		MaxCachedFiles: maxCachedFiles(r.set), TimeRequests: timeRequests(r.set)})
	if err != nil {
		_ = e.rep.StopWorker(context.Background())
		return r.fail(err)
	}
	// the mount's own context: what runs for the mount's lifetime stops with it
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctl, err := serveControl(mctx, r.set, r.home, e, r.absDir, m.Settle, r.say)
	if err != nil {
		_ = m.Unmount()
		_ = e.rep.StopWorker(context.Background())
		return r.fail(err)
	}
	defer ctl.Close()
	// Caught before anyone hears the mount is ready: a SIGTERM right after READY=1 must
	// flush and unmount, not kill.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	// The mount answers from here on; it is said to be ready once the start-up pull has
	// applied what the chain holds (or failed), so that a script that reads right after a
	// --daemon start or READY=1 sees every row.
	r.say("serving %s; pulling what the chain holds before saying it is ready", r.dir)
	ready := make(chan struct{})
	go func() {
		defer close(ready)
		state := r.initialPull(mctx, pulled)
		if mctx.Err() != nil {
			_ = reportReady(errors.New("unmounted before the start-up pull ended"))
			return
		}
		r.say("mounted %s (owner %s, tenant %q, chain %d): ready, %s", r.dir, e.vault.Owner.Hex(), e.vault.Tenant, e.vault.ChainID, state)
		reportReadyState(state)
		sdNotify("READY=1")
		sdNotify("STATUS=" + state)
		if showNextSteps(r.o, os.Stderr) {
			fmt.Fprint(os.Stderr, nextSteps(r.absDir, kintfsCommand(cio.set), cio.set.duration("KINT_QUIET_SECONDS")))
		}
	}()
	r.waitUnmounted(m, sig)
	// the initial pull, if it still runs, ends with the mount, before the worker flushes
	cancel()
	<-ready
	r.stopWorker()
	return nil
}

// startWorker starts the replica's background worker: the quiet delay and size trigger of
// sealing, the poll, the websocket.
func (r *mountRun) startWorker() {
	wsURL := liveURL(r.set, r.env.vault)
	r.env.rep.StartWorker(replica.WorkerOptions{
		Quiet:       r.set.duration("KINT_QUIET_SECONDS"),
		SizeTrigger: r.set.positive("KINT_SIZE_TRIGGER_BYTES"),
		Poll:        r.o.poll,
		// other machines' epochs: at once by websocket when there is one, else at each poll
		Subscribe: liveSubscriber(r.env.vault, wsURL),
		LiveName:  redactURL(wsURL),
		// history under a snapshot fills in after the start-up pull
		BackfillAfter: r.set.duration("KINT_BACKFILL_START_SECONDS"),
	})
}

// initialPull catches up with other machines while the mount already answers (a lookup that
// misses waits for it), closes pulled when it is done, and says where it left the mount: current
// at a seq, offline, or stopped and why. Offline at the start, the worker's polls reconnect.
func (r *mountRun) initialPull(ctx context.Context, pulled chan<- struct{}) (state string) {
	defer close(pulled)
	if r.env.rep.Client() == nil {
		return fmt.Sprintf("offline: cannot reach the RPC %s; serving the local replica (%s), changes stay staged", redactURL(r.env.vault.RPC), r.mirrorState())
	}
	err := r.env.rep.Control(ctx, "refresh")
	switch {
	case err == nil:
		return "current: " + r.mirrorState()
	case replica.Offline(err):
		return fmt.Sprintf("offline: %v; serving the local replica (%s), changes stay staged", err, r.mirrorState())
	case ctx.Err() != nil:
		return "stopped"
	}
	r.say("warn: initial pull: %v", err)
	return fmt.Sprintf("not current: the start-up pull stopped (%v); serving the local replica (%s)", oneLine(err.Error()), r.mirrorState())
}

// mirrorState names the newest epoch applied here.
func (r *mountRun) mirrorState() string {
	h, err := r.env.rep.MirrorHead()
	switch {
	case err != nil:
		return "mirror unknown: " + err.Error()
	case h.Seq == 0:
		return "no epoch yet"
	}
	return fmt.Sprintf("at seq %d, block %d", h.Seq, h.Block)
}

// waitUnmounted returns once the mount is gone: unmounted from outside, or by this process on
// SIGINT or SIGTERM (retried on the next signal while it is busy).
func (r *mountRun) waitUnmounted(m *fs.Mounted, sig <-chan os.Signal) {
	unmounted := make(chan struct{})
	go func() { m.Wait(); close(unmounted) }()
	for {
		select {
		case s := <-sig:
			if r.env.rep.NoExitFlush() {
				r.say("%v: unmounting without anchoring (no-flush)", s)
			} else {
				r.say("%v: flushing and unmounting", s)
			}
			sdNotify("STOPPING=1")
			if err := m.Unmount(); err != nil {
				r.say("warn: unmount %s: %s%s", r.dir, oneLine(err.Error()), holders(r.absDir))
				continue
			}
			<-unmounted
			return
		case <-unmounted:
			r.say("%s was unmounted", r.dir)
			return
		}
	}
}

// stopWorker flushes what is staged, bounded by --flush-timeout, and says what stays pending.
func (r *mountRun) stopWorker() {
	fctx, cancel := context.WithTimeout(context.Background(), r.o.flushTimeout)
	defer cancel()
	if err := r.env.rep.StopWorker(fctx); err != nil {
		r.say("flush on unmount: %v", err)
	}
	if st, err := r.env.rep.Status(); err == nil {
		if n := st.StagedRows + st.StagedDels; n > 0 && r.env.rep.NoExitFlush() {
			r.say("pending: no-flush: %d staged rows and deletions (%d held) were not anchored; they stay in %s and will be anchored by the next mount or kintfs push", n, len(st.Held), r.home)
		} else if n > 0 {
			r.say("pending: %d staged rows and deletions (%d held) stay in %s and will be anchored by the next mount or kintfs push", n, len(st.Held), r.home)
		} else {
			r.say("pending: nothing; every change is anchored")
		}
	}
}

// mountMemoryLimit is the mount's soft limit on the memory the Go runtime manages. The live
// heap of a mount is mostly the tree index (a few hundred bytes a row) and badger's buffers;
// without a limit the collector lets garbage grow as large again before it runs, which a
// mount of a hundred thousand rows would spend on nothing.
const mountMemoryLimit = 180 << 20

// limitMemory sets mountMemoryLimit, unless GOMEMLIMIT already says otherwise.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(mountMemoryLimit)
	}
}

// loadGCPercent is the collector's target while a mount opens its vault. Loading the tree index
// decodes a record per row and keeps a small part of it, so at the default target of 100 the
// heap grows to twice the index before each collection: 144 MB at the peak for the 78 MB
// index of 100,000 rows, against 107 MB at 25, for 0.04 s more of collecting. Later, with a
// smaller index, a vault of 100,000 rows and 9,000 epochs reopened right after it was written
// (badger compacting beside the load, building tables in buffers of megabytes) peaked at
// 82-90 MB at 25 and 75-79 MB at 10, coming up in 2.0-2.2 s and 2.2-2.4 s.
const loadGCPercent = 10

// mountHeadroom is about how much garbage the heap of a mount with a large vault gathers
// before the collector runs (see mountGCPercent). With the rss step of scripts/bench.sh (a
// live heap of about 78 MB while its flush runs), 12 MB peaked (VmHWM) at 119.6-120.5 MB in
// four runs of two versions of the code, its flush of 10,000 rows taking 8.1-9.6 s; 10 MB at
// 118.3 and 118.4 MB, the flush taking 8.5 and 8.6 s.
const mountHeadroom = 10 << 20

// mountGCPercent is the collector's target of a mounted vault, once it is open, from live, the
// heap the last collection left live. Most of what a mount allocates is short-lived (the pages FUSE
// requests copy, the documents a flush seals), and most of what stays is the tree index, kept
// until the unmount. The collector lets garbage grow to live x percent / 100 before it runs,
// so at one fixed percent the memory spent on garbage grows with the tree. The target is 50
// for a small vault and goes down to 10 as the index grows, keeping the headroom near
// mountHeadroom. Measured with the rss step of scripts/bench.sh:
//   - 20,000 rows, every file read, then 10,000 rewritten and flushed: a peak (VmHWM) of 180 MB
//     at 100 and 148 MB at 50, the flush taking 79 s and 81 s under the same load;
//   - 100,000 rows, the same: 210 and 218 MB at 50, 200 MB at 35, 193 MB at 25; the walk of all
//     the files took 14.5 to 14.9 s and the flush 7.3 to 8.9 s at each;
//   - later, with a smaller index (a live heap of about 80 MB while the flush runs): 142 to 146
//     MB at 25, 136 and 141 at 15, 129 at 10, and the process's CPU time for the whole step
//     49 to 53 s at 25 and 47 to 49 s at 15 and 10 (the collections added are within the noise).
func mountGCPercent(live uint64) int {
	p := mountHeadroom * 100 / max(live, 1)
	return int(min(max(p, minMountGCPercent), maxMountGCPercent))
}

// The bounds of mountGCPercent.
const (
	minMountGCPercent = 10
	maxMountGCPercent = 50
)

// setMountGCPercent sets mountGCPercent of the live heap.
func setMountGCPercent() { debug.SetGCPercent(mountGCPercent(liveHeap())) }

// liveHeap is the heap the last collection left live, in bytes (0 when unknown).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// collectOftenWhileLoading sets loadGCPercent, unless GOGC says otherwise, and returns the
// func that hands the load's garbage back to the system, sets mountGCPercent of the heap left
// live, and keeps the target following the live heap until ctx ends.
func collectOftenWhileLoading() (restore func(ctx context.Context)) {
	if os.Getenv("GOGC") != "" {
		return func(context.Context) {}
	}
	debug.SetGCPercent(loadGCPercent)
	return func(ctx context.Context) {
		debug.FreeOSMemory() // a collection first: what stays live is the vault's index
		setMountGCPercent()
		go followLiveHeap(ctx)
	}
}

// followLiveHeap sets mountGCPercent of the live heap after every collection until ctx ends:
// a vault that grows by the files written through the mount gets the target of its size, not
// of the size it was opened at (the mount that populates 100,000 rows from an empty vault kept
// 50 throughout without it), and a flush whose live heap grows while it runs keeps the
// headroom near mountHeadroom. Set every 10 s instead, the target a flush of 10,000 rows of a
// 100,000-row mount ran under was set at a live heap of about 52 MB, 23, which let the garbage
// grow to 17 MB as the live heap reached 75 MB.
func followLiveHeap(ctx context.Context) {
	collected := make(chan struct{}, 1)
	watch := func() {
		// a cleanup runs once the collection that finds the object unreachable is done
		runtime.AddCleanup(new([32]byte), func(chan struct{}) {
			select {
			case collected <- struct{}{}:
			default:
			}
		}, collected)
	}
	watch()
	for {
		select {
		case <-ctx.Done():
			return
		case <-collected:
			setMountGCPercent()
			watch()
		}
	}
}

// startCPUProfile writes a CPU profile of the whole mount to $KINTFS_CPUPROFILE when it is set
// (for benchmarks); the returned func stops it and is nil when profiling is off.
func startCPUProfile(set settings, say func(string, ...any)) func() {
	path := set.given("KINTFS_CPUPROFILE")
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		say("cpu profile: %v", err)
		return nil
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		say("cpu profile: %v", err)
		f.Close()
		return nil
	}
	say("writing a CPU profile to %s", path)
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			say("cpu profile: %v", err)
		}
	}
}

// startHeapProfile writes heap profiles to $KINTFS_MEMPROFILE when it is set (for
// benchmarks): one to PATH.N on each SIGUSR1, and one to PATH when the returned func runs at
// exit; it is nil when profiling is off.
func startHeapProfile(set settings, say func(string, ...any)) func() {
	path := set.given("KINTFS_MEMPROFILE")
	if path == "" {
		return nil
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		for n := 1; ; n++ {
			select {
			case <-usr1:
				writeHeapProfile(fmt.Sprintf("%s.%d", path, n), say)
			case <-done:
				return
			}
		}
	}()
	say("heap profiles: %s (at exit) and %s.N (on SIGUSR1)", path, path)
	return func() {
		signal.Stop(usr1)
		close(done)
		writeHeapProfile(path, say)
	}
}

func writeHeapProfile(path string, say func(string, ...any)) {
	f, err := os.Create(path)
	if err != nil {
		say("heap profile: %v", err)
		return
	}
	defer f.Close()
	runtime.GC() // the profile's in-use figures are as of the last collection
	if err := pprof.WriteHeapProfile(f); err != nil {
		say("heap profile: %v", err)
	}
}

// openLog opens the mount's log: logFile, appended to, else stderr.
func openLog(logFile string) (*log.Logger, func(), error) {
	var w io.Writer = os.Stderr
	closeFn := func() {}
	if logFile != "" {
		f, err := os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, nil, err
		}
		w, closeFn = f, func() { f.Close() }
	}
	return log.New(w, "kintfs: ", log.LstdFlags), closeFn, nil
}

// checkMountDir refuses, before anything contacts the chain, a mountpoint that is missing,
// not a directory, or not empty (unless allowNonEmpty). A dead mount (ENOTCONN) passes: it
// is cleared later. So does a directory where a kintfs mount answers: the refusal names it.
func checkMountDir(dir string, allowNonEmpty bool) error {
	if isDeadMount(dir) {
		return nil // before stat, which a hung mount never answers
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return nil
	case errors.Is(err, os.ErrNotExist):
		return usagef("mountpoint %s: no such file or directory: create it first (mkdir -p %s)", dir, dir)
	case err != nil:
		return usagef("mountpoint %s: %v", dir, err)
	case !st.IsDir():
		return usagef("mountpoint %s is not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, ".kint", "status")); err == nil {
		return nil
	}
	if err := fs.CheckMountpoint(dir, allowNonEmpty); err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// ownerID is the owner --uid or --gid asks for (-1: the mounting user's, def).
func ownerID(v int64, def int) uint32 {
	if v < 0 {
		return uint32(def)
	}
	return uint32(v)
}

// isDeadMount: dir holds a dead or hung mount, which clearStaleMount clears once the arguments
// are checked (stat may answer from the kernel's cache right after a crash, or never on a hung one).
func isDeadMount(dir string) bool {
	why, _ := deadMount(dir)
	return why != ""
}

// clearStaleMount detects a dead mount left on dir, from the mount table and the connection
// (not from stat, which the kernel may answer from its cache right after a crash), and
// clears it, or says how.
func clearStaleMount(dir string, say func(string, ...any)) error {
	why, conn := deadMount(dir)
	if why == "" {
		return nil
	}
	say("%s is a dead mount (%s); clearing it", dir, why)
	if err := clearDeadMount(dir, conn); err != nil {
		return fmt.Errorf("%s is a dead mount and could not be cleared (%v): run  %s", dir, err, lazyUnmountHint(dir))
	}
	return nil
}

// sdNotify tells systemd (Type=notify) about the service's state.
func sdNotify(state string) {
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		return
	}
	if strings.HasPrefix(sock, "@") {
		sock = "\x00" + sock[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = conn.Write([]byte(state))
}

// checkUserAllowOther: FUSE lets a non-root user's mount admit other users only when
// /etc/fuse.conf says user_allow_other.
func checkUserAllowOther() error {
	b, err := os.ReadFile("/etc/fuse.conf")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(line) == "user_allow_other" {
				return nil
			}
		}
	}
	return fmt.Errorf("--allow-other needs user_allow_other in /etc/fuse.conf; add it as root with:  echo user_allow_other >> /etc/fuse.conf")
}

// parseModes reads --file-mode and --dir-mode: octal permission bits, 0 to 0777.
func parseModes(file, dir string) (fileMode, dirMode uint32, err error) {
	parse := func(flag, s string) (uint32, error) {
		n, err := strconv.ParseUint(s, 8, 32)
		if err != nil || n > 0o777 || n == 0 {
			return 0, usagef("--%s %q: give permission bits in octal, such as 0640", flag, s)
		}
		return uint32(n), nil
	}
	if fileMode, err = parse("file-mode", file); err != nil {
		return 0, 0, err
	}
	if dirMode, err = parse("dir-mode", dir); err != nil {
		return 0, 0, err
	}
	return fileMode, dirMode, nil
}

// parseUmask reads --umask: octal permission bits, "" for the default, which depends on
// --allow-other.
func parseUmask(s string, allowOther bool) (uint32, error) {
	if s == "" {
		if allowOther {
			return 0o077, nil // other users are let in to the mount, not to the plaintext
		}
		return 0o022, nil
	}
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o777 {
		return 0, usagef("--umask %q: give octal permission bits, such as 077 or 022", s)
	}
	return uint32(n), nil
}

// timeRequests is KINTFS_TIME_REQUESTS as fs.MountOptions takes it: on only when 1.
func timeRequests(set settings) bool { return set.given("KINTFS_TIME_REQUESTS") == "1" }

// maxCachedFiles is KINTFS_MAX_CACHED_FILES as fs.MountOptions takes it: 0 there is the
// default, less than 0 no bound.
func maxCachedFiles(set settings) int {
	if set.given("KINTFS_MAX_CACHED_FILES") == "0" {
		return -1
	}
	return int(set.positive("KINTFS_MAX_CACHED_FILES"))
}

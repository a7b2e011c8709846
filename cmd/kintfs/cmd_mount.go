package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"kintfs/fs"
	"kintfs/replica"
	"kintfs/replica/homedir"
)

var mountOpts struct {
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
}

var errMountBusy = errors.New("the mount is busy")

func init() {
	register(&command{
		name:  "mount",
		usage: "[--dev] [options] MOUNTPOINT",
		short: "mount the vault as a directory (--dev: on a local development chain)",
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&mountOpts.dev, "dev", false, "start or reuse the local development chain, create the vault and session key, then mount")
			fs.Uint64Var(&mountOpts.devChainID, "chain-id", 0, "with --dev: the dev chain's id, fixed when it is created (default 1337; 8453 lets tools bound to Base's id read the vault; it is still not Base)")
			fs.DurationVar(&mountOpts.poll, "poll", 30*time.Second, "how often to read the chain head for other machines' epochs")
			fs.BoolVar(&mountOpts.allowOther, "allow-other", false, "let other users use the mount (needs user_allow_other in /etc/fuse.conf)")
			fs.BoolVar(&mountOpts.allowNonEmpty, "allow-non-empty", false, "mount over a directory that is not empty")
			fs.BoolVar(&mountOpts.readOnly, "read-only", false, "mount with no way to change the vault")
			fs.BoolVar(&mountOpts.xattrs, "xattrs", true, "serve user.kint.* extended attributes (off: ls -l is faster; use .kint/ and the CLI)")
			fs.BoolVar(&mountOpts.daemon, "daemon", false, "run in the background; return once the mount answers")
			fs.CountVarP(&mountOpts.verbose, "verbose", "v", "log more: -v every background poll, -vv every FUSE request")
			fs.StringVar(&mountOpts.logFile, "log-file", "", "append the log to this file instead of stderr")
			fs.DurationVar(&mountOpts.flushTimeout, "flush-timeout", 60*time.Second, "how long unmounting may spend anchoring what is staged")
			fs.BoolVar(&mountOpts.debugFuse, "debug-fuse", false, "log every FUSE request")
			fs.StringVar(&mountOpts.fileMode, "file-mode", "0644", "the mode (octal) of files never given one by chmod or create")
			fs.StringVar(&mountOpts.dirMode, "dir-mode", "0755", "the mode (octal) of directories never given one by chmod")
			fs.StringVar(&mountOpts.umask, "umask", "", "permission bits to clear on every file, in octal (default 077 with --allow-other: rows 0600, only you; else 022)")
		},
		run: runMount,
	})
}

func runMount(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return usagef("mount takes one mountpoint")
	}
	if mountOpts.devChainID != 0 && !mountOpts.dev {
		return usagef("--chain-id is for the development chain: use it with --dev")
	}
	if _, err := parseUmask(mountOpts.umask); err != nil {
		return err
	}
	if _, _, err := parseModes(mountOpts.fileMode, mountOpts.dirMode); err != nil {
		return err
	}
	dir := args[0]
	if mountOpts.daemon && os.Getenv(readyFDEnv) == "" {
		return daemonize()
	}
	logger, closeLog, err := openLog()
	if err != nil {
		return err
	}
	defer closeLog()
	say := func(format string, a ...any) { logger.Printf(format, a...) }
	// the replica's lines: failures always, what it anchors and pulls by default, routine
	// polls at -v
	replicaLog := func(format string, a ...any) {
		switch {
		case strings.HasPrefix(format, "warn: "):
			logger.Printf(format, a...)
		case strings.HasPrefix(format, "debug: "):
			if mountOpts.verbose >= 1 {
				logger.Printf(format, a...)
			}
		default:
			logger.Printf("info: "+format, a...)
		}
	}
	limitMemory()
	if stop := startCPUProfile(say); stop != nil {
		defer stop()
	}
	if stop := startHeapProfile(say); stop != nil {
		defer stop()
	}
	// fail reports why the mount did not start: to a waiting --daemon parent, and to the log
	// file, which is all a background start leaves behind
	fail := func(err error) error {
		if mountOpts.logFile != "" {
			say("error: mount %s: %v", dir, err)
		}
		return reportReady(err)
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return fail(err)
	}
	if err := clearStaleMount(dir, say); err != nil {
		return fail(err)
	}
	home, err := homedir.DefaultHome()
	if err != nil {
		return fail(err)
	}
	if _, err := home.Ensure(); err != nil {
		return fail(err)
	}
	if err := refuseIfMounted(home); err != nil {
		return fail(err)
	}
	if mountOpts.dev {
		dc, err := devSetup(ctx, home, mountOpts.devChainID, say)
		if err != nil {
			return fail(err)
		}
		if dc != nil {
			defer dc.Close()
		}
	}
	fileMode, dirMode, _ := parseModes(mountOpts.fileMode, mountOpts.dirMode)
	if mountOpts.allowOther && os.Getuid() != 0 {
		if err := checkUserAllowOther(); err != nil {
			return fail(err)
		}
	}
	e, err := openVault(ctx, openOptions{dek: true, redial: true, readOnly: mountOpts.readOnly, logf: replicaLog})
	if err != nil {
		return fail(err)
	}
	defer e.Close()
	if e.client() == nil {
		say("offline: cannot reach %s; serving the local replica, changes stay staged; trying again at each poll", e.vault.RPC)
	}
	wsURL := liveURL(e.vault)
	e.rep.StartWorker(replica.WorkerOptions{
		Quiet:       envDuration("KINT_QUIET_SECONDS", 300*time.Second),
		SizeTrigger: envInt("KINT_SIZE_TRIGGER_BYTES", 32768),
		Poll:        mountOpts.poll,
		// other machines' epochs: at once by websocket when there is one, else at each poll
		Subscribe: liveSubscriber(e.vault, wsURL),
		LiveName:  redactURL(wsURL),
		// history under a snapshot fills in after the start-up pull
		BackfillAfter: envDuration("KINT_BACKFILL_START_SECONDS", 2*time.Second),
	})
	m, err := fs.Mount(dir, e.rep, fs.MountOptions{AllowOther: mountOpts.allowOther, ReadOnly: mountOpts.readOnly,
		AllowNonEmpty: mountOpts.allowNonEmpty, Xattrs: mountOpts.xattrs, FileMode: fileMode, DirMode: dirMode, Logger: logger,
		Debug: mountOpts.debugFuse || mountOpts.verbose >= 2, Umask: mountUmask()})
	if err != nil {
		_ = e.rep.StopWorker(context.Background())
		return fail(err)
	}
	ctl, err := serveControl(home, e, absDir, m.Settle, say)
	if err != nil {
		_ = m.Unmount()
		_ = e.rep.StopWorker(context.Background())
		return fail(err)
	}
	defer ctl.Close()
	// Caught before anyone hears the mount is ready: a SIGTERM right after READY=1 must
	// flush and unmount, not kill.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	say("mounted %s (owner %s, tenant %q, chain %d)", dir, e.vault.Owner.Hex(), e.vault.Tenant, e.vault.ChainID)
	_ = reportReady(nil)
	sdNotify("READY=1")
	// catch up with other machines without holding up the mount; offline, this is the first
	// try to reconnect (the worker logs what it finds)
	go func() {
		if err := e.rep.Control(context.Background(), "refresh"); err != nil && !replica.Offline(err) {
			say("warn: initial pull: %v", err)
		}
	}()

	unmounted := make(chan struct{})
	go func() { m.Wait(); close(unmounted) }()
	for done := false; !done; {
		select {
		case s := <-sig:
			say("%v: flushing and unmounting", s)
			sdNotify("STOPPING=1")
			if err := m.Unmount(); err != nil {
				say("warn: unmount %s: %s%s", dir, oneLine(err.Error()), holders(absDir))
				continue
			}
			<-unmounted
			done = true
		case <-unmounted:
			say("%s was unmounted", dir)
			done = true
		}
	}
	fctx, cancel := context.WithTimeout(context.Background(), mountOpts.flushTimeout)
	defer cancel()
	ferr := e.rep.StopWorker(fctx)
	if ferr != nil {
		say("flush on unmount: %v", ferr)
	}
	if st, err := e.rep.Status(); err == nil {
		if n := st.StagedRows + st.StagedDels; n > 0 {
			say("pending: %d staged rows and deletions (%d held) stay in %s and will be anchored by the next mount or kintfs push", n, len(st.Held), home)
		} else {
			say("pending: nothing; every change is anchored")
		}
	}
	return nil
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

// startCPUProfile writes a CPU profile of the whole mount to $KINTFS_CPUPROFILE when it is set
// (for benchmarks); the returned func stops it and is nil when profiling is off.
func startCPUProfile(say func(string, ...any)) func() {
	path := os.Getenv("KINTFS_CPUPROFILE")
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
func startHeapProfile(say func(string, ...any)) func() {
	path := os.Getenv("KINTFS_MEMPROFILE")
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

func openLog() (*log.Logger, func(), error) {
	var w io.Writer = os.Stderr
	closeFn := func() {}
	if mountOpts.logFile != "" {
		f, err := os.OpenFile(mountOpts.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, nil, err
		}
		w, closeFn = f, func() { f.Close() }
	}
	return log.New(w, "kintfs: ", log.LstdFlags), closeFn, nil
}

// clearStaleMount detects a dead mount left on dir and clears it, or says how.
func clearStaleMount(dir string, say func(string, ...any)) error {
	_, err := os.Stat(dir)
	if !errors.Is(err, syscall.ENOTCONN) {
		return nil
	}
	say("%s is a dead mount (transport endpoint is not connected); clearing it", dir)
	if out, err := fuseUnmountLazy(dir); err != nil {
		return fmt.Errorf("%s is a dead mount and could not be cleared (%s): run  %s", dir, strings.TrimSpace(string(out)), lazyUnmountHint(dir))
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

// parseUmask reads --umask: octal permission bits, "" for the default.
func parseUmask(s string) (uint32, error) {
	if s == "" {
		if mountOpts.allowOther {
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

// mountUmask is --umask, checked at the start of runMount.
func mountUmask() uint32 {
	n, _ := parseUmask(mountOpts.umask)
	return n
}

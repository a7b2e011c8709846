package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"kintfs/fs"
	"kintfs/replica/homedir"
)

type unmountOptions struct {
	timeout time.Duration
	noFlush bool
}

func init() {
	register(&command{
		name:  "unmount",
		usage: "[--timeout 60s] [--no-flush] MOUNTPOINT",
		short: "anchor what is staged, then unmount",
		setup: func(fs *pflag.FlagSet) runFunc {
			o := &unmountOptions{}
			fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "how long the flush and the unmount may take in all, from the call")
			fs.BoolVar(&o.noFlush, "no-flush", false, "unmount without anchoring first (staged rows stay staged)")
			return func(ctx context.Context, cio *cmdIO, args []string) error { return runUnmount(ctx, cio, o, args) }
		},
	})
}

func runUnmount(ctx context.Context, cio *cmdIO, o *unmountOptions, args []string) error {
	if len(args) != 1 {
		return usagef("unmount takes one mountpoint")
	}
	deadline := time.Now().Add(o.timeout)
	dir := resolveMountpoint(args[0])
	if !isKintfsMount(dir) {
		return usagef("%s is not a kintfs mount (nothing to unmount; %s lists what is mounted)", dir, mountsTable)
	}
	var flushErr error
	if o.noFlush {
		// the mount process anchors on its way out unless told not to
		if err := mountCommand(ctx, cio, dir, "no-flush", time.Until(deadline), o.timeout); err != nil {
			return fmt.Errorf("%s was not unmounted: telling the mount not to flush failed: %w", dir, err)
		}
	} else {
		flushErr = mountCommand(ctx, cio, dir, "flush", time.Until(deadline), o.timeout)
	}
	for {
		busy, err := fuseUnmount(dir)
		if err == nil {
			break
		}
		if busy && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if o.noFlush {
			// still mounted: its later exit (SIGTERM, fusermount3 -u) flushes as before
			_ = mountCommand(context.Background(), cio, dir, "flush-on-exit", 5*time.Second, 5*time.Second)
		}
		if !busy {
			return err
		}
		return fmt.Errorf("%w: %s is still in use after %s%s", errMountBusy, dir, o.timeout, holders(dir))
	}
	if flushErr != nil {
		return fmt.Errorf("unmounted %s, but the flush failed: %w; the staged rows stay staged for the next mount or kintfs push", dir, flushErr)
	}
	return nil
}

// resolveMountpoint is the absolute path of dir with its symlinks resolved, as /proc/mounts
// names it; a dead mount cannot be resolved and keeps its absolute path.
func resolveMountpoint(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	if r, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(r, filepath.Base(abs))
	}
	return abs
}

// mountCommand runs the ctl command cmd (flush, no-flush, flush-on-exit) in the mount at dir,
// bounded by timeout: through the mount's socket when it is this KINT_HOME's mount (the
// caller then holds nothing open on the mount and may stop waiting), else by writing it to
// its control file. total is --timeout, which the messages name.
func mountCommand(ctx context.Context, cio *cmdIO, dir, cmd string, timeout, total time.Duration) error {
	if timeout <= 0 {
		return fmt.Errorf("not finished after %s", total)
	}
	if home, err := defaultHome(cio.set); err == nil {
		if at, ok := mountedAt(home); ok && at == dir {
			return commandBySocket(ctx, cio, home, cmd, timeout, total)
		}
	}
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(filepath.Join(dir, ".kint", "ctl"), os.O_WRONLY, 0)
		if err != nil {
			done <- err
			return
		}
		_, err = f.WriteString(cmd + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	select {
	case err := <-done:
		return ctlExitError(err)
	case <-time.After(timeout):
		return fmt.Errorf("not finished after %s", total)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func commandBySocket(ctx context.Context, cio *cmdIO, home homedir.Home, cmd string, timeout, total time.Duration) error {
	conn, err := net.DialTimeout("unix", home.Path(mountSocket), 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	go func() { <-ctx.Done(); conn.Close() }()
	var reply forwardReply
	if err := json.NewEncoder(conn).Encode(forwardRequest{Query: cmd}); err != nil {
		return err
	}
	dec := json.NewDecoder(conn)
	pp := newProgressPrinter(cio.err)
	defer pp.end()
	for {
		reply = forwardReply{}
		if err := dec.Decode(&reply); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return exitCodeError{code: exitFailure, msg: fmt.Sprintf("not finished after %s (the mount goes on anchoring while it stops)", total)}
			}
			return err
		}
		if reply.Progress == nil {
			break
		}
		pp.show(*reply.Progress) // the flush's epochs, as the mount anchors them
	}
	if reply.Code != exitOK {
		return exitCodeError{code: reply.Code, msg: reply.Err}
	}
	return nil
}

// ctlExitError gives a failed ctl write the exit code the CLI gives the same refusal: its
// errno read back as the cause it was answered for.
func ctlExitError(err error) error {
	var en syscall.Errno
	if err == nil || !errors.As(err, &en) {
		return err
	}
	code, ok := exitCodes[fs.KindOfErrno(en)]
	switch {
	case en == syscall.EROFS:
		return nil // a read-only mount: nothing to anchor
	case en == syscall.ENOTCONN:
		code, ok = exitRefused, true // the mount died under the write: try again once it is back
	}
	if !ok {
		return err
	}
	return exitCodeError{code: code, msg: err.Error()}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")), " ")
}

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

var unmountOpts struct {
	timeout time.Duration
	noFlush bool
}

func init() {
	register(&command{
		name:  "unmount",
		usage: "[--timeout 60s] [--no-flush] MOUNTPOINT",
		short: "anchor what is staged, then unmount",
		flags: func(fs *pflag.FlagSet) {
			fs.DurationVar(&unmountOpts.timeout, "timeout", 60*time.Second, "how long the flush may take before unmounting anyway")
			fs.BoolVar(&unmountOpts.noFlush, "no-flush", false, "unmount without anchoring first (staged rows stay staged)")
		},
		run: runUnmount,
	})
}

func runUnmount(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return usagef("unmount takes one mountpoint")
	}
	dir, err := filepath.Abs(args[0])
	if err != nil {
		return err
	}
	if !unmountOpts.noFlush {
		if err := flushMount(ctx, dir, unmountOpts.timeout); err != nil {
			fmt.Fprintf(errw(ctx), "kintfs unmount: flush: %v (staged rows stay staged)\n", err)
		}
	}
	out, err := exec.Command("fusermount3", "-u", dir).CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if strings.Contains(msg, "busy") {
			return fmt.Errorf("%w: %s%s", errMountBusy, msg, holders(dir))
		}
		return fmt.Errorf("fusermount3 -u %s: %s", dir, msg)
	}
	return nil
}

// flushMount writes flush to the mount's control file, bounded by timeout.
func flushMount(ctx context.Context, dir string, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(filepath.Join(dir, ".kint", "ctl"), os.O_WRONLY, 0)
		if err != nil {
			done <- err
			return
		}
		_, err = f.WriteString("flush\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("not finished after %s", timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

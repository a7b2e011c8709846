// Command kintfs mounts a kint memory vault, anchored on Base, as a directory.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"

	"kintfs/replica"
)

// Exit codes, kint's plus the mount's own.
const (
	exitOK        = 0
	exitFailure   = 1 // an unexpected fault (I/O, a crashed dependency)
	exitUsage     = 2 // usage or refusal
	exitKey       = 3 // the data key or session key is missing or expired
	exitMoved     = 4 // the chain moved, or a fork
	exitRefused   = 5 // another push or pull refusal
	exitStaleRPC  = 6 // a stale or lying RPC
	exitMountBusy = 7 // the mount is busy and could not be unmounted
)

// command is one subcommand: its flags and what it runs.
type command struct {
	name  string
	usage string // argument synopsis
	short string
	// setup registers the flags into options of this one invocation and returns what runs
	// with them: two runs in one process (commands a mount answers side by side, a status
	// while a push is running) never share options.
	setup func(fs *pflag.FlagSet) runFunc
	run   runFunc // a command without flags
}

type runFunc func(ctx context.Context, cio *cmdIO, args []string) error

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// usageError is a mistake in how a command was called.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitCodeError carries an exit code decided elsewhere: a background mount's, passed
// through by the parent.
type exitCodeError struct {
	code  int
	msg   string
	quiet bool // the message was printed already (by the mount that ran the command)
}

func (e exitCodeError) Error() string { return e.msg }

func main() {
	// Every file kintfs creates is its user's alone: badger creates its tables and value logs
	// 0666, which the usual umask would leave readable by all, and KINT_HOME is 0600 throughout.
	syscall.Umask(0o077)
	if filepath.Base(os.Args[0]) == "mount.kintfs" {
		os.Exit(runFstab(os.Args[1:]))
	}
	os.Exit(run(os.Args[1:]))
}

func run(argv []string) int { return runWith(envSettings(), argv) }

// runWith runs one command with the settings main read, once.
func runWith(set settings, argv []string) int {
	return runIO(context.Background(), argv, &cmdIO{out: os.Stdout, err: os.Stderr, set: set})
}

// runIO runs one command writing to io; io.env is set when it runs inside a mount.
func runIO(ctx context.Context, argv []string, cio *cmdIO) int {
	if cio.env == nil {
		cio.argv = argv
	}
	if cio.set.vals == nil {
		cio.set = envSettings()
	}
	if code, done := runBuiltin(argv, cio); done {
		return code
	}
	c, err := lookupCommand(argv[0])
	if err != nil {
		fmt.Fprintf(cio.err, "kintfs: %v\n", err)
		return exitUsage
	}
	fl, runc := c.flagSet(cio.out)
	if err := fl.Parse(argv[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintln(cio.err, flagParseError(c, fl, err))
		return exitUsage
	}
	if cio.env == nil && forwarded[c.name] {
		if reply, ok := forward(cio.set, argv); ok {
			fmt.Fprint(cio.out, reply.Out)
			fmt.Fprint(cio.err, reply.Err)
			return reply.Code
		}
	}
	if cio.env == nil && c.name != "mount" && c.name != "devchain" { // those handle signals themselves
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	err = runc(ctx, cio, fl.Args())
	if err == nil {
		return exitOK
	}
	if ce := (exitCodeError{}); !errors.As(err, &ce) || !ce.quiet {
		fmt.Fprintf(cio.err, "kintfs %s: %v\n", c.name, err)
	}
	return exitCode(err)
}

// runBuiltin answers no command (the help, on stderr, exit 2), --help and --version; done
// is false for any other argv.
func runBuiltin(argv []string, cio *cmdIO) (code int, done bool) {
	switch {
	case len(argv) == 0:
		printUsage(cio.err)
		return exitUsage, true
	case argv[0] == "-h" || argv[0] == "--help":
		printUsage(cio.out)
		return exitOK, true
	case argv[0] == "--version":
		fmt.Fprint(cio.out, versionText())
		return exitOK, true
	}
	return 0, false
}

// flagSet is a new flag set for one invocation of c, its help (--help) written to out, and
// what runs with the options it parses into.
func (c *command) flagSet(out io.Writer) (*pflag.FlagSet, runFunc) {
	fl := pflag.NewFlagSet("kintfs "+c.name, pflag.ContinueOnError)
	fl.SortFlags = false
	runc := c.run
	if c.setup != nil {
		runc = c.setup(fl)
	}
	fl.SetOutput(out)
	fl.Usage = func() { writeCommandHelp(out, c) }
	return fl, runc
}

// exitCodes gives each cause (replica.KindOf) its exit code; a cause not here, and a fault
// kintfs did not foresee, exits 1.
var exitCodes = map[replica.Kind]int{
	replica.KindInUse:             exitUsage,
	replica.KindKeyMissing:        exitKey,
	replica.KindKeyExpired:        exitKey,
	replica.KindKeyRejected:       exitKey,
	replica.KindMoved:             exitMoved,
	replica.KindLyingRPC:          exitStaleRPC,
	replica.KindNothingToPush:     exitUsage,
	replica.KindNoVault:           exitUsage,
	replica.KindBadSecret:         exitUsage,
	replica.KindInvalid:           exitUsage,
	replica.KindReadOnly:          exitUsage,
	replica.KindNotPermitted:      exitUsage,
	replica.KindSnapshotTooLarge:  exitUsage,
	replica.KindGapOpen:           exitRefused,
	replica.KindOffline:           exitRefused,
	replica.KindReverted:          exitRefused,
	replica.KindGasCap:            exitRefused,
	replica.KindHistoryIncomplete: exitRefused,
	replica.KindRowTooLarge:       exitRefused,
}

// exitCode maps an error to kint's exit codes: the command's own errors, then its cause.
func exitCode(err error) int {
	if ce := (exitCodeError{}); errors.As(err, &ce) {
		return ce.code
	}
	switch {
	case errors.As(err, new(usageError)), errors.As(err, new(mountedError)):
		return exitUsage
	case errors.Is(err, errSingleRPC):
		return exitRefused
	case errors.Is(err, errMountBusy):
		return exitMountBusy
	}
	if code, ok := exitCodes[replica.KindOf(err)]; ok {
		return code
	}
	return exitFailure
}

const version = "0.1.0"

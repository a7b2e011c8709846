package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"kintfs/replica"
	"kintfs/replica/homedir"
	"kintfs/replica/vault"
)

// While a vault is mounted, its badger database belongs to the mount process. Commands that
// read or change the vault (status, push, pull, ...) then run inside the mount, reached over a
// unix socket in KINT_HOME (mode 0600, peer uid checked). No passphrase or signature crosses
// it: rekey, the one forwarded command that needs keys, derives them in the caller and sends
// the derived keys alone, which are never logged.

// forwarded are the commands a running mount answers for.
var forwarded = map[string]bool{"status": true, "conflicts": true, "push": true, "pull": true, "compact": true, "log": true,
	"history": true, "verify": true, "attr": true, "export": true, "vault-model": true,
	"bucket-policy": true}

const mountSocket = "mount.sock"

// cmdIO is what a command reads and writes besides its flags: where it writes, the settings
// main read once, and the open vault when it runs inside a mount. runIO builds one per run and
// passes it to the command, which passes it on to whatever needs it: nothing travels in a
// context value.
type cmdIO struct {
	out, err io.Writer
	env      *vaultEnv
	cwd      string
	keys     []replica.RekeyKey // rekey's, derived by the caller
	offline  bool               // the caller's KINT_OFFLINE=1
	argv     []string           // the command line, outside a mount: to run it again (--daemon, rekey)
	set      settings           // the settings main read (inside a mount: the mount's)
	// progress, when set, takes the steps of a long task as they happen: a forwarded command
	// streams them to its caller
	progress func(replica.Progress)
}

// absPath resolves p against the caller's working directory.
func (cio *cmdIO) absPath(p string) (string, error) {
	if cwd := cio.cwd; cwd != "" && !filepath.IsAbs(p) {
		return filepath.Join(cwd, p), nil
	}
	return filepath.Abs(p)
}

type forwardRequest struct {
	Argv []string `json:"argv"`
	Cwd  string   `json:"cwd"`
	// Query "mountpoint" asks where the mount is, for a command that cannot run beside it.
	Query string `json:"query,omitempty"`
	// Keys are rekey's derived keys; Offline is the caller's KINT_OFFLINE=1.
	Keys    []forwardKey `json:"keys,omitempty"`
	Offline bool         `json:"offline,omitempty"`
}

// forwardReply is the mount's answer: zero or more progress steps of a long task, as they
// happen, then the command's output and exit code.
type forwardReply struct {
	Out      string            `json:"out"`
	Err      string            `json:"err"`
	Code     int               `json:"code"`
	Progress *replica.Progress `json:"progress,omitempty"`
}

// forward runs argv inside the mount of this KINT_HOME; ok is false when no mount answers.
func forward(set settings, argv []string) (reply forwardReply, ok bool) {
	home, err := defaultHome(set)
	if err != nil {
		return reply, false
	}
	return forwardRequestTo(home, forwardRequest{Argv: argv, Offline: offline(set)})
}

// forwardRequestTo sends req to the mount of home; ok is false when no mount answers.
func forwardRequestTo(home homedir.Home, req forwardRequest) (reply forwardReply, ok bool) {
	conn, err := net.DialTimeout("unix", home.Path(mountSocket), 2*time.Second)
	if err != nil {
		return reply, false
	}
	defer conn.Close()
	req.Cwd, _ = os.Getwd()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return reply, false
	}
	dec := json.NewDecoder(conn)
	var pp *progressPrinter
	defer func() {
		if pp != nil {
			pp.end()
		}
	}()
	for {
		reply = forwardReply{}
		if err := dec.Decode(&reply); err != nil {
			return forwardReply{Err: fmt.Sprintf("kintfs: the mount did not answer: %v\n", err), Code: exitFailure}, true
		}
		if reply.Progress == nil {
			return reply, true
		}
		if pp == nil {
			pp = newProgressPrinter(os.Stderr)
		}
		pp.show(*reply.Progress) // what the mount does, as it does it
	}
}

// mountedError refuses a command that needs the vault's database while a mount holds it.
type mountedError struct{ dir string }

func (e mountedError) Error() string {
	return fmt.Sprintf("the vault is mounted at %s: unmount it first (kintfs unmount %s)", e.dir, e.dir)
}

// mountedAt asks the mount of this KINT_HOME, when one answers, where it is mounted. A socket
// that takes the connection and closes it without an answer is a mount dying (killed, its
// files being closed: a restart at once after a crash meets it): it is asked again until it
// answers or refuses, for up to dyingWait. One that takes the question and does not answer
// within the deadline is a running mount, busy.
func mountedAt(home homedir.Home) (string, bool) {
	deadline := time.Now().Add(dyingWait)
	for {
		conn, err := net.DialTimeout("unix", home.Path(mountSocket), 2*time.Second)
		if err != nil {
			return "", false
		}
		dir, err := askMountpoint(conn)
		conn.Close()
		if err == nil {
			return dir, true
		}
		if errors.Is(err, os.ErrDeadlineExceeded) || time.Now().After(deadline) {
			return "a running kintfs mount", true
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dyingWait bounds how long mountedAt waits for a mount that closes connections unanswered;
// askWait, for the answer of one that keeps them (tests shorten it).
const dyingWait = 5 * time.Second

var askWait = 5 * time.Second

func askMountpoint(conn net.Conn) (string, error) {
	conn.SetDeadline(time.Now().Add(askWait))
	var reply forwardReply
	if err := json.NewEncoder(conn).Encode(forwardRequest{Query: "mountpoint"}); err != nil {
		return "", err
	}
	if err := json.NewDecoder(conn).Decode(&reply); err != nil {
		return "", err
	}
	return reply.Out, nil
}

// refuseIfMounted is a mountedError when a mount of home answers.
func refuseIfMounted(home homedir.Home) error {
	if dir, ok := mountedAt(home); ok {
		return mountedError{dir}
	}
	return nil
}

// controlServer answers forwarded commands against the mount's open vault.
type controlServer struct {
	ctx    context.Context // the mount's: what the commands run under
	ln     net.Listener
	settle func() // waits for the kernel to drop what a command changed
	dir    string // the mountpoint
	env    *vaultEnv
	wg     sync.WaitGroup
	path   string
	logf   func(string, ...any) // the mount's log
	set    settings             // the mount's: what the commands it answers read
}

// serveControl answers on the mount's socket until Close; the commands it runs run under ctx,
// the mount's context.
func serveControl(ctx context.Context, set settings, home homedir.Home, env *vaultEnv, dir string, settle func(), logf func(string, ...any)) (*controlServer, error) {
	path := home.Path(mountSocket)
	if err := refuseIfMounted(home); err != nil {
		return nil, err
	}
	os.Remove(path) // left by a crash
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	s := &controlServer{ctx: ctx, set: set, ln: ln, env: env, path: path, dir: dir, settle: settle, logf: logf}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer conn.Close()
				if err := s.handle(conn); err != nil {
					logf("control socket: %v", err)
				}
			}()
		}
	}()
	return s, nil
}

func (s *controlServer) handle(conn net.Conn) error {
	if uc, ok := conn.(*net.UnixConn); ok {
		raw, err := uc.SyscallConn()
		if err != nil {
			return err
		}
		var uid uint32
		var cerr error
		raw.Control(func(fd uintptr) { uid, cerr = peerUID(int(fd)) })
		if cerr != nil {
			return fmt.Errorf("refused a connection whose peer is unknown: %w", cerr)
		}
		if uid != uint32(os.Getuid()) && uid != 0 {
			return fmt.Errorf("refused a connection from uid %d", uid)
		}
	}
	var req forwardRequest
	if err := json.NewDecoder(io.LimitReader(conn, 1<<20)).Decode(&req); err != nil {
		return err
	}
	switch req.Query {
	case "mountpoint":
		return json.NewEncoder(conn).Encode(forwardReply{Out: s.dir})
	case "flush":
		// kintfs unmount: the flush runs under the mount's context, so a caller that stops
		// waiting leaves it to finish (the unmount then waits for it, bounded by --flush-timeout)
		reply := forwardReply{}
		enc := json.NewEncoder(conn)
		var mu sync.Mutex
		pctx := replica.WithProgress(s.ctx, func(p replica.Progress) {
			if p.Phase == "landed" {
				s.logf("info: %s: %s (unmount flush)", p.Task, p.Line)
			}
			mu.Lock()
			defer mu.Unlock()
			_ = enc.Encode(forwardReply{Progress: &p}) // a caller gone is no reason to stop
		})
		err := s.env.rep.Control(pctx, "flush")
		s.settle()
		if err != nil {
			reply.Err, reply.Code = err.Error(), exitCode(err)
			if errors.Is(err, vault.ErrReadOnly) {
				reply.Err, reply.Code = "", exitOK // a read-only mount has nothing to anchor
			}
		}
		mu.Lock()
		defer mu.Unlock()
		return enc.Encode(reply)
	case "no-flush", "flush-on-exit":
		// kintfs unmount --no-flush: the mount's exit anchors nothing (undone when it stays busy)
		reply := forwardReply{}
		if err := s.env.rep.Control(s.ctx, req.Query); err != nil {
			reply.Err, reply.Code = err.Error(), exitCode(err)
		}
		return json.NewEncoder(conn).Encode(reply)
	}
	withKeys := len(req.Argv) > 0 && req.Argv[0] == "rekey" && len(req.Keys) > 0
	if len(req.Argv) == 0 || !(forwarded[req.Argv[0]] || withKeys) {
		return json.NewEncoder(conn).Encode(forwardReply{Err: "kintfs: not a command the mount answers\n", Code: exitUsage})
	}
	keys, err := decodeKeys(req.Keys)
	if err != nil {
		return json.NewEncoder(conn).Encode(forwardReply{Err: "kintfs: " + err.Error() + "\n", Code: exitUsage})
	}
	var out, errb syncWriter
	// the steps of a long task go to the caller as they happen (and to the mount's log)
	var encMu sync.Mutex
	enc := json.NewEncoder(conn)
	progress := func(p replica.Progress) {
		if p.Phase == "landed" {
			s.logf("info: %s (for kintfs %s)", p.Task+": "+p.Line, req.Argv[0])
		}
		encMu.Lock()
		defer encMu.Unlock()
		_ = enc.Encode(forwardReply{Progress: &p})
	}
	// commands run side by side: each parses its flags into options of its own, and the
	// replica orders what must be ordered (one push or pull at a time)
	code := runIO(s.ctx, req.Argv, &cmdIO{out: &out, err: &errb, env: s.env, cwd: req.Cwd, keys: keys, offline: req.Offline, progress: progress, set: s.set})
	s.settle() // a pull, push or compact: the next read through the mount sees what it changed
	encMu.Lock()
	defer encMu.Unlock()
	return enc.Encode(forwardReply{Out: out.String(), Err: errb.String(), Code: code})
}

func (s *controlServer) Close() {
	s.ln.Close()
	s.wg.Wait()
	os.Remove(s.path)
}

type syncWriter struct {
	mu sync.Mutex
	b  []byte
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kintfs/chain/devchain/devinfo"
)

// TestDevchainProgramMissing: without kintfs-devchain beside kintfs or on PATH, devchain says
// what is missing and how to get it.
func TestDevchainProgramMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, errs, code := runCLI(t, "devchain", "--datadir", t.TempDir())
	if code != exitFailure || !strings.Contains(errs, "its own program, kintfs-devchain, found neither beside kintfs nor on PATH") || !strings.Contains(errs, "make build") {
		t.Fatalf("devchain without its program: exit %d: %s", code, errs)
	}
}

// TestDevchainProgramOnPath: when it is not beside kintfs, the program is found on PATH; a
// file of that name that is not executable is not taken.
func TestDevchainProgramOnPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	prog := filepath.Join(dir, devinfo.Program)
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := devchainProgram(); err == nil {
		t.Fatalf("a file that cannot run was taken: %s", p)
	}
	if err := os.Chmod(prog, 0o700); err != nil {
		t.Fatal(err)
	}
	if p, err := devchainProgram(); err != nil || p != prog {
		t.Fatalf("devchainProgram = %q, %v; want %s", p, err, prog)
	}
}

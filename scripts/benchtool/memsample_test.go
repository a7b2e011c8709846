package main

import (
	"os"
	"runtime"
	"testing"
)

// TestMemSampler: the sampler sees this process's anonymous memory grow past what it had, and
// finds its executable among its mappings, no larger than all it has resident.
func TestMemSampler(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	pid := os.Getpid()
	before := kbField("/proc/self/status", "RssAnon:")
	s := startMemSampler(pid)
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = 1 // touched, so resident
	}
	anon, file := s.end()
	runtime.KeepAlive(buf)
	if anon < before+60<<10 {
		t.Errorf("peak anonymous memory %d kB, want at least %d kB more than the %d kB before", anon, 60<<10, before)
	}
	if file <= 0 {
		t.Errorf("file-backed memory at the peak %d kB, want some", file)
	}
	exe, rss := exeResidentKB(pid), kbField("/proc/self/status", "VmRSS:")
	if exe <= 0 || exe > rss {
		t.Errorf("executable resident %d kB, want more than 0 and at most VmRSS %d kB", exe, rss)
	}
}

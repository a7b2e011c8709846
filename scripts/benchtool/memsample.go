package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// memSampler watches a process's resident memory by kind while a step runs: VmHWM is one
// number, but a mount's anonymous memory (its heap, what grows with the vault) and its
// file-backed pages (mostly its own executable's, which do not grow with the vault) are
// different costs, so the peak of the first is sampled apart.
type memSampler struct {
	pid     int
	stop    chan struct{}
	done    chan struct{}
	maxAnon int // kB, the highest RssAnon sampled
	fileAt  int // kB, RssFile at that sample
}

// sampleEvery is how often a memSampler reads /proc; a flush's peak lasts seconds.
const sampleEvery = 100 * time.Millisecond

func startMemSampler(pid int) *memSampler {
	s := &memSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				s.sample()
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *memSampler) sample() {
	path := fmt.Sprintf("/proc/%d/status", s.pid)
	anon, file := kbField(path, "RssAnon:"), kbField(path, "RssFile:")
	if anon > s.maxAnon {
		s.maxAnon, s.fileAt = anon, file
	}
}

// end stops the sampling and returns its peak of anonymous memory and the file-backed
// memory at that moment, in kB.
func (s *memSampler) end() (anonKB, fileKB int) {
	close(s.stop)
	<-s.done
	return s.maxAnon, s.fileAt
}

func kbField(path, key string) int {
	v := procField(path, key, ":", "0 kB")
	n, _ := strconv.Atoi(strings.Fields(v)[0])
	return n
}

// exeResidentKB is how much of pid's own executable is mapped resident, in kB.
func exeResidentKB(pid int) int {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	total, inExe := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0:
		case strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			// a mapping's header: address range, perms, offset, device, inode, path
			inExe = len(fields) >= 6 && fields[5] == exe
		case fields[0] == "Rss:" && inExe && len(fields) >= 2:
			n, _ := strconv.Atoi(fields[1])
			total += n
		}
	}
	return total
}

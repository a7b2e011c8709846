package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Linux: fusermount3 unmounts, /proc/self/mounts lists the mounts, /proc names the holders.

const mountsTable = "/proc/mounts"

// fuseUnmount unmounts dir; busy says the kernel refused because it is in use.
func fuseUnmount(dir string) (busy bool, err error) {
	out, err := exec.Command("fusermount3", "-u", dir).CombinedOutput()
	if err == nil {
		return false, nil
	}
	msg := oneLine(string(out))
	return strings.Contains(msg, "busy"), fmt.Errorf("fusermount3 -u %s: %s", dir, msg)
}

// fuseUnmountLazy detaches a dead mount.
func fuseUnmountLazy(dir string) ([]byte, error) {
	return exec.Command("fusermount3", "-uz", dir).CombinedOutput()
}

func lazyUnmountHint(dir string) string {
	return "fusermount3 -uz " + dir + "  (or  umount -l " + dir + "  as root)"
}

// isKintfsMount reports whether dir is the mount point of a kintfs mount.
func isKintfsMount(dir string) bool {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return true // cannot tell: let fusermount3 say
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && unescapeMounts(fields[1]) == dir && strings.HasPrefix(fields[2], "fuse") &&
			(fields[2] == "fuse.kintfs" || fields[0] == "kintfs") {
			return true
		}
	}
	return false
}

// unescapeMounts undoes the octal escapes of /proc/mounts (\040 for a space, and so on).
func unescapeMounts(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var n int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &n); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// holders lists the processes with files open (or their working directory) under the mount
// point dir, for an EBUSY unmount: by its resolved path, without this process and without
// the mount's own process (the one holding /dev/fuse), on one line.
func holders(dir string) string {
	dir = resolveMountpoint(dir)
	under := func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	self := strconv.Itoa(os.Getpid())
	procs, _ := os.ReadDir("/proc")
	var found []string
	for _, p := range procs {
		pid := p.Name()
		if pid == self || strings.Trim(pid, "0123456789") != "" {
			continue // this process, and /proc/self, /proc/thread-self and the like
		}
		fds, err := os.ReadDir("/proc/" + pid + "/fd")
		if err != nil {
			continue
		}
		cwd, _ := os.Readlink("/proc/" + pid + "/cwd")
		hit, fuse := under(cwd), false
		for _, fd := range fds {
			t, err := os.Readlink("/proc/" + pid + "/fd/" + fd.Name())
			if err != nil {
				continue
			}
			hit = hit || under(t)
			fuse = fuse || t == "/dev/fuse"
		}
		if hit && !fuse {
			comm, _ := os.ReadFile("/proc/" + pid + "/comm")
			found = append(found, fmt.Sprintf("%s (pid %s)", strings.TrimSpace(string(comm)), pid))
		}
	}
	if len(found) == 0 {
		return "; no process found holding it (a lazy unmount: " + lazyUnmountHint(dir) + ")"
	}
	return "; in use by " + strings.Join(found, ", ")
}

// What doctor checks FUSE by: the device, and the helper that unmounts.
const (
	fuseDevice  = "/dev/fuse"
	fuserBinary = "fusermount3"
)

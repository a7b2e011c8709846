package fs

import (
	"syscall"
	"testing"
	"unsafe"
)

// direntInos reads a directory with getdents and returns the inode number of each name.
func direntInos(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	out := map[string]uint64{}
	buf := make([]byte, 8192)
	for {
		n, err := syscall.Getdents(fd, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return out
		}
		for off := 0; off < n; {
			d := (*syscall.Dirent)(unsafe.Pointer(&buf[off]))
			nb := (*[256]byte)(unsafe.Pointer(&d.Name[0]))
			name := string(nb[:clen(nb[:])])
			out[name] = d.Ino
			off += int(d.Reclen)
		}
	}
}

func clen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

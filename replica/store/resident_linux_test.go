package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestReleaseMappedPagesOut(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "table.sst")
	const size = 8 << 20
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(data)
	sum := 0
	for i := 0; i < size; i += os.Getpagesize() {
		sum += int(data[i])
	}
	before := residentMapped()
	if !releaseMapped(dir) {
		t.Skip("the kernel has no MADV_PAGEOUT")
	}
	after := residentMapped()
	if before-after < size/2 {
		t.Fatalf("resident mapped bytes %d before, %d after: the file's pages were not released", before, after)
	}
	if sum != 0 || data[size-1] != 0 {
		t.Fatal("the mapping reads back changed")
	}
}

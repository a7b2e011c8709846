package fs

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// BenchmarkNewFileDurable is the mount's part of a new 1 KB file made durable at close, one
// after another, as cp -r and tar x make them: create, write, close. Beside it, the same on
// the native file system the test runs on, with an fsync before the close.
func BenchmarkNewFileDurable(b *testing.B) {
	body := []byte(`{"x":"` + strings.Repeat("x", 1024-9) + `"}`)
	b.Run("mount", func(b *testing.B) {
		tm := mountForTest(b)
		dir := tm.path("entity", "bench")
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := os.WriteFile(fmt.Sprintf("%s/f%07d", dir, i), body, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("native", func(b *testing.B) {
		dir := b.TempDir()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			f, err := os.Create(fmt.Sprintf("%s/f%07d", dir, i))
			if err == nil {
				_, err = f.Write(body)
			}
			if err == nil {
				err = f.Sync()
			}
			if err2 := f.Close(); err == nil {
				err = err2
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

package store

import (
	"bytes"
	"kintfs/replica/vault"
	"testing"
	"time"
)

// BenchmarkBody64MiB writes a 64 MiB file through Write (staged, as a close after a change
// does) and reads it back through Content (a staged read); the allocated bytes per op are the
// body's copies in the store's own code: about one 64 MiB copy each way.
func BenchmarkBody64MiB(b *testing.B) {
	s, err := OpenStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body := bytes.Repeat([]byte("0123456789abcdef"), vault.MaxFileBytes/16)
	k := vault.Key{Tier: "state", Key: "big"}
	b.Run("Write", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for i := 0; i < b.N; i++ {
			body[0] = byte('a' + i%26) // a change each time, so each write is staged
			if _, err := s.Write(k, body, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Content", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for i := 0; i < b.N; i++ {
			if got, err := s.Content(k); err != nil || len(got) != len(body) {
				b.Fatal(len(got), err)
			}
		}
	})
}

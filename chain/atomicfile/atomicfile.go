// Package atomicfile writes a file whole or not at all: a reader, or the machine after a crash,
// finds either the old content or the new, never a part. It is the one such writer of the
// project, used for KINT_HOME's files (replica/homedir) and the dev chain's info file; it sits
// under chain only because every package that writes files may import it from there. It
// imports nothing of the project.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data, mode 0600: written to a temporary file beside it, synced,
// then renamed over it.
func Write(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing left to remove
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Sync fsyncs the file or directory at path: a directory's sync makes the names renamed or
// created in it durable.
func Sync(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

//go:build !linux

package homedir

import (
	"path/filepath"

	"kintfs/chain/atomicfile"
)

// syncData makes the data of the files at paths durable, one fsync a file.
func syncData(paths []string) error {
	for _, p := range paths {
		if err := atomicfile.Sync(p); err != nil {
			return err
		}
	}
	return nil
}

// syncPlaced makes files already in place durable with their names: each file, then each of
// their directories.
func syncPlaced(paths []string) error {
	if err := syncData(paths); err != nil {
		return err
	}
	dirs := map[string]bool{}
	for _, p := range paths {
		if d := filepath.Dir(p); !dirs[d] {
			dirs[d] = true
			if err := atomicfile.Sync(d); err != nil {
				return err
			}
		}
	}
	return nil
}

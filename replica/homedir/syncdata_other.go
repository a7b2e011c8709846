//go:build !linux

package homedir

import "kintfs/chain/atomicfile"

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
	return syncDirsOf(paths)
}

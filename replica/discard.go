package replica

import (
	"errors"
	"fmt"
	"kintfs/replica/homedir"
	"kintfs/replica/store"
	"os"
	"time"
)

// DiscardLocal moves this machine's local state of the vault (the state database with its
// staged rows, and the epoch cache) aside into KINT_HOME/backup-<YYYYmmdd-HHMMSS>, mode 0700,
// kept, so that the next pull restores from the chain as on a new machine: the way out of a
// fork. The vault config, the cached keys and the session key stay. It refuses while another
// process has the database open. It returns the backup folder.
func DiscardLocal(home homedir.Home, v *homedir.VaultConfig, now time.Time) (string, error) {
	db := home.Path("db", v.Space16())
	if _, err := os.Stat(db); err == nil {
		if err := store.CheckNotInUse(db); err != nil { // nobody else may be writing to it
			return "", err
		}
	}
	name := "backup-" + now.UTC().Format("20060102-150405")
	backup := home.Path(name)
	for i := 2; ; i++ {
		if _, err := os.Lstat(backup); errors.Is(err, os.ErrNotExist) {
			break
		}
		backup = home.Path(fmt.Sprintf("%s-%d", name, i))
	}
	if err := os.Mkdir(backup, 0o700); err != nil {
		return "", err
	}
	for _, sub := range []string{"db", "epochs"} {
		from := home.Path(sub, v.Space16())
		if _, err := os.Stat(from); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.Mkdir(backup+"/"+sub, 0o700); err != nil {
			return backup, err
		}
		if err := os.Rename(from, backup+"/"+sub+"/"+v.Space16()); err != nil {
			return backup, fmt.Errorf("move %s aside: %w", from, err)
		}
	}
	return backup, nil
}

package powercut

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// The tools a test of a cut needs: a loop device over the image and an ext4 file system on it,
// as root.

// Available says why a cut cannot be tested on this machine, or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("not root: loop devices and mount need root")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return fmt.Errorf("no loop devices: %w", err)
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "e2fsck", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is missing (util-linux, e2fsprogs): %w", tool, err)
		}
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("no /dev/fuse: %w", err)
	}
	return nil
}

func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Attach puts a loop device over the disk's image and returns its path.
func (d *Disk) Attach() (string, error) {
	out, err := run("losetup", "--find", "--show", d.Path())
	return strings.TrimSpace(out), err
}

// Detach removes the loop device.
func Detach(dev string) error {
	_, err := run("losetup", "--detach", dev)
	return err
}

// Mkfs makes an ext4 file system of 4 KB blocks (the page a cut keeps or loses) on dev, with
// its journal.
func Mkfs(dev string) error {
	_, err := run("mkfs.ext4", "-q", "-F", "-b", "4096", dev)
	return err
}

// Mount mounts the ext4 file system on dev at dir; after a cut, that replays its journal.
func Mount(dev, dir string) error {
	_, err := run("mount", "-t", "ext4", dev, dir)
	return err
}

// Unmount unmounts dir.
func Unmount(dir string) error {
	_, err := run("umount", dir)
	return err
}

// Check runs a full, read-only e2fsck of the unmounted file system on dev: an error when it
// finds anything wrong.
func Check(dev string) error {
	_, err := run("e2fsck", "-f", "-n", dev)
	return err
}

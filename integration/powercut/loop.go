package powercut

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Available says why a cut cannot be tested on this machine, or nil: it takes FUSE, a loop
// device, ext4's tools and root.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("not root: loop devices and mount need root")
	}
	for _, dev := range []string{"/dev/loop-control", "/dev/fuse"} {
		if _, err := os.Stat(dev); err != nil {
			return err
		}
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "e2fsck", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is missing (util-linux, e2fsprogs): %w", tool, err)
		}
	}
	return nil
}

// Volume is a disk with an ext4 file system of 4 KB blocks (the page a cut keeps or loses) on a
// loop device over its image, mounted.
type Volume struct {
	Disk *Disk
	Dev  string // the loop device
	Dir  string // where the file system is mounted
	// the steps done, undone by Close
	served, attached, mounted bool
}

// OpenVolume serves image in diskDir, attaches a loop device to it and mounts its file system
// at dir. With mkfs it first makes a new file system; without, the image is one a cut left:
// mounting replays its journal, and a full e2fsck then checks the file system, read-only,
// before it is mounted again for use. On an error the steps done are undone.
func OpenVolume(image []byte, diskDir, dir string, mkfs bool) (*Volume, error) {
	v := &Volume{Dir: dir}
	err := v.open(image, diskDir, mkfs)
	if err != nil {
		err = errors.Join(err, v.Close())
	}
	return v, err
}

func (v *Volume) open(image []byte, diskDir string, mkfs bool) error {
	d, err := Serve(diskDir, image)
	if err != nil {
		return err
	}
	v.Disk, v.served = d, true
	out, err := run("losetup", "--find", "--show", d.Path())
	if err != nil {
		return err
	}
	v.Dev, v.attached = strings.TrimSpace(out), true
	if mkfs {
		if _, err := run("mkfs.ext4", "-q", "-F", "-b", "4096", v.Dev); err != nil {
			return err
		}
	} else {
		if err := v.mount(); err != nil {
			return err
		}
		if err := v.unmount(); err != nil {
			return err
		}
		if _, err := run("e2fsck", "-f", "-n", v.Dev); err != nil {
			return fmt.Errorf("the file system the cut left: %w", err)
		}
	}
	return v.mount()
}

func (v *Volume) mount() error {
	if _, err := run("mount", "-t", "ext4", v.Dev, v.Dir); err != nil {
		return err
	}
	v.mounted = true
	return nil
}

func (v *Volume) unmount() error {
	if _, err := run("umount", v.Dir); err != nil {
		return err
	}
	v.mounted = false
	return nil
}

// Close unmounts the file system, detaches the loop device and unmounts the disk: the steps
// that were done, each tried even when one before failed. A second Close does nothing.
func (v *Volume) Close() error {
	var errs []error
	if v.mounted {
		if err := v.unmount(); err != nil {
			errs = append(errs, err)
			// a file system that stays busy must not keep the device: let it go when free
			exec.Command("umount", "-l", v.Dir).Run()
			v.mounted = false
		}
	}
	if v.attached {
		if _, err := run("losetup", "--detach", v.Dev); err != nil {
			errs = append(errs, err)
		}
		v.attached = false
	}
	if v.served {
		if err := v.Disk.Close(); err != nil {
			errs = append(errs, err)
		}
		v.served = false
	}
	return errors.Join(errs...)
}

// Check unmounts the file system and runs a full, read-only e2fsck of it: an error when it finds
// anything wrong. The volume is then closed.
func (v *Volume) Check() error {
	if err := v.unmount(); err != nil {
		return errors.Join(err, v.Close())
	}
	_, err := run("e2fsck", "-f", "-n", v.Dev)
	return errors.Join(err, v.Close())
}

func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

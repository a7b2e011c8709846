package fs

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"

	"kintfs/replica/vault"
)

// The extended attributes of a file. status and meta are the row's own and writable (meta
// must be JSON; the value "null" or removexattr makes it null); the rest are read-only.
const (
	xattrStatus   = "user.kint.status"
	xattrMeta     = "user.kint.meta"
	xattrLeaf     = "user.kint.leaf"
	xattrAnchored = "user.kint.anchored"
	xattrKey      = "user.kint.key"

	xattrCreate  = 0x1 // XATTR_CREATE
	xattrReplace = 0x2 // XATTR_REPLACE
)

var (
	_ = (fusefs.NodeGetxattrer)((*node)(nil))
	_ = (fusefs.NodeSetxattrer)((*node)(nil))
	_ = (fusefs.NodeRemovexattrer)((*node)(nil))
	_ = (fusefs.NodeGetxattrer)((*fileNode)(nil))
	_ = (fusefs.NodeSetxattrer)((*fileNode)(nil))
	_ = (fusefs.NodeRemovexattrer)((*fileNode)(nil))
	_ = (fusefs.NodeListxattrer)((*fileNode)(nil))
)

// xattrs returns the attributes a file has, by name, in listing order.
func (n *fileNode) xattrs() ([]string, map[string]string, syscall.Errno) {
	n.mu.Lock()
	k, unwritten := n.b.key, n.b.isEvent() && n.pending != nil && n.b.key.Key == n.pending.name
	n.mu.Unlock()
	if unwritten {
		return nil, nil, 0
	}
	v, err := n.v.tree.Get(k)
	if err != nil {
		return nil, nil, n.fs.fail("getxattr", &n.node, "", err)
	}
	names, vals := Attrs(v)
	if k.Local {
		vals[xattrAnchored] = n.fs.localReason(k)
	}
	return names, vals, 0
}

// localReason is user.kint.anchored of a local file: "local: " and why it is kept here.
func (f *mountFS) localReason(k vault.Key) string {
	switch {
	case k.Tier == vault.TrashTier:
		return "local: in the trash"
	case isLocalName(k.Key):
		return "local: dotfile"
	}
	if rule := f.b.LocalRule(localPath(k)); rule != "" {
		return "local: " + rule
	}
	return "local: kept here (made under a rule that no longer matches; copy it to a new name to publish it)"
}

// Attrs are the user.kint.* extended attributes of a version, by name, in listing order. The
// CLI shows the same ones, for mounts that serve none.
func Attrs(v *vault.Version) ([]string, map[string]string) {
	k := v.Key
	names := []string{xattrKey}
	vals := map[string]string{xattrKey: k.Key}
	if k.Local {
		names = append(names, rowAttrs(v, vals)...)
		names = append(names, xattrAnchored)
		vals[xattrAnchored] = "unanchored; local only"
		return names, vals
	}
	if tierHasAttrs(k.Tier) {
		if v.Row.Status != nil {
			names = append(names, xattrStatus)
			vals[xattrStatus] = *v.Row.Status
		}
		if v.Row.Meta != nil {
			names = append(names, xattrMeta)
			vals[xattrMeta] = *v.Row.Meta
		}
	}
	names = append(names, xattrLeaf, xattrAnchored)
	vals[xattrLeaf] = hex.EncodeToString(v.Leaf[:])
	vals[xattrAnchored] = anchoredText(v)
	return names, vals
}

// rowAttrs adds the status and meta v has to vals and returns their names.
func rowAttrs(v *vault.Version, vals map[string]string) []string {
	var names []string
	if v.Row.Status != nil {
		names = append(names, xattrStatus)
		vals[xattrStatus] = *v.Row.Status
	}
	if v.Row.Meta != nil {
		names = append(names, xattrMeta)
		vals[xattrMeta] = *v.Row.Meta
	}
	return names
}

// listed are the attributes listxattr names: status and meta, where set. The computed ones
// (key, leaf, anchored) are read by name (getfattr -n, kintfs attr) but not listed, so that
// rsync -X, cp -a, tar --xattrs and mv copy what a row holds and never try to set, on a copy,
// what only kintfs computes.
func listed(names []string) []string {
	var out []string
	for _, n := range names {
		if n == xattrStatus || n == xattrMeta {
			out = append(out, n)
		}
	}
	return out
}

// anchoredText is user.kint.anchored: where this content was anchored, or "unanchored", and
// why a staged row is held when it is.
func anchoredText(v *vault.Version) string {
	var s string
	switch {
	case v.Anchor != nil && !v.Staged:
		s = fmt.Sprintf("seq %d block %d tx %s", v.Anchor.Seq, v.Anchor.Block, v.Anchor.Tx)
	case v.Anchor != nil:
		s = fmt.Sprintf("unanchored; last anchored seq %d block %d tx %s", v.Anchor.Seq, v.Anchor.Block, v.Anchor.Tx)
	default:
		s = "unanchored"
	}
	if v.Held != "" {
		s += "; held: " + v.Held
	}
	return s
}

// xattrRefused answers a getxattr the node cannot have: ENOSYS with attributes off, and
// EOPNOTSUPP for any name outside user.*. kintfs keeps no security labels and no ACLs, and
// EOPNOTSUPP (not ENODATA) is what tells ls that, so it asks security.selinux and
// system.posix_acl_access of the first file only, not of every file.
func (f *mountFS) xattrRefused(attr string) (syscall.Errno, bool) {
	switch {
	case !f.opts.Xattrs:
		return syscall.ENOSYS, true
	case !strings.HasPrefix(attr, "user."):
		return syscall.EOPNOTSUPP, true
	}
	return 0, false
}

// Getxattr of a node without attributes of its own: directories, the control files.
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if errno, refused := n.fs.xattrRefused(attr); refused {
		return 0, errno
	}
	return 0, fusefs.ENOATTR
}

// Setxattr of a node without attributes of its own (the root, the control files): there is
// nothing to set, and no ACLs (cp -a then keeps the mode bits alone, without a warning).
func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	if !n.fs.opts.Xattrs {
		return syscall.ENOSYS
	}
	return syscall.EOPNOTSUPP
}

// Removexattr of a node without attributes of its own finds none.
func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	if errno, refused := n.fs.xattrRefused(attr); refused {
		return errno
	}
	return fusefs.ENOATTR
}

func (n *fileNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if errno, refused := n.fs.xattrRefused(attr); refused {
		return 0, errno
	}
	_, vals, errno := n.xattrs()
	if errno != 0 {
		return 0, errno
	}
	val, ok := vals[attr]
	if !ok {
		return 0, fusefs.ENOATTR
	}
	return xattrValue(val, dest)
}

func (n *fileNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	if !n.fs.opts.Xattrs {
		return 0, syscall.ENOSYS
	}
	names, _, errno := n.xattrs()
	if errno != 0 {
		return 0, errno
	}
	return xattrList(listed(names), dest)
}

func (n *fileNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	if !n.fs.opts.Xattrs {
		return syscall.ENOSYS
	}
	value := string(data)
	p := &value
	if attr == xattrMeta && strings.TrimSpace(value) == "null" {
		p = nil
	}
	return n.setAttr("setxattr", attr, p, flags)
}

func (n *fileNode) Removexattr(ctx context.Context, attr string) syscall.Errno {
	if !n.fs.opts.Xattrs {
		return syscall.ENOSYS
	}
	return n.setAttr("removexattr", attr, nil, xattrReplace)
}

// setAttr sets (value nil: clears) a writable attribute, honouring XATTR_CREATE/REPLACE.
func (n *fileNode) setAttr(op, attr string, value *string, flags uint32) syscall.Errno {
	var name string
	switch attr {
	case xattrStatus:
		name = "status"
	case xattrMeta:
		name = "meta"
	case xattrLeaf, xattrAnchored, xattrKey:
		return n.setComputed(attr, value)
	default:
		return syscall.ENOTSUP
	}
	if n.fs.readOnly(n.v) {
		return syscall.EROFS
	}
	_, vals, errno := n.xattrs()
	if errno != 0 {
		return errno
	}
	_, exists := vals[attr]
	if flags&xattrCreate != 0 && exists {
		return syscall.EEXIST
	}
	if flags&xattrReplace != 0 && !exists {
		return fusefs.ENOATTR
	}
	if err := n.fs.b.SetAttr(n.currentKey(), name, value); err != nil {
		return n.fs.fail(op, &n.node, "", err)
	}
	return 0
}

// setComputed answers a change of an attribute kintfs computes: setting the value it already
// has is accepted and changes nothing (a copy of a file that carried it, back onto the same
// row), anything else is EPERM, and removing it is ENODATA, as for an attribute not there.
func (n *fileNode) setComputed(attr string, value *string) syscall.Errno {
	if value == nil {
		return fusefs.ENOATTR
	}
	_, vals, errno := n.xattrs()
	if errno != 0 {
		return errno
	}
	if cur, ok := vals[attr]; ok && cur == *value {
		return 0
	}
	return syscall.EPERM
}

// xattrValue answers a getxattr: the size alone for a probe (empty dest), ERANGE with the size
// when dest is too small.
func xattrValue(val string, dest []byte) (uint32, syscall.Errno) {
	if len(dest) < len(val) {
		return uint32(len(val)), syscall.ERANGE
	}
	return uint32(copy(dest, val)), 0
}

// xattrList answers a listxattr with NUL-terminated names, under the same size protocol.
func xattrList(names []string, dest []byte) (uint32, syscall.Errno) {
	var b []byte
	for _, s := range names {
		b = append(append(b, s...), 0)
	}
	if len(dest) < len(b) {
		return uint32(len(b)), syscall.ERANGE
	}
	return uint32(copy(dest, b)), 0
}

var (
	_ = (fusefs.NodeSetxattrer)((*rowDir)(nil))
	_ = (fusefs.NodeRemovexattrer)((*rowDir)(nil))
)

// Directories have no writable attributes. A category's user.kint.key set to its own name is
// accepted and changes nothing (a copy that carried it); removing an attribute finds none.
func (d *rowDir) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	if errno := d.dirXattrChange(); errno != 0 {
		return errno
	}
	switch {
	case attr == xattrKey && d.category != nil && string(data) == *d.category:
		return 0
	case attr == xattrKey && d.category != nil:
		return syscall.EPERM
	}
	return syscall.ENOTSUP
}

func (d *rowDir) Removexattr(ctx context.Context, attr string) syscall.Errno {
	if errno := d.dirXattrChange(); errno != 0 {
		return errno
	}
	if !strings.HasPrefix(attr, "user.") {
		return syscall.ENOTSUP
	}
	return fusefs.ENOATTR
}

func (d *rowDir) dirXattrChange() syscall.Errno {
	switch {
	case !d.fs.opts.Xattrs:
		return syscall.ENOSYS
	case d.fs.readOnly(d.v):
		return syscall.EROFS
	}
	return 0
}

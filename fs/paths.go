package fs

import (
	"errors"
	"path/filepath"
	"strings"

	"kintfs/replica/vault"
	"kintfs/seal"
)

// The path of a row under the mount's root: TIER/NAME, or entity/CATEGORY/NAME. The
// directories resolve names with parseRowName, and a path outside the mount (kintfs verify)
// with KeyOfPath: one set of rules.

var (
	// ErrNotRowPath is a path that is not TIER/NAME or entity/CATEGORY/NAME.
	ErrNotRowPath = errors.New("not a row of the live tree (tier/key or entity/category/key)")
	// ErrBadCategoryName is a category directory name that no category escapes to.
	ErrBadCategoryName = errors.New("bad category name")
	// ErrBadFileName is a file name that no key escapes to.
	ErrBadFileName = errors.New("bad file name")
)

// rowName is what a name in a row directory says, read literally.
type rowName struct {
	key      string // the key it escapes; the name itself for a local file
	local    bool   // a local-only file (the name starts with '.')
	collided bool   // in entity/: a null-category entity named with a trailing '%'
}

// parseRowName reads a name in a row directory; entityRoot says the directory is entity/,
// where a trailing '%' marks a null-category entity whose plain name a category has taken.
func parseRowName(name string, entityRoot bool) (rowName, error) {
	if isLocalName(name) {
		return rowName{key: name, local: true}, nil
	}
	n := rowName{}
	s := name
	if entityRoot {
		if base, ok := splitCollided(name); ok {
			s, n.collided = base, true
		}
	}
	k, err := UnescapeName(s)
	if err != nil {
		return rowName{}, err
	}
	n.key = k
	return n, nil
}

// shortRowName reports whether name, in entityRoot or not, is a shortened name, whose key is
// then found by listing the directory or in the file's user.kint.key attribute.
func shortRowName(name string, entityRoot bool) bool {
	if base, ok := splitCollided(name); ok && entityRoot {
		name = base
	}
	return IsShortName(name)
}

// KeyOfPath is the row key a path relative to the mount's root names, read literally: whether
// the row exists is not asked, and a two-part path under entity/ names a null-category entity
// (never a category). short reports a shortened name: its key is then the file's
// user.kint.key attribute, and k.Key is empty. A local file's key has Local set.
func KeyOfPath(rel string) (k vault.Key, short bool, err error) {
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) < 2 || len(parts) > 3 || (len(parts) == 3 && parts[0] != seal.TierEntity) {
		return vault.Key{}, false, ErrNotRowPath
	}
	k = vault.Key{Tier: parts[0]}
	name := parts[len(parts)-1]
	if len(parts) == 3 {
		c, err := UnescapeName(parts[1])
		if err != nil {
			return k, false, ErrBadCategoryName
		}
		k.Category, k.HasCategory = c, true
	}
	entityRoot := len(parts) == 2 && parts[0] == seal.TierEntity
	if shortRowName(name, entityRoot) {
		return k, true, nil
	}
	n, err := parseRowName(name, entityRoot)
	if err != nil {
		return k, false, ErrBadFileName
	}
	k.Key, k.Local = n.key, n.local
	return k, false, nil
}

// PathOfKey is the path, relative to the mount's root, of the row k (a null-category entity
// whose name a category also takes is listed as entity/<name>%; this names it plainly).
func PathOfKey(k vault.Key) string {
	name := k.Key
	if !k.Local {
		name = EscapeName(k.Key)
	}
	if k.HasCategory {
		return k.Tier + "/" + EscapeName(k.Category) + "/" + name
	}
	return k.Tier + "/" + name
}

// localPath is the path under the mount of a file named name in the directory of tier and
// category, as local-only rules match it.
func localPath(k vault.Key) string {
	if !k.HasCategory {
		return k.Tier + "/" + k.Key
	}
	return k.Tier + "/" + EscapeName(k.Category) + "/" + k.Key
}

package store

import (
	"kintfs/replica/vault"
	"kintfs/seal"
)

var (
	_ vault.TreeReader = (*Store)(nil)
	_ vault.TreeReader = (*History)(nil)
)

// rowID is the canonical id of the row k names.
func rowID(k vault.Key) string { return seal.CanonicalID(k.Tier, k.CategoryPtr(), k.Key) }

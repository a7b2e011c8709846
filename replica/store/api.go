package store

import "kintfs/replica/vault"

var (
	_ vault.TreeReader = (*Store)(nil)
	_ vault.TreeReader = (*History)(nil)
)

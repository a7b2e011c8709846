package replica

import (
	"kintfs/replica/store"
	"kintfs/seal"
)

// The types, limits and errors of the local store that the mount and the CLI name through the
// engine. They are the store's own: an error here is the same value as its store original, so
// errors.Is holds across both names.
type (
	Key        = store.Key
	Version    = store.Version
	Dirent     = store.Dirent
	TreeReader = store.TreeReader
	Anchor     = store.Anchor
	Head       = store.Head
	EpochInfo  = store.EpochInfo
	Gap        = store.Gap
	Conflict   = store.Conflict
	HeldRow    = store.HeldRow
	AttrChange = store.AttrChange
	LocalAttrs = store.LocalAttrs
	Proof      = store.Proof
)

const (
	MaxFileBytes = store.MaxFileBytes
	TrashTier    = store.TrashTier
	ModelKint    = store.ModelKint
	ModelFull    = store.ModelFull
)

// Tiers, in the order the mount lists them.
var Tiers = store.Tiers

var (
	ErrNotFound          = store.ErrNotFound
	ErrExists            = store.ErrExists
	ErrNotEmpty          = store.ErrNotEmpty
	ErrReadOnly          = store.ErrReadOnly
	ErrInvalid           = store.ErrInvalid
	ErrStagingFull       = store.ErrStagingFull
	ErrCrossTier         = store.ErrCrossTier
	ErrFileTooBig        = store.ErrFileTooBig
	ErrValueTooLarge     = store.ErrValueTooLarge
	ErrHistoryIncomplete = store.ErrHistoryIncomplete
	ErrInUse             = store.ErrInUse
	ErrNotPermitted      = store.ErrNotPermitted
	ErrKeptInvalid       = store.ErrKeptInvalid
)

// RenderContent is the file content of a row: its body, or for a journal event the JSON
// object of its five fields.
func RenderContent(r *seal.Row) []byte { return store.RenderContent(r) }

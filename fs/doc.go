// Package fs is the kintfs mount: a FUSE tree over the replica.
//
//	MNT/
//	  entity/<key>              an entity whose category is null
//	  entity/<category>/<key>   an entity
//	  state/<key>
//	  reference/<key>
//	  journal/<journal key>     one event, read-only; create any file here to append one
//	  @<block>/...              the tree as anchored at or before that block, read-only
//	  .kint/ctl, status, blocks the control files
//
// Names. Keys and categories are arbitrary strings. In a file name '/' is %2F, '%' is %25,
// NUL is %00 and a leading '.' is %2E; the empty string is "%". Any other use of '%' is not a
// name (EINVAL). A name whose escaped form passes 255 bytes is shortened to a prefix, '~' and
// 16 hex digits of the SHA-256 of the key; user.kint.key holds the true key.
//
// Local files. A name that starts with '.' can only be a local file, since escaped keys never
// start with '.': editor swap and temporary files, and the conflict copies
// .<name>.conflict-<seq> a pull leaves. They are stored with everything else but never
// anchored.
//
// Categories and null-category entities in entity/. A category directory always keeps its
// plain name. A null-category entity whose name equals a category's is listed with a trailing
// '%' (entity/person% beside entity/person/). A trailing lone '%' never comes from escaping,
// so the name is unambiguous, and entity/name% always addresses the null-category entity
// name, whether or not a category name exists.
//
// Writes. An open file is buffered in memory; Flush (every close), Fsync and Rename hand it to
// the backend, and once they return the change is durable. Rename moves a row within its tier,
// across categories too; across tiers, into or out of @<block>, and of a category directory
// it is EXDEV, so mv copies instead. When a rename replaces a row and the file moved onto it
// has neither status nor meta (sed -i, an editor's temporary file), the replaced row's status
// and meta are kept. When a row is renamed to a name that did not exist, a file created under
// its old name within ten seconds gets its status and meta (an editor that renames the file to
// its backup and writes a fresh one, as Emacs does).
//
// Journal. Creating any file in journal/ and writing the JSON object of an event's fields
// appends the event when the file is closed; it is then listed under its content key. Moving
// a finished local file (journal/.tmp) onto any new name in journal/ appends it the same way.
package fs

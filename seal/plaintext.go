package seal

// Plaintext is one epoch's content before sealing. The wire "v" is always 1.
type Plaintext struct {
	Tenant    string
	Space     [32]byte
	Seq       uint64
	Prev      [32]byte
	Rows      []Row
	Deleted   []Deleted
	RowsRoot  [32]byte
	NRows     int
	CreatedAt string
	Snapshot  bool
}

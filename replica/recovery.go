package replica

import (
	"context"

	"github.com/ethereum/go-ethereum/common"

	"kintfs/chain"
	"kintfs/seal"
)

// HeadDekID is the data key id in the header of the head epoch (or of the newest one within
// maxHeaderWalk before it whose header parses), and that epoch's seq; seq 0 when the vault
// has no epoch yet.
func HeadDekID(ctx context.Context, c *chain.Client, owner common.Address, space common.Hash) ([8]byte, uint64, error) {
	head, err := c.Head(ctx, owner, space)
	if err != nil || head.Seq == 0 {
		return [8]byte{}, 0, err
	}
	h, seq, _, err := headHeader(ctx, c, owner, space, head)
	if err != nil {
		return [8]byte{}, 0, err
	}
	return h.DekID, seq, nil
}

// WriteRecoveryFile writes the recovery code of dek to RECOVERY-<space16>.txt (mode 0600) and
// returns its path.
func (h Home) WriteRecoveryFile(v *VaultConfig, dek [32]byte) (string, error) {
	text := "kint recovery code for owner " + v.Owner.Hex() + " tenant " + v.Tenant + ":\n" + seal.EncodeRecoveryCode(dek) + "\n"
	if err := h.WriteFile([]byte(text), "RECOVERY-"+v.Space16()+".txt"); err != nil {
		return "", err
	}
	return h.RecoveryFile(v), nil
}

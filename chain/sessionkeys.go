package chain

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"

	"github.com/ethereum/go-ethereum/accounts/keystore"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"
)

// SessionKeyExpiry reads sessionKeyExpiry(owner, key): a unix time, 0 when revoked or
// never set.
func (c *Client) SessionKeyExpiry(ctx context.Context, owner, key common.Address) (uint64, error) {
	out, err := c.ethCall(ctx, anchor.PackSessionKeyExpiry(owner, key))
	if err != nil {
		return 0, fmt.Errorf("read session key expiry: %w", err)
	}
	v, err := anchor.UnpackSessionKeyExpiry(out)
	if err != nil {
		return 0, fmt.Errorf("read session key expiry: %w", err)
	}
	return v, nil
}

// CanWrite reads canWrite(owner, key) at the latest block.
func (c *Client) CanWrite(ctx context.Context, owner, key common.Address) (bool, error) {
	out, err := c.ethCall(ctx, anchor.PackCanWrite(owner, key))
	if err != nil {
		return false, fmt.Errorf("read canWrite: %w", err)
	}
	v, err := anchor.UnpackCanWrite(out)
	if err != nil {
		return false, fmt.Errorf("read canWrite: %w", err)
	}
	return v, nil
}

// SetSessionKey sends setSessionKey(key, expiry) from the owner's own key and waits for it
// to be mined. It consumes the owner's authorization nonce.
func (c *Client) SetSessionKey(ctx context.Context, ownerKey *ecdsa.PrivateKey, key common.Address, expiry uint64) (*types.Receipt, error) {
	r, err := c.transact(ctx, ownerKey, c.contract, anchor.PackSetSessionKey(key, expiry), nil)
	if err != nil {
		return r, fmt.Errorf("set session key %s: %w", key, err)
	}
	return r, nil
}

// AuthorizationDigest returns the EIP-712 digest the owner signs to authorize key until
// expiry, over the owner's current nonce (also returned), as the contract computes it.
func (c *Client) AuthorizationDigest(ctx context.Context, owner, key common.Address, expiry uint64, deadline *big.Int) (common.Hash, *big.Int, error) {
	out, err := c.ethCall(ctx, anchor.PackAuthNonce(owner))
	if err != nil {
		return common.Hash{}, nil, fmt.Errorf("read authNonce: %w", err)
	}
	nonce, err := anchor.UnpackAuthNonce(out)
	if err != nil {
		return common.Hash{}, nil, fmt.Errorf("read authNonce: %w", err)
	}
	out, err = c.ethCall(ctx, anchor.PackAuthorizationDigest(owner, key, expiry, nonce, deadline))
	if err != nil {
		return common.Hash{}, nil, fmt.Errorf("read authorizationDigest: %w", err)
	}
	d, err := anchor.UnpackAuthorizationDigest(out)
	if err != nil {
		return common.Hash{}, nil, fmt.Errorf("read authorizationDigest: %w", err)
	}
	return d, nonce, nil
}

// SetSessionKeyBySig submits the owner's signed authorization from sender (normally the
// session key itself, which pays) and waits for it to be mined.
func (c *Client) SetSessionKeyBySig(ctx context.Context, sender *ecdsa.PrivateKey, owner, key common.Address, expiry uint64, deadline *big.Int, sig []byte) (*types.Receipt, error) {
	r, err := c.transact(ctx, sender, c.contract, anchor.PackSetSessionKeyBySig(owner, key, expiry, deadline, sig), nil)
	if err != nil {
		return r, fmt.Errorf("authorize session key %s: %w", key, err)
	}
	return r, nil
}

// Fund sends wei from one key to an address and waits for it to be mined.
func (c *Client) Fund(ctx context.Context, from *ecdsa.PrivateKey, to common.Address, wei *big.Int) error {
	if _, err := c.transact(ctx, from, to, nil, wei); err != nil {
		return fmt.Errorf("fund %s: %w", to, err)
	}
	return nil
}

// SessionKeyFile is the keystore file of the session key inside its directory.
const SessionKeyFile = "session.key"

// SessionKeyScryptN and SessionKeyScryptP are the scrypt parameters of new session key
// files. go-ethereum's light ones: the passphrase is a 256-bit secret derived from the local
// key, not something typed, so the standard setting (256 MB and a second per unlock) would
// buy nothing and cost every command and every mount.
var (
	SessionKeyScryptN = keystore.LightScryptN
	SessionKeyScryptP = keystore.LightScryptP
)

// ErrSessionKeyExists: CreateSessionKey never overwrites a key.
var ErrSessionKeyExists = errors.New("a session key already exists")

// CreateSessionKey generates a session key and stores it as a go-ethereum V3 keystore
// file, dir/session.key (mode 0600, dir 0700), encrypted with passphrase.
func CreateSessionKey(dir string, passphrase string) (common.Address, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return common.Address{}, fmt.Errorf("create session key: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return common.Address{}, fmt.Errorf("create session key: %w", err)
	}
	path := filepath.Join(dir, SessionKeyFile)
	if _, err := os.Lstat(path); err == nil {
		return common.Address{}, fmt.Errorf("%w at %s", ErrSessionKeyExists, path)
	}
	priv, err := crypto.GenerateKey()
	if err != nil {
		return common.Address{}, fmt.Errorf("create session key: %w", err)
	}
	id, err := uuid.NewRandom()
	if err != nil {
		return common.Address{}, fmt.Errorf("create session key: %w", err)
	}
	k := &keystore.Key{Id: id, Address: crypto.PubkeyToAddress(priv.PublicKey), PrivateKey: priv}
	blob, err := keystore.EncryptKey(k, passphrase, SessionKeyScryptN, SessionKeyScryptP)
	if err != nil {
		return common.Address{}, fmt.Errorf("create session key: %w", err)
	}
	if err := writeNewFile(path, blob); err != nil {
		if errors.Is(err, os.ErrExist) {
			return common.Address{}, fmt.Errorf("%w at %s", ErrSessionKeyExists, path)
		}
		return common.Address{}, fmt.Errorf("create session key: %w", err)
	}
	return k.Address, nil
}

// LoadSessionKey decrypts dir/session.key.
func LoadSessionKey(dir string, passphrase string) (*ecdsa.PrivateKey, common.Address, error) {
	path := filepath.Join(dir, SessionKeyFile)
	blob, err := os.ReadFile(path)
	if err != nil {
		return nil, common.Address{}, fmt.Errorf("load session key: %w", err)
	}
	k, err := keystore.DecryptKey(blob, passphrase)
	if err != nil {
		return nil, common.Address{}, fmt.Errorf("load session key %s: %w", path, err)
	}
	return k.PrivateKey, k.Address, nil
}

// writeNewFile writes data to a 0600 temporary file next to path and links it into place:
// a crash leaves no half-written file and an existing file is never replaced.
func writeNewFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}

// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title TestWallet
/// @notice A minimal ERC-1271 account for tests. Depending on `mode` it checks that `signer`
///         made a 65-byte signature, accepts anything, refuses everything, reverts, or
///         answers with malformed return data.
contract TestWallet {
    uint8 public constant MODE_SIGNER = 0;
    uint8 public constant MODE_ACCEPT = 1;
    uint8 public constant MODE_REFUSE = 2;
    uint8 public constant MODE_REVERT = 3;
    uint8 public constant MODE_SHORT = 4;

    address public signer;
    uint8 public mode;

    constructor(address signer_) {
        signer = signer_;
    }

    function setSigner(address signer_) external {
        signer = signer_;
    }

    function setMode(uint8 mode_) external {
        mode = mode_;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        uint8 m = mode;
        if (m == MODE_ACCEPT) return 0x1626ba7e;
        if (m == MODE_REFUSE) return 0xffffffff;
        if (m == MODE_REVERT) revert("TestWallet: refused");
        if (m == MODE_SHORT) {
            assembly {
                mstore(0, 0x1626ba7e00000000000000000000000000000000000000000000000000000000)
                return(0, 2)
            }
        }
        if (signature.length != 65) return 0xffffffff;
        uint8 v = uint8(signature[64]);
        if (v < 27) v += 27;
        address got = ecrecover(hash, v, bytes32(signature[0:32]), bytes32(signature[32:64]));
        return got != address(0) && got == signer ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }

    /// @notice Lets the wallet act as an owner in tests (for example to call setSessionKey).
    function execute(address target, bytes calldata data) external returns (bytes memory) {
        (bool ok, bytes memory ret) = target.call(data);
        if (!ok) {
            assembly {
                revert(add(ret, 32), mload(ret))
            }
        }
        return ret;
    }
}

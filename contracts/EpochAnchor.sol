// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title EpochAnchor
/// @notice Keeps, per (owner, space), the digest, sequence number and block of the newest
///         epoch. The epoch itself (the ciphertext) stays in the calldata of `push`: it is
///         hashed and never written to storage or to an event.
/// @dev No owner, no admin, no proxy, no ETH handling, no fallback.
contract EpochAnchor {
    struct HeadRecord {
        bytes32 digest;
        uint64 seq;
        uint64 blockNumber;
    }

    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant NAME_HASH = keccak256("kint EpochAnchor");
    bytes32 private constant VERSION_HASH = keccak256("1");
    bytes32 private constant AUTHORIZATION_TYPEHASH =
        keccak256("SessionKeyAuthorization(address owner,address key,uint64 expiry,uint256 nonce,uint256 deadline)");

    /// @dev bytes4(keccak256("isValidSignature(bytes32,bytes)")), left-aligned in a word.
    bytes32 private constant ERC1271_MAGIC = bytes32(bytes4(0x1626ba7e));

    /// @dev secp256k1 group order divided by two: a larger `s` is the malleable twin.
    uint256 private constant HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    mapping(address owner => mapping(bytes32 space => HeadRecord)) private _heads;
    mapping(address owner => mapping(address key => uint64)) private _expiries;
    mapping(address owner => uint256) private _nonces;
    mapping(address owner => mapping(bytes32 space => uint64)) private _startSeqs;

    event Epoch(
        address indexed owner,
        bytes32 indexed space,
        address indexed writer,
        uint64 seq,
        bytes32 prev,
        bytes32 digest,
        uint64 prevBlock
    );
    event SessionKeySet(address indexed owner, address indexed key, uint64 expiry);
    event StartSeqSet(address indexed owner, bytes32 indexed space, uint64 seq);

    error NotAuthorized();
    error EmptyCiphertext();
    error StaleHead(bytes32 expected, bytes32 got);
    error AuthorizationExpired();
    error BadSignature();
    error SeqNotMonotone();

    // ------------------------------------------------------------------ epochs

    function head(address owner, bytes32 space)
        external
        view
        returns (bytes32 digest, uint64 seq, uint64 blockNumber)
    {
        HeadRecord storage h = _heads[owner][space];
        return (h.digest, h.seq, h.blockNumber);
    }

    /// @notice Appends one epoch on top of `prev`. Checks, in order: the sender may write for
    ///         `owner`, `ct` is not empty, `prev` is the current head digest.
    function push(address owner, bytes32 space, bytes32 prev, bytes calldata ct)
        external
        returns (bytes32 digest, uint64 seq)
    {
        if (!canWrite(owner, msg.sender)) revert NotAuthorized();
        if (ct.length == 0) revert EmptyCiphertext();

        HeadRecord storage h = _heads[owner][space];
        bytes32 current = h.digest;
        if (prev != current) revert StaleHead(current, prev);

        uint64 prevBlock = h.blockNumber;
        digest = keccak256(ct);
        seq = h.seq + 1;

        h.digest = digest;
        h.seq = seq;
        h.blockNumber = uint64(block.number);

        emit Epoch(owner, space, msg.sender, seq, prev, digest, prevBlock);
    }

    function startSeq(address owner, bytes32 space) external view returns (uint64 seq) {
        return _startSeqs[owner][space];
    }

    /// @notice Records where readers should start walking the sender's chain in `space`.
    ///         Non-decreasing: the same value again is accepted, a lower one is not.
    function setStartSeq(bytes32 space, uint64 seq) external {
        if (seq < _startSeqs[msg.sender][space]) revert SeqNotMonotone();
        _startSeqs[msg.sender][space] = seq;
        emit StartSeqSet(msg.sender, space, seq);
    }

    // ------------------------------------------------------------ session keys

    function canWrite(address owner, address writer) public view returns (bool) {
        return writer == owner || _expiries[owner][writer] > block.timestamp;
    }

    function sessionKeyExpiry(address owner, address key) external view returns (uint64 expiry) {
        return _expiries[owner][key];
    }

    function authNonce(address owner) external view returns (uint256 nonce) {
        return _nonces[owner];
    }

    /// @notice Authorizes `key` to push for the sender until `expiry` (0 revokes). Consumes
    ///         the sender's authorization nonce, so withheld signatures die with it.
    function setSessionKey(address key, uint64 expiry) external {
        _setKey(msg.sender, key, expiry);
    }

    function revokeSessionKey(address key) external {
        _setKey(msg.sender, key, 0);
    }

    /// @notice Authorizes `key` for `owner` with the owner's EIP-712 signature over the
    ///         current nonce; anyone may submit it.
    function setSessionKeyBySig(
        address owner,
        address key,
        uint64 expiry,
        uint256 deadline,
        bytes calldata signature
    ) external {
        if (block.timestamp > deadline) revert AuthorizationExpired();
        bytes32 digest = authorizationDigest(owner, key, expiry, _nonces[owner], deadline);
        if (!_signedBy(owner, digest, signature)) revert BadSignature();
        _setKey(owner, key, expiry);
    }

    // ------------------------------------------------------------------ EIP-712

    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, block.chainid, address(this)));
    }

    function authorizationDigest(address owner, address key, uint64 expiry, uint256 nonce, uint256 deadline)
        public
        view
        returns (bytes32)
    {
        bytes32 structHash = keccak256(abi.encode(AUTHORIZATION_TYPEHASH, owner, key, expiry, nonce, deadline));
        return keccak256(abi.encodePacked(hex"1901", DOMAIN_SEPARATOR(), structHash));
    }

    // ---------------------------------------------------------------- internals

    function _setKey(address owner, address key, uint64 expiry) private {
        _expiries[owner][key] = expiry;
        unchecked {
            _nonces[owner] += 1;
        }
        emit SessionKeySet(owner, key, expiry);
    }

    function _signedBy(address owner, bytes32 digest, bytes calldata signature) private view returns (bool) {
        if (owner.code.length > 0) {
            (bool ok, bytes memory ret) =
                owner.staticcall(abi.encodeWithSelector(bytes4(ERC1271_MAGIC), digest, signature));
            return ok && ret.length >= 32 && abi.decode(ret, (bytes32)) == ERC1271_MAGIC;
        }
        if (signature.length != 65) return false;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (v < 27) v += 27;
        if (v != 27 && v != 28) return false;
        if (uint256(s) > HALF_ORDER) return false;
        address signer = ecrecover(digest, v, r, s);
        return signer != address(0) && signer == owner;
    }
}

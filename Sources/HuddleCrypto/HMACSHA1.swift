/// HMAC-SHA1 (RFC 2104), one-shot: STUN's MESSAGE-INTEGRITY (RFC 8489 14.5), the only use in Huddle.
///
/// Verify with ``isValidAuthenticationCode(_:for:key:)``, which compares in constant time.
public enum HMACSHA1 {
    /// The tag length in bytes.
    public static let outputLength = SHA1.digestLength

    /// The HMAC-SHA1 tag of `message` under `key` (keys longer than 64 bytes are hashed first, per RFC 2104).
    public static func authenticationCode(for message: some Sequence<UInt8>, key: some Sequence<UInt8>) -> [UInt8] {
        var block = Array(key)
        if block.count > SHA1.blockLength { block = SHA1.hash(block) }
        block += [UInt8](repeating: 0, count: SHA1.blockLength - block.count)
        let inner = SHA1.hash(block.map { $0 ^ 0x36 } + Array(message))
        return SHA1.hash(block.map { $0 ^ 0x5C } + inner)
    }

    /// Whether `code` is the tag of `message` under `key`, compared in constant time.
    public static func isValidAuthenticationCode(
        _ code: some Sequence<UInt8>, for message: some Sequence<UInt8>, key: some Sequence<UInt8>
    ) -> Bool {
        ConstantTime.equals(authenticationCode(for: message, key: key), code)
    }
}

import HuddleCrypto
import HuddleWire

/// The WireGuard-style `mac1` / `mac2` fields of handshake messages, keyed for Huddle.
///
/// - `mac1` = BLAKE2b-128 keyed by `BLAKE2b-256(key: macSecret, "huddle mac1 v1" || receiver static key)` over the
///   message up to `mac1`. `macSecret` is derived from the session secret (members) or the invitation secret
///   (joiners), so a stranger who knows neither cannot make a node do any Diffie-Hellman work: checking `mac1` costs
///   one keyed hash, and a bad one gets no reply (TEST-MATRIX H4, D1).
/// - `mac2` = BLAKE2b-128 keyed by a cookie over the message up to `mac2`; it proves the sender can receive at its
///   source address, and is only demanded under load (H12).
public struct MacAuthenticator: Sendable {
    /// Length of `mac1`, `mac2` and cookies in bytes.
    public static let macLength = 16
    static let mac1Label = Array("huddle mac1 v1".utf8)
    static let cookieLabel = Array("huddle cookie v1".utf8)

    /// The key for `mac1` on messages addressed to the owner of `receiverStatic`.
    let mac1Key: SecureBytes
    /// The XChaCha20-Poly1305 key for cookie replies sent by the owner of `receiverStatic`.
    let cookieKey: SymmetricKey

    /// Keys for messages sent to (or, on the receiving side, by) the owner of `receiverStatic`.
    public init(macSecret: SecureBytes, receiverStatic: X25519PublicKey) throws {
        mac1Key = try Self.derive(label: Self.mac1Label, receiverStatic: receiverStatic, macSecret: macSecret)
        cookieKey = try SymmetricKey(
            Self.derive(label: Self.cookieLabel, receiverStatic: receiverStatic, macSecret: macSecret))
    }

    private static func derive(
        label: [UInt8], receiverStatic: X25519PublicKey, macSecret: SecureBytes
    ) throws
        -> SecureBytes
    {
        var hasher = try BLAKE2b(outputLength: 32, key: macSecret)
        hasher.update(label)
        hasher.update(receiverStatic.bytes)
        var digest = hasher.finalize()
        defer { digest.withUnsafeMutableBytes { zeroize($0) } }
        return SecureBytes(digest)
    }

    /// Writes `mac1` (and `mac2` when a cookie is given, else zeros) into an encoded handshake message in place.
    /// `mac1Offset` / `mac2Offset` are the layout's offsets (`HandshakeInitiation.mac1Offset`, ...).
    public func stamp(_ message: inout [UInt8], mac1Offset: Int, mac2Offset: Int, cookie: [UInt8]?) throws {
        let mac1 = try mac(key: mac1Key, over: message[0..<mac1Offset])
        message.replaceSubrange(mac1Offset..<(mac1Offset + Self.macLength), with: mac1)
        if let cookie {
            let mac2 = try BLAKE2b.hash(message[0..<mac2Offset], outputLength: Self.macLength, key: cookie)
            message.replaceSubrange(mac2Offset..<(mac2Offset + Self.macLength), with: mac2)
        } else {
            message.replaceSubrange(mac2Offset..<(mac2Offset + Self.macLength), with: repeatElement(0, count: 16))
        }
    }

    /// Whether `other` checks `mac1` with the same key (compared in constant time): peers whose credentials share a
    /// `macSecret` (every member of a session) do.
    func hasSameMac1Key(as other: MacAuthenticator) -> Bool { mac1Key.constantTimeEquals(other.mac1Key) }

    /// Whether `message` carries a valid `mac1`, compared in constant time.
    public func hasValidMac1(_ message: [UInt8], mac1Offset: Int) -> Bool {
        guard message.count >= mac1Offset + Self.macLength,
            let expected = try? mac(key: mac1Key, over: message[0..<mac1Offset])
        else { return false }
        return ConstantTime.equals(expected, message[mac1Offset..<(mac1Offset + Self.macLength)])
    }

    /// Whether `message` carries a valid `mac2` for `cookie`, compared in constant time.
    public static func hasValidMac2(_ message: [UInt8], mac2Offset: Int, cookie: [UInt8]) -> Bool {
        guard message.count >= mac2Offset + macLength,
            let expected = try? BLAKE2b.hash(message[0..<mac2Offset], outputLength: macLength, key: cookie)
        else { return false }
        return ConstantTime.equals(expected, message[mac2Offset..<(mac2Offset + macLength)])
    }

    /// Seals `cookie` for a cookie reply: XChaCha20-Poly1305 under the cookie key, with the answered message's
    /// `mac1` as associated data (so a reply cannot be moved to another initiation).
    public func sealCookie(
        _ cookie: [UInt8], nonce: [UInt8], answeringMac1 mac1: some Collection<UInt8>
    ) throws -> [UInt8] {
        try XChaChaPoly.seal(cookie, nonce: nonce, authenticating: Array(mac1), key: cookieKey)
    }

    /// Opens a cookie reply's encrypted cookie; throws for forged or misdirected replies.
    public func openCookie(
        _ sealed: some Collection<UInt8>, nonce: some Collection<UInt8>, answeringMac1 mac1: some Collection<UInt8>
    ) throws -> [UInt8] {
        try XChaChaPoly.open(Array(sealed), nonce: Array(nonce), authenticating: Array(mac1), key: cookieKey)
    }

    /// Seals a handshake refusal's plaintext (``HandshakeRefusal/plaintext(naming:)``): XChaCha20-Poly1305 under the
    /// cookie key, authenticating the refusal's first 8 bytes and the refused initiation's `mac1`. The header keeps a
    /// refusal from being read as a cookie reply under the same key, and `mac1` ties it to one initiation.
    public func sealRefusal(
        _ plaintext: [UInt8], nonce: [UInt8], header: [UInt8], answeringMac1 mac1: some Collection<UInt8>
    ) throws -> [UInt8] {
        try XChaChaPoly.seal(plaintext, nonce: nonce, authenticating: header + mac1, key: cookieKey)
    }

    /// Opens a handshake refusal's encrypted prologue; throws for forged or misdirected refusals.
    public func openRefusal(
        _ sealed: [UInt8], nonce: [UInt8], header: [UInt8], answeringMac1 mac1: some Collection<UInt8>
    ) throws -> [UInt8] {
        try XChaChaPoly.open(sealed, nonce: nonce, authenticating: header + mac1, key: cookieKey)
    }

    private func mac(key: SecureBytes, over bytes: ArraySlice<UInt8>) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Self.macLength)
        try key.withUnsafeBytes { keyBytes in
            try bytes.withUnsafeBytes { input in
                try output.withUnsafeMutableBytes { try BLAKE2b.hash(input, key: keyBytes, into: $0) }
            }
        }
        return output
    }
}

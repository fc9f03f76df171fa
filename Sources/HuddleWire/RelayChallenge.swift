/// RELAY_CHALLENGE (packet type 6, exactly 52 bytes): a relay's answer to a RELAY_REGISTER without a valid token.
///
/// Layout: `type = 6 (1) | reserved = 0 (3) | relay static key (32) | token (16)`. The token binds the client's
/// address and key to a time window, so the relay keeps no state and does no Diffie-Hellman for a client that has
/// not shown it receives at its source address.
public struct RelayChallenge: Hashable, Sendable, WireEncodable {
    /// The exact datagram length, 52 bytes.
    public static let encodedLength = 52

    /// The relay's X25519 static key (32 bytes).
    public var relayKey: [UInt8]
    /// The token the client echoes (16 bytes).
    public var token: [UInt8]

    /// A challenge, checking every field's length.
    public init(relayKey: [UInt8], token: [UInt8]) throws(WireError) {
        self.relayKey = relayKey
        self.token = token
        try validate()
    }

    /// Decodes a whole datagram.
    public init(decoding datagram: UnsafeRawBufferPointer) throws(WireError) {
        var reader = try HandshakeField.openPacket(datagram, type: .relayChallenge, length: Self.encodedLength)
        relayKey = try reader.readArray(count: 32)
        token = try reader.readArray(count: 16)
    }

    /// Decodes a whole datagram; see ``init(decoding:)-(UnsafeRawBufferPointer)``.
    public init(decoding datagram: [UInt8]) throws(WireError) {
        self = try HandshakeField.withBytes(datagram) { raw throws(WireError) in try Self(decoding: raw) }
    }

    /// Always 52.
    public var encodedLength: Int { Self.encodedLength }

    /// Throws ``WireError/invalidFieldLength(field:expected:actual:)`` for a field of the wrong size.
    public func validate() throws(WireError) {
        try HandshakeField.check(relayKey, .relayKey, length: 32)
        try HandshakeField.check(token, .relayToken, length: 16)
    }

    /// Writes the 52-byte datagram.
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        try validate()
        try writer.require(Self.encodedLength)
        try HandshakeField.writePrefix(.relayChallenge, into: &writer)
        try writer.writeBytes(relayKey)
        try writer.writeBytes(token)
    }
}

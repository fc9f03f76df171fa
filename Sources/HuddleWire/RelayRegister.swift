/// RELAY_REGISTER (packet type 5, exactly 68 bytes): a node asks a relay to forward packets for its static key.
///
/// Layout: `type = 5 (1) | reserved = 0 (3) | client static key (32) | token (16) | mac (16)`. The first REGISTER
/// carries a zero token and MAC and draws a ``RelayChallenge``; the next one echoes its token and proves the key with
/// a MAC keyed by the X25519 agreement between the client's and the relay's static keys (docs/PROTOCOL.md 10).
public struct RelayRegister: Hashable, Sendable, WireEncodable {
    /// The exact datagram length, 68 bytes.
    public static let encodedLength = 68
    /// Where the MAC starts: it covers every byte before it.
    public static let macOffset = 52

    /// The client's Noise static key (32 bytes).
    public var clientKey: [UInt8]
    /// The token of the relay's last ``RelayChallenge`` (16 bytes), zero when the client has none.
    public var token: [UInt8]
    /// The proof of the client key (16 bytes), zero when the client has no token.
    public var mac: [UInt8]

    /// A register packet, checking every field's length.
    public init(clientKey: [UInt8], token: [UInt8], mac: [UInt8]) throws(WireError) {
        self.clientKey = clientKey
        self.token = token
        self.mac = mac
        try validate()
    }

    /// Decodes a whole datagram.
    public init(decoding datagram: UnsafeRawBufferPointer) throws(WireError) {
        var reader = try HandshakeField.openPacket(datagram, type: .relayRegister, length: Self.encodedLength)
        clientKey = try reader.readArray(count: 32)
        token = try reader.readArray(count: 16)
        mac = try reader.readArray(count: 16)
    }

    /// Decodes a whole datagram; see ``init(decoding:)-(UnsafeRawBufferPointer)``.
    public init(decoding datagram: [UInt8]) throws(WireError) {
        self = try HandshakeField.withBytes(datagram) { raw throws(WireError) in try Self(decoding: raw) }
    }

    /// Always 68.
    public var encodedLength: Int { Self.encodedLength }

    /// Throws ``WireError/invalidFieldLength(field:expected:actual:)`` for a field of the wrong size.
    public func validate() throws(WireError) {
        try HandshakeField.check(clientKey, .relayKey, length: 32)
        try HandshakeField.check(token, .relayToken, length: 16)
        try HandshakeField.check(mac, .relayMAC, length: 16)
    }

    /// Writes the 68-byte datagram.
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        try validate()
        try writer.require(Self.encodedLength)
        try HandshakeField.writePrefix(.relayRegister, into: &writer)
        try writer.writeBytes(clientKey)
        try writer.writeBytes(token)
        try writer.writeBytes(mac)
    }
}

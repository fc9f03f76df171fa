/// A cookie reply, sent instead of a handshake response when the responder is under load; exactly
/// 64 bytes, so it is always smaller than the 152-byte initiation or 92-byte response it answers.
///
/// Layout (WireGuard's), little-endian:
/// `type = 3 (1) | reserved = 0 (3) | receiver index (4) | nonce (24) | encrypted cookie (32)`.
public struct CookieReply: Hashable, Sendable, WireEncodable {
    /// The exact datagram length, 64 bytes.
    public static let encodedLength = 64

    /// The sender index of the handshake message being answered.
    public var receiverIndex: ReceiverIndex
    /// The XChaCha20-Poly1305 nonce (24 bytes).
    public var nonce: [UInt8]
    /// The 16-byte cookie, AEAD-encrypted (16 + 16-byte tag = 32 bytes).
    public var encryptedCookie: [UInt8]

    /// Creates a cookie reply, checking every byte field's length.
    ///
    /// Throws ``WireError/invalidFieldLength(field:expected:actual:)`` for a field of the wrong size.
    public init(receiverIndex: ReceiverIndex, nonce: [UInt8], encryptedCookie: [UInt8]) throws(WireError) {
        self.receiverIndex = receiverIndex
        self.nonce = nonce
        self.encryptedCookie = encryptedCookie
        try validate()
    }

    /// Decodes a cookie reply from a whole datagram.
    ///
    /// Throws if the datagram is not exactly 64 bytes, is not of type 3, or has non-zero reserved bytes.
    public init(decoding datagram: UnsafeRawBufferPointer) throws(WireError) {
        var reader = try HandshakeField.openPacket(datagram, type: .cookieReply, length: Self.encodedLength)
        receiverIndex = ReceiverIndex(try reader.readUInt32LE())
        nonce = try reader.readArray(count: 24)
        encryptedCookie = try reader.readArray(count: 32)
    }

    /// Decodes a cookie reply from a whole datagram; see ``init(decoding:)-(UnsafeRawBufferPointer)``.
    public init(decoding datagram: [UInt8]) throws(WireError) {
        self = try HandshakeField.withBytes(datagram) { raw throws(WireError) in try Self(decoding: raw) }
    }

    /// Always 64.
    public var encodedLength: Int { Self.encodedLength }

    /// Throws ``WireError/invalidFieldLength(field:expected:actual:)`` if a byte field has the wrong size.
    public func validate() throws(WireError) {
        try HandshakeField.check(nonce, .cookieNonce, length: 24)
        try HandshakeField.check(encryptedCookie, .encryptedCookie, length: 32)
    }

    /// Writes the 64-byte datagram.
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        try validate()
        try writer.require(Self.encodedLength)
        try HandshakeField.writePrefix(.cookieReply, into: &writer)
        try writer.writeUInt32LE(receiverIndex.rawValue)
        try writer.writeBytes(nonce)
        try writer.writeBytes(encryptedCookie)
    }
}

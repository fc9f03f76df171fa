/// Handshake message 2 (Noise IKpsk2 `<- e, ee, se, psk` with an empty payload), exactly 92 bytes.
///
/// Layout (WireGuard's), little-endian:
/// `type = 2 (1) | reserved = 0 (3) | sender index (4) | receiver index (4) | ephemeral (32) |
/// encrypted nothing (16) | mac1 (16) | mac2 (16)`.
///
/// `mac1` covers bytes `0 ..< mac1Offset`, `mac2` covers bytes `0 ..< mac2Offset`.
public struct HandshakeResponse: Hashable, Sendable, WireEncodable {
    /// The exact datagram length, 92 bytes.
    public static let encodedLength = 92
    /// Offset of the `mac1` field; `mac1` is computed over the bytes before it.
    public static let mac1Offset = 60
    /// Offset of the `mac2` field; `mac2` is computed over the bytes before it.
    public static let mac2Offset = 76

    /// The index the responder chose for this session.
    public var senderIndex: ReceiverIndex
    /// The initiator's sender index, echoed back.
    public var receiverIndex: ReceiverIndex
    /// The responder's unencrypted ephemeral X25519 public key (32 bytes).
    public var ephemeral: [UInt8]
    /// The AEAD tag over the empty payload (16 bytes).
    public var encryptedNothing: [UInt8]
    /// The first MAC (16 bytes).
    public var mac1: [UInt8]
    /// The cookie MAC (16 bytes), all zero when no cookie is held.
    public var mac2: [UInt8]

    /// Creates a response, checking every byte field's length.
    ///
    /// Throws ``WireError/invalidFieldLength(field:expected:actual:)`` for a field of the wrong size.
    public init(
        senderIndex: ReceiverIndex,
        receiverIndex: ReceiverIndex,
        ephemeral: [UInt8],
        encryptedNothing: [UInt8],
        mac1: [UInt8] = [UInt8](repeating: 0, count: 16),
        mac2: [UInt8] = [UInt8](repeating: 0, count: 16)
    ) throws(WireError) {
        self.senderIndex = senderIndex
        self.receiverIndex = receiverIndex
        self.ephemeral = ephemeral
        self.encryptedNothing = encryptedNothing
        self.mac1 = mac1
        self.mac2 = mac2
        try validate()
    }

    /// Decodes a response from a whole datagram.
    ///
    /// Throws if the datagram is not exactly 92 bytes, is not of type 2, or has non-zero reserved bytes.
    public init(decoding datagram: UnsafeRawBufferPointer) throws(WireError) {
        var reader = try HandshakeField.openPacket(datagram, type: .handshakeResponse, length: Self.encodedLength)
        senderIndex = ReceiverIndex(try reader.readUInt32LE())
        receiverIndex = ReceiverIndex(try reader.readUInt32LE())
        ephemeral = try reader.readArray(count: 32)
        encryptedNothing = try reader.readArray(count: 16)
        mac1 = try reader.readArray(count: 16)
        mac2 = try reader.readArray(count: 16)
    }

    /// Decodes a response from a whole datagram; see ``init(decoding:)-(UnsafeRawBufferPointer)``.
    public init(decoding datagram: [UInt8]) throws(WireError) {
        self = try HandshakeField.withBytes(datagram) { raw throws(WireError) in try Self(decoding: raw) }
    }

    /// Always 92.
    public var encodedLength: Int { Self.encodedLength }

    /// Throws ``WireError/invalidFieldLength(field:expected:actual:)`` if a byte field has the wrong size.
    public func validate() throws(WireError) {
        try HandshakeField.check(ephemeral, .ephemeral, length: 32)
        try HandshakeField.check(encryptedNothing, .encryptedNothing, length: 16)
        try HandshakeField.check(mac1, .mac1, length: 16)
        try HandshakeField.check(mac2, .mac2, length: 16)
    }

    /// Writes the 92-byte datagram.
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        try validate()
        try writer.require(Self.encodedLength)
        try HandshakeField.writePrefix(.handshakeResponse, into: &writer)
        try writer.writeUInt32LE(senderIndex.rawValue)
        try writer.writeUInt32LE(receiverIndex.rawValue)
        try writer.writeBytes(ephemeral)
        try writer.writeBytes(encryptedNothing)
        try writer.writeBytes(mac1)
        try writer.writeBytes(mac2)
    }
}

/// Handshake message 1 (Noise IKpsk2 `-> e, es, s, ss` plus a payload of a TAI64N timestamp and a resumption
/// index), exactly 152 bytes.
///
/// Layout (WireGuard's, with a 4-byte longer payload), little-endian:
/// `type = 1 (1) | reserved = 0 (3) | sender index (4) | ephemeral (32) | encrypted static (48) |
/// encrypted payload (32 = timestamp 12 + resumption index 4 + tag 16) | mac1 (16) | mac2 (16)`.
///
/// `mac1` covers bytes `0 ..< mac1Offset`, `mac2` covers bytes `0 ..< mac2Offset`; the protocol layer
/// computes them over the encoded bytes. Handshakes are rare, so byte fields are plain arrays; their
/// lengths are checked at initialisation and again when encoding.
public struct HandshakeInitiation: Hashable, Sendable, WireEncodable {
    /// The exact datagram length, 152 bytes.
    public static let encodedLength = 152
    /// Offset of the `mac1` field; `mac1` is computed over the bytes before it.
    public static let mac1Offset = 120
    /// Offset of the `mac2` field; `mac2` is computed over the bytes before it.
    public static let mac2Offset = 136

    /// The index the initiator chose for this session; the responder sends it back as receiver index.
    public var senderIndex: ReceiverIndex
    /// The initiator's unencrypted ephemeral X25519 public key (32 bytes).
    public var ephemeral: [UInt8]
    /// The initiator's static public key, AEAD-encrypted (32 + 16-byte tag = 48 bytes).
    public var encryptedStatic: [UInt8]
    /// The payload, AEAD-encrypted: the TAI64N timestamp and the resumption index (12 + 4 + 16-byte tag = 32 bytes).
    public var encryptedPayload: [UInt8]
    /// The first MAC (16 bytes), keyed from session material.
    public var mac1: [UInt8]
    /// The cookie MAC (16 bytes), all zero when no cookie is held.
    public var mac2: [UInt8]

    /// Creates an initiation, checking every byte field's length.
    ///
    /// Throws ``WireError/invalidFieldLength(field:expected:actual:)`` for a field of the wrong size.
    public init(
        senderIndex: ReceiverIndex,
        ephemeral: [UInt8],
        encryptedStatic: [UInt8],
        encryptedPayload: [UInt8],
        mac1: [UInt8] = [UInt8](repeating: 0, count: 16),
        mac2: [UInt8] = [UInt8](repeating: 0, count: 16)
    ) throws(WireError) {
        self.senderIndex = senderIndex
        self.ephemeral = ephemeral
        self.encryptedStatic = encryptedStatic
        self.encryptedPayload = encryptedPayload
        self.mac1 = mac1
        self.mac2 = mac2
        try validate()
    }

    /// Decodes an initiation from a whole datagram.
    ///
    /// Throws if the datagram is not exactly 152 bytes, is not of type 1, or has non-zero reserved bytes.
    public init(decoding datagram: UnsafeRawBufferPointer) throws(WireError) {
        var reader = try HandshakeField.openPacket(datagram, type: .handshakeInitiation, length: Self.encodedLength)
        senderIndex = ReceiverIndex(try reader.readUInt32LE())
        ephemeral = try reader.readArray(count: 32)
        encryptedStatic = try reader.readArray(count: 48)
        encryptedPayload = try reader.readArray(count: 32)
        mac1 = try reader.readArray(count: 16)
        mac2 = try reader.readArray(count: 16)
    }

    /// Decodes an initiation from a whole datagram; see ``init(decoding:)-(UnsafeRawBufferPointer)``.
    public init(decoding datagram: [UInt8]) throws(WireError) {
        self = try HandshakeField.withBytes(datagram) { raw throws(WireError) in try Self(decoding: raw) }
    }

    /// Always 152.
    public var encodedLength: Int { Self.encodedLength }

    /// Throws ``WireError/invalidFieldLength(field:expected:actual:)`` if a byte field has the wrong size.
    public func validate() throws(WireError) {
        try HandshakeField.check(ephemeral, .ephemeral, length: 32)
        try HandshakeField.check(encryptedStatic, .encryptedStatic, length: 48)
        try HandshakeField.check(encryptedPayload, .encryptedPayload, length: 32)
        try HandshakeField.check(mac1, .mac1, length: 16)
        try HandshakeField.check(mac2, .mac2, length: 16)
    }

    /// Writes the 152-byte datagram.
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        try validate()
        try writer.require(Self.encodedLength)
        try HandshakeField.writePrefix(.handshakeInitiation, into: &writer)
        try writer.writeUInt32LE(senderIndex.rawValue)
        try writer.writeBytes(ephemeral)
        try writer.writeBytes(encryptedStatic)
        try writer.writeBytes(encryptedPayload)
        try writer.writeBytes(mac1)
        try writer.writeBytes(mac2)
    }
}

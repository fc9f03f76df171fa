/// A handshake refusal: a responder's answer to an initiation whose `mac1` it verified but whose Noise message it
/// could not read, which between holders of the same credentials means the two speak different protocol revisions
/// (Noise prologues). Exactly 80 bytes, so it is always smaller than the 152-byte initiation it answers.
///
/// Layout, little-endian:
/// `type = 10 (1) | reserved = 0 (3) | receiver index (4) | nonce (24) | encrypted prologue (48)`.
///
/// The encrypted prologue is 32 bytes of plaintext (the prologue's length, 1 to 31, its bytes, then zeros) sealed
/// with XChaCha20-Poly1305 under the responder's cookie key (docs/PROTOCOL.md 2.5, 7.6), so only a holder of the
/// credentials the initiation was made with can read or forge one.
public struct HandshakeRefusal: Hashable, Sendable, WireEncodable {
    /// The exact datagram length, 80 bytes.
    public static let encodedLength = 80
    /// The length of the plaintext the encrypted prologue seals: a length byte, the prologue, zero padding.
    public static let plaintextLength = 32
    /// The longest prologue a refusal can name (the plaintext's length byte comes first).
    public static let maxPrologueLength = plaintextLength - 1

    /// The sender index of the initiation being refused.
    public var receiverIndex: ReceiverIndex
    /// The XChaCha20-Poly1305 nonce (24 bytes).
    public var nonce: [UInt8]
    /// The padded prologue, AEAD-encrypted (32 + 16-byte tag = 48 bytes).
    public var encryptedPrologue: [UInt8]

    /// Creates a refusal, checking every byte field's length.
    ///
    /// Throws ``WireError/invalidFieldLength(field:expected:actual:)`` for a field of the wrong size.
    public init(receiverIndex: ReceiverIndex, nonce: [UInt8], encryptedPrologue: [UInt8]) throws(WireError) {
        self.receiverIndex = receiverIndex
        self.nonce = nonce
        self.encryptedPrologue = encryptedPrologue
        try validate()
    }

    /// Decodes a refusal from a whole datagram.
    ///
    /// Throws if the datagram is not exactly 80 bytes, is not of type 10, or has non-zero reserved bytes.
    public init(decoding datagram: UnsafeRawBufferPointer) throws(WireError) {
        var reader = try HandshakeField.openPacket(datagram, type: .handshakeRefusal, length: Self.encodedLength)
        receiverIndex = ReceiverIndex(try reader.readUInt32LE())
        nonce = try reader.readArray(count: 24)
        encryptedPrologue = try reader.readArray(count: 48)
    }

    /// Decodes a refusal from a whole datagram; see ``init(decoding:)-(UnsafeRawBufferPointer)``.
    public init(decoding datagram: [UInt8]) throws(WireError) {
        self = try HandshakeField.withBytes(datagram) { raw throws(WireError) in try Self(decoding: raw) }
    }

    /// The 8 bytes the refusal starts with (type, reserved, receiver index): what its AEAD authenticates besides the
    /// initiation's `mac1`, so a refusal cannot be taken for a cookie reply sealed under the same key.
    public var header: [UInt8] { Self.header(receiverIndex: receiverIndex) }

    /// The 8 bytes a refusal of the initiation with sender index `receiverIndex` starts with.
    public static func header(receiverIndex: ReceiverIndex) -> [UInt8] {
        var bytes: [UInt8] = [PacketType.handshakeRefusal.rawValue, 0, 0, 0]
        withUnsafeBytes(of: receiverIndex.rawValue.littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// The 32-byte plaintext naming `prologue`: its length, its bytes, zeros. `nil` for an empty prologue or one
    /// longer than ``maxPrologueLength`` (such a responder sends no refusals).
    public static func plaintext(naming prologue: [UInt8]) -> [UInt8]? {
        guard (1...maxPrologueLength).contains(prologue.count) else { return nil }
        return [UInt8(prologue.count)] + prologue + [UInt8](repeating: 0, count: maxPrologueLength - prologue.count)
    }

    /// The prologue a decrypted plaintext names, or `nil` when it is not a valid plaintext (wrong size, a length
    /// outside 1...31, or non-zero padding).
    public static func prologue(inPlaintext plaintext: [UInt8]) -> [UInt8]? {
        guard plaintext.count == plaintextLength, let length = plaintext.first.map(Int.init),
            (1...maxPrologueLength).contains(length),
            plaintext[(1 + length)...].allSatisfy({ $0 == 0 })
        else { return nil }
        return Array(plaintext[1...length])
    }

    /// Always 80.
    public var encodedLength: Int { Self.encodedLength }

    /// Throws ``WireError/invalidFieldLength(field:expected:actual:)`` if a byte field has the wrong size.
    public func validate() throws(WireError) {
        try HandshakeField.check(nonce, .refusalNonce, length: 24)
        try HandshakeField.check(encryptedPrologue, .encryptedPrologue, length: 48)
    }

    /// Writes the 80-byte datagram.
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        try validate()
        try writer.require(Self.encodedLength)
        try HandshakeField.writePrefix(.handshakeRefusal, into: &writer)
        try writer.writeUInt32LE(receiverIndex.rawValue)
        try writer.writeBytes(nonce)
        try writer.writeBytes(encryptedPrologue)
    }
}

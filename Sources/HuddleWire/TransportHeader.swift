/// The 16-byte header of a transport packet, sent in clear and authenticated as AEAD associated data.
///
/// Layout, little-endian:
/// `type = 4 (1) | flags (1) | reserved = 0 (2) | receiver index (4) | packet number (8)`.
///
/// The header is followed by the encrypted frames and a 16-byte Poly1305 tag, so a transport packet has
/// at least ``minimumPacketLength`` (32) bytes. Decoding and encoding never allocate.
public struct TransportHeader: Hashable, Sendable, WireEncodable {
    /// The header length, 16 bytes.
    public static let encodedLength = 16
    /// The AEAD tag length that follows the ciphertext, 16 bytes.
    public static let tagLength = 16
    /// The smallest transport packet: a header and a tag around an empty plaintext, 32 bytes.
    public static let minimumPacketLength = encodedLength + tagLength

    /// Flag bits; all reserved for now and preserved as received.
    public var flags: TransportFlags
    /// The session index chosen by the packet's receiver.
    public var receiverIndex: ReceiverIndex
    /// The packet number, which is also the AEAD nonce (4 zero bytes followed by its 8 LE bytes).
    public var packetNumber: PacketNumber

    /// Creates a header.
    @inlinable
    public init(flags: TransportFlags = [], receiverIndex: ReceiverIndex, packetNumber: PacketNumber) {
        self.flags = flags
        self.receiverIndex = receiverIndex
        self.packetNumber = packetNumber
    }

    /// Decodes the header at the start of `packet`; bytes after the header are ignored.
    ///
    /// Throws ``WireError/truncated(needed:available:)`` if fewer than 16 bytes are given,
    /// ``WireError/unexpectedPacketType(expected:actual:)`` if the type byte is not 4, and
    /// ``WireError/nonZeroReserved(offset:)`` if byte 2 or 3 is not zero. Use ``TransportPacket`` to
    /// also check the minimum packet length.
    @inlinable
    public init(decoding packet: UnsafeRawBufferPointer) throws(WireError) {
        guard packet.count >= Self.encodedLength else {
            throw .truncated(needed: Self.encodedLength, available: packet.count)
        }
        guard packet[0] == PacketType.transportData.rawValue else {
            throw .unexpectedPacketType(expected: .transportData, actual: packet[0])
        }
        if packet[2] != 0 { throw .nonZeroReserved(offset: 2) }
        if packet[3] != 0 { throw .nonZeroReserved(offset: 3) }
        flags = TransportFlags(rawValue: packet[1])
        receiverIndex = ReceiverIndex(UInt32(littleEndian: packet.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
        packetNumber = PacketNumber(UInt64(littleEndian: packet.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
    }

    /// Always 16.
    @inlinable
    public var encodedLength: Int { Self.encodedLength }

    /// Writes the 16-byte header.
    @inlinable
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        try writer.require(Self.encodedLength)
        try writer.writeUInt8(PacketType.transportData.rawValue)
        try writer.writeUInt8(flags.rawValue)
        try writer.writeUInt16LE(0)
        try writer.writeUInt32LE(receiverIndex.rawValue)
        try writer.writeUInt64LE(packetNumber.rawValue)
    }

    /// The room left for plaintext frames in a datagram of `datagramSize` bytes (size minus header and
    /// tag), or 0 if the datagram cannot even hold those.
    @inlinable
    public static func maxPlaintextLength(datagramSize: Int) -> Int {
        Swift.max(0, datagramSize - minimumPacketLength)
    }
}

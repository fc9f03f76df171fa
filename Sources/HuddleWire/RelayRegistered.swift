/// RELAY_REGISTERED (packet type 7, exactly 39 bytes): a relay confirms a registration and tells the client the
/// address it sees it at (its reflexive address).
///
/// Layout: `type = 7 (1) | reserved = 0 (3) | observed address (19: a ``WireAddress``, zero-padded) | mac (16)`.
/// The MAC (keyed like the REGISTER's) covers the 23 bytes before it, so only the relay the client proved its key
/// to can confirm it or tell it an address.
public struct RelayRegistered: Hashable, Sendable, WireEncodable {
    /// The exact datagram length, 39 bytes.
    public static let encodedLength = 39
    /// Where the MAC starts: it covers every byte before it.
    public static let macOffset = 23

    /// The client's address as the relay sees it.
    public var observed: WireAddress
    /// The MAC (16 bytes).
    public var mac: [UInt8]

    /// A confirmation, checking the MAC's length.
    public init(observed: WireAddress, mac: [UInt8]) throws(WireError) {
        self.observed = observed
        self.mac = mac
        try validate()
    }

    /// Decodes a whole datagram.
    public init(decoding datagram: UnsafeRawBufferPointer) throws(WireError) {
        var reader = try HandshakeField.openPacket(datagram, type: .relayRegistered, length: Self.encodedLength)
        let start = reader.offset
        observed = try WireAddress(decoding: &reader)
        let padding = WireAddress.maxEncodedLength - (reader.offset - start)
        for offset in reader.offset..<(reader.offset + padding) where datagram[offset] != 0 {
            throw .nonZeroReserved(offset: offset)
        }
        try reader.skip(padding)
        mac = try reader.readArray(count: 16)
    }

    /// Decodes a whole datagram; see ``init(decoding:)-(UnsafeRawBufferPointer)``.
    public init(decoding datagram: [UInt8]) throws(WireError) {
        self = try HandshakeField.withBytes(datagram) { raw throws(WireError) in try Self(decoding: raw) }
    }

    /// Always 39.
    public var encodedLength: Int { Self.encodedLength }

    /// Throws ``WireError/invalidFieldLength(field:expected:actual:)`` for a MAC of the wrong size.
    public func validate() throws(WireError) {
        try HandshakeField.check(mac, .relayMAC, length: 16)
    }

    /// Writes the 39-byte datagram.
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        try validate()
        try writer.require(Self.encodedLength)
        try HandshakeField.writePrefix(.relayRegistered, into: &writer)
        try observed.encode(into: &writer)
        try writer.writeZeros(count: WireAddress.maxEncodedLength - observed.encodedLength)
        try writer.writeBytes(mac)
    }
}

/// A UDP address as the wire carries it in OBSERVED_ADDRESS and CANDIDATES frames and in RELAY_REGISTERED:
/// `family (1: 4 or 6) | address (4 or 16 bytes, network order) | port (2, big-endian)`: 7 bytes for IPv4, 19 for
/// IPv6. Ports are big-endian here, unlike Huddle's other integers, so the field reads as the socket address does.
public struct WireAddress: Hashable, Sendable {
    /// 4 (IPv4) or 6 (IPv6).
    public var family: UInt8
    /// The address bytes: 4 for IPv4, 16 for IPv6.
    public var bytes: [UInt8]
    /// The UDP port.
    public var port: UInt16

    /// An address; throws ``WireError/invalidFieldLength(field:expected:actual:)`` when `bytes` does not fit
    /// `family`, ``WireError/valueOutOfRange(field:value:limit:)`` for a family other than 4 or 6.
    public init(family: UInt8, bytes: [UInt8], port: UInt16) throws(WireError) {
        guard family == 4 || family == 6 else {
            throw .valueOutOfRange(field: .addressFamily, value: UInt64(family), limit: 6)
        }
        let expected = family == 4 ? 4 : 16
        guard bytes.count == expected else {
            throw .invalidFieldLength(field: .address, expected: expected, actual: bytes.count)
        }
        self.family = family
        self.bytes = bytes
        self.port = port
    }

    /// The largest encoding: an IPv6 address, 19 bytes.
    public static let maxEncodedLength = 19

    /// The encoded size: 7 (IPv4) or 19 (IPv6).
    public var encodedLength: Int { 3 + bytes.count }

    /// Reads one address.
    public init(decoding reader: inout ByteReader) throws(WireError) {
        let family = try reader.readUInt8()
        guard family == 4 || family == 6 else {
            throw .valueOutOfRange(field: .addressFamily, value: UInt64(family), limit: 6)
        }
        let bytes = try reader.readArray(count: family == 4 ? 4 : 16)
        let high = try reader.readUInt8()
        let low = try reader.readUInt8()
        try self.init(family: family, bytes: bytes, port: UInt16(high) << 8 | UInt16(low))
    }

    /// Writes the address.
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        try writer.require(encodedLength)
        try writer.writeUInt8(family)
        try writer.writeBytes(bytes)
        try writer.writeUInt8(UInt8(port >> 8))
        try writer.writeUInt8(UInt8(truncatingIfNeeded: port))
    }
}

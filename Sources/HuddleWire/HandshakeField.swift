/// Validation and coding helpers shared by the fixed-size handshake layouts.
///
/// Handshake byte fields are `[UInt8]` (validated lengths) rather than fixed-size inline storage:
/// `InlineArray<32, UInt8>` works on Linux with Swift 6.3 (32 bytes inline, measured) but needs macOS 26 on
/// Apple platforms, and handshakes are rare (after the mac1 check, which reads the raw datagram). The hot path,
/// the transport header, holds only integers and never allocates.
@usableFromInline
enum HandshakeField {
    /// Throws ``WireError/invalidFieldLength(field:expected:actual:)`` unless `bytes.count == length`.
    @usableFromInline
    static func check(_ bytes: [UInt8], _ field: WireField, length: Int) throws(WireError) {
        guard bytes.count == length else {
            throw .invalidFieldLength(field: field, expected: length, actual: bytes.count)
        }
    }

    /// Checks the length, type byte and reserved bytes of a fixed-size handshake datagram and returns a
    /// reader positioned after the 4-byte type/reserved prefix.
    @usableFromInline
    static func openPacket(
        _ datagram: UnsafeRawBufferPointer, type: PacketType, length: Int
    ) throws(WireError) -> ByteReader {
        guard datagram.count >= length else {
            throw .truncated(needed: length, available: datagram.count)
        }
        guard datagram.count == length else {
            throw .trailingBytes(count: datagram.count - length)
        }
        guard datagram[0] == type.rawValue else {
            throw .unexpectedPacketType(expected: type, actual: datagram[0])
        }
        for offset in 1...3 where datagram[offset] != 0 {
            throw .nonZeroReserved(offset: offset)
        }
        var reader = ByteReader(datagram)
        try reader.skip(4)
        return reader
    }

    /// Writes the type byte and three zero reserved bytes.
    @usableFromInline
    static func writePrefix(_ type: PacketType, into writer: inout ByteWriter) throws(WireError) {
        try writer.writeUInt8(type.rawValue)
        try writer.writeZeros(count: 3)
    }

    /// Runs `body` on the bytes of `array`, forwarding its typed error.
    @usableFromInline
    static func withBytes<T>(
        _ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(WireError) -> T
    ) throws(WireError) -> T {
        let result: Result<T, WireError> = array.withUnsafeBytes { raw in
            Result { () throws(WireError) in try body(raw) }
        }
        return try result.get()
    }
}

/// A DATAGRAM frame (type 0x04): an unreliable message on a channel, never retransmitted.
///
/// Body: `channel (varint) | length (varint) | data`, with length at most ``WireLimits/maxDatagramSize``.
///
/// ``data`` is a borrowed view: after decoding it points into the payload given to ``FrameDecoder``
/// and is valid only while that memory is; use ``copyData()`` to keep the bytes. Equality compares the
/// channel and the data bytes, not the pointers.
public struct DatagramFrame: Equatable, WireEncodable {
    /// The channel the datagram belongs to.
    public var channel: ChannelID
    /// The datagram's bytes (a borrowed view).
    public var data: UnsafeRawBufferPointer

    /// Creates a datagram frame; ``encode(into:)-(inout ByteWriter)`` checks the length limit.
    @inlinable
    public init(channel: ChannelID, data: UnsafeRawBufferPointer) {
        self.channel = channel
        self.data = data
    }

    /// Returns a copy of ``data``.
    public func copyData() -> [UInt8] {
        Array(data)
    }

    /// Decodes the body (after the type) of a DATAGRAM frame; the length is checked against the limit
    /// and the remaining bytes before the data is touched.
    init(decodingBody reader: inout ByteReader) throws(WireError) {
        channel = try ChannelID(validating: try reader.readVarInt())
        let length = try reader.readVarInt()
        guard length <= UInt64(WireLimits.maxDatagramSize) else {
            throw .lengthOutOfRange(field: .datagramLength, value: length, limit: UInt64(WireLimits.maxDatagramSize))
        }
        data = try reader.readBytes(count: length)
    }

    /// The encoded length of the frame including its type byte and data.
    public var encodedLength: Int {
        1 + VarInt.encodedLength(of: UInt64(channel.rawValue)) + VarInt.encodedLength(of: UInt64(data.count))
            + data.count
    }

    /// Writes the frame; throws ``WireError/lengthOutOfRange(field:value:limit:)`` for data over
    /// ``WireLimits/maxDatagramSize``.
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        guard data.count <= WireLimits.maxDatagramSize else {
            throw .lengthOutOfRange(
                field: .datagramLength, value: UInt64(data.count), limit: UInt64(WireLimits.maxDatagramSize))
        }
        try writer.require(encodedLength)
        try writer.writeVarInt(FrameType.datagram.rawValue)
        try writer.writeVarInt(UInt64(channel.rawValue))
        try writer.writeVarInt(UInt64(data.count))
        try writer.writeBytes(data)
    }

    /// Two datagram frames are equal when their channels and data bytes are equal.
    public static func == (lhs: DatagramFrame, rhs: DatagramFrame) -> Bool {
        lhs.channel == rhs.channel && lhs.data.elementsEqual(rhs.data)
    }
}

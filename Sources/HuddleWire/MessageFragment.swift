/// A MESSAGE frame (type 0x03): one fragment of a reliable message on a channel.
///
/// Body: `channel (varint) | message sequence (varint) | offset (varint) | total length (varint) |
/// data length (varint) | data`. A message of `totalLength` bytes (at most
/// ``WireLimits/maxMessageSize``) is carried by fragments covering `offset ..< offset + data.count`;
/// an empty message is one fragment with offset 0, total length 0 and no data.
///
/// ``data`` is a borrowed view: after decoding it points into the payload given to ``FrameDecoder``
/// and is valid only while that memory is; use ``copyData()`` to keep the bytes. Equality compares the
/// fields and the data bytes, not the pointers.
public struct MessageFragment: Equatable, WireEncodable {
    /// The channel the message belongs to.
    public var channel: ChannelID
    /// The message's sequence number within its channel.
    public var sequence: MessageSequence
    /// The offset of ``data`` within the message.
    public var offset: Int
    /// The length of the whole message, at most ``WireLimits/maxMessageSize``.
    public var totalLength: Int
    /// The fragment's bytes (a borrowed view).
    public var data: UnsafeRawBufferPointer

    /// Creates a fragment; ``encode(into:)-(inout ByteWriter)`` checks the limits.
    @inlinable
    public init(
        channel: ChannelID, sequence: MessageSequence, offset: Int, totalLength: Int, data: UnsafeRawBufferPointer
    ) {
        self.channel = channel
        self.sequence = sequence
        self.offset = offset
        self.totalLength = totalLength
        self.data = data
    }

    /// Returns a copy of ``data``.
    public func copyData() -> [UInt8] {
        Array(data)
    }

    /// Decodes the body (after the type) of a MESSAGE frame.
    ///
    /// Checks, before touching the data: channel < 256, total length <= 256 KiB, offset + data length <=
    /// total length, and data length <= remaining bytes.
    init(decodingBody reader: inout ByteReader) throws(WireError) {
        channel = try ChannelID(validating: try reader.readVarInt())
        sequence = MessageSequence(try reader.readVarInt())
        let offset = try reader.readVarInt()
        let total = try reader.readVarInt()
        guard total <= UInt64(WireLimits.maxMessageSize) else {
            throw .lengthOutOfRange(
                field: .messageTotalLength, value: total, limit: UInt64(WireLimits.maxMessageSize))
        }
        let length = try reader.readVarInt()
        // offset and length are at most 2^62 - 1 each, so the sum cannot overflow.
        guard offset + length <= total else {
            throw .fragmentOutOfBounds(offset: offset, length: length, totalLength: total)
        }
        data = try reader.readBytes(count: length)
        self.offset = Int(offset)
        self.totalLength = Int(total)
    }

    /// Throws if the fragment breaks a wire limit: total length over 256 KiB
    /// (``WireError/lengthOutOfRange(field:value:limit:)``), a negative offset or a fragment beyond the
    /// message (``WireError/fragmentOutOfBounds(offset:length:totalLength:)``), or a sequence number
    /// above 2^62 - 1 (``WireError/varIntOutOfRange(_:)``).
    public func validate() throws(WireError) {
        guard totalLength >= 0, totalLength <= WireLimits.maxMessageSize else {
            throw .lengthOutOfRange(
                field: .messageTotalLength, value: UInt64(truncatingIfNeeded: totalLength),
                limit: UInt64(WireLimits.maxMessageSize))
        }
        guard offset >= 0, offset <= totalLength, data.count <= totalLength - offset else {
            throw .fragmentOutOfBounds(
                offset: UInt64(truncatingIfNeeded: offset), length: UInt64(data.count),
                totalLength: UInt64(totalLength))
        }
        guard sequence.rawValue <= WireLimits.maxVarInt else {
            throw .varIntOutOfRange(sequence.rawValue)
        }
    }

    /// The encoded length of the frame including its type byte and data.
    public var encodedLength: Int {
        Self.headerLength(
            channel: channel, sequence: sequence, offset: offset, totalLength: totalLength, dataLength: data.count)
            + data.count
    }

    /// Writes the frame, including its type byte and data.
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        try validate()
        try writer.require(encodedLength)
        try writer.writeVarInt(FrameType.message.rawValue)
        try writer.writeVarInt(UInt64(channel.rawValue))
        try writer.writeVarInt(sequence.rawValue)
        try writer.writeVarInt(UInt64(offset))
        try writer.writeVarInt(UInt64(totalLength))
        try writer.writeVarInt(UInt64(data.count))
        try writer.writeBytes(data)
    }

    /// The length of a MESSAGE frame's type and fields, without its data.
    public static func headerLength(
        channel: ChannelID, sequence: MessageSequence, offset: Int, totalLength: Int, dataLength: Int
    ) -> Int {
        1 + VarInt.encodedLength(of: UInt64(channel.rawValue)) + VarInt.encodedLength(of: sequence.rawValue)
            + VarInt.encodedLength(of: UInt64(max(0, offset))) + VarInt.encodedLength(of: UInt64(max(0, totalLength)))
            + VarInt.encodedLength(of: UInt64(max(0, dataLength)))
    }

    /// The largest data length of a fragment at `offset` that fits, with its header, into `space` bytes
    /// (and does not run past the message's end), or `nil` if not even an empty fragment fits.
    public static func maxDataLength(
        fitting space: Int, channel: ChannelID, sequence: MessageSequence, offset: Int, totalLength: Int
    ) -> Int? {
        let available = max(0, totalLength - offset)
        let fixed =
            headerLength(
                channel: channel, sequence: sequence, offset: offset, totalLength: totalLength, dataLength: 0) - 1
        var best: Int?
        for lengthBytes in [1, 2, 4, 8] {
            let candidate = min(space - fixed - lengthBytes, available)
            if candidate >= 0, VarInt.encodedLength(of: UInt64(candidate)) <= lengthBytes {
                best = max(best ?? 0, candidate)
            }
        }
        return best
    }

    /// Two fragments are equal when all fields and the data bytes are equal.
    public static func == (lhs: MessageFragment, rhs: MessageFragment) -> Bool {
        lhs.channel == rhs.channel && lhs.sequence == rhs.sequence && lhs.offset == rhs.offset
            && lhs.totalLength == rhs.totalLength && lhs.data.elementsEqual(rhs.data)
    }
}

/// Cuts the byte stream between a TURN client and its server over TCP (RFC 8656 12.5) into messages: STUN
/// messages, whose 20-byte header gives their length, and ChannelData frames, which over a stream are padded to a
/// multiple of 4 bytes. A frame is at most 65,555 bytes (a 16-bit length behind a 20-byte header), so the framer
/// holds at most one frame's worth: the start of a frame whose end has not arrived.
public struct TurnStreamFramer {
    /// The longest frame a stream can carry: a STUN header and a 16-bit length of attributes.
    public static let maxFrameLength = StunMessage.headerLength + 0xFFFF
    /// The start of a frame that continues in the next chunk.
    private var partial: [UInt8] = []

    /// An empty framer.
    public init() {}

    /// The bytes held for a frame that has not arrived whole.
    public var bufferedBytes: Int { partial.count }

    /// Reads `chunk`, the stream's next bytes, and passes each complete frame to `body`, in place where the frame
    /// lies whole in `chunk` and from the framer's own buffer where it spans chunks. Throws when a frame starts with
    /// bits that are neither STUN's nor ChannelData's (the stream cannot be resynchronised: the owner closes it).
    public mutating func consume(
        _ chunk: UnsafeMutableRawBufferPointer, _ body: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(StunError) {
        var offset = 0
        if !partial.isEmpty {
            // Enough of the header to know the frame's length, then the rest of the frame.
            let headerMissing = max(0, 4 - partial.count)
            let headerTaken = min(headerMissing, chunk.count)
            partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<headerTaken]))
            offset = headerTaken
            guard partial.count >= 4 else { return }
            let length = try Self.frameLength(partial[0], partial[2], partial[3])
            let taken = min(length - partial.count, chunk.count - offset)
            partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[offset..<(offset + taken)]))
            offset += taken
            guard partial.count == length else { return }
            partial.withUnsafeMutableBytes { body($0) }
            partial.removeAll(keepingCapacity: true)
        }
        while chunk.count - offset >= 4 {
            let length = try Self.frameLength(chunk[offset], chunk[offset + 2], chunk[offset + 3])
            guard chunk.count - offset >= length else { break }
            body(UnsafeMutableRawBufferPointer(rebasing: chunk[offset..<(offset + length)]))
            offset += length
        }
        partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[offset...]))
    }

    /// The length of the frame whose first byte is `first` and whose length field is `high` and `low`: a STUN
    /// message's 20 bytes and its attributes, or ChannelData's 4 bytes and its data rounded up to a multiple of 4.
    private static func frameLength(_ first: UInt8, _ high: UInt8, _ low: UInt8) throws(StunError) -> Int {
        let length = Int(high) << 8 | Int(low)
        switch first & 0xC0 {
        case 0x00: return StunMessage.headerLength + length
        case 0x40: return ChannelData.headerLength + (length + 3) & ~3
        default: throw .invalidStreamFrame(firstByte: first)
        }
    }
}

/// Deterministic message contents, so a receiver can check every byte without the sender keeping a copy: the bytes
/// of message `sequence` on `channel` are a pattern derived from those two numbers.
public enum MessagePattern {
    /// The bytes of message `sequence` on `channel` with `size` bytes.
    public static func bytes(channel: UInt8, sequence: UInt64, size: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: size)
        result.withUnsafeMutableBytes { fill($0, channel: channel, sequence: sequence) }
        return result
    }

    /// Whether `bytes` are exactly message `sequence` on `channel` of `expectedSize` bytes.
    public static func matches(_ bytes: [UInt8], channel: UInt8, sequence: UInt64, expectedSize: Int) -> Bool {
        guard bytes.count == expectedSize else { return false }
        return bytes == Self.bytes(channel: channel, sequence: sequence, size: expectedSize)
    }

    private static func fill(_ buffer: UnsafeMutableRawBufferPointer, channel: UInt8, sequence: UInt64) {
        var state = (UInt64(channel) << 56 ^ sequence &* 0x9E37_79B9_7F4A_7C15) | 1
        var offset = 0
        while offset < buffer.count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            let take = min(8, buffer.count - offset)
            withUnsafeBytes(of: state.littleEndian) { word in
                UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + take)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: word[0..<take]))
            }
            offset += take
        }
    }
}

/// Everything that can go wrong while encoding or decoding Huddle wire data.
///
/// Decoders throw these errors instead of crashing, whatever the input. Each case names what was wrong
/// and carries the values involved, so a log line or a test can state the cause precisely.
public enum WireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The input ended early: `needed` bytes were required at this point but only `available` were left.
    case truncated(needed: Int, available: Int)
    /// An encoder ran out of room: `needed` bytes were to be written but only `available` were left.
    case bufferTooSmall(needed: Int, available: Int)
    /// The first byte of a datagram is not a known ``PacketType``.
    case unknownPacketType(UInt8)
    /// A decoder for one packet type was given a datagram whose first byte is `actual`.
    case unexpectedPacketType(expected: PacketType, actual: UInt8)
    /// A frame type is not defined (or lies in a range reserved for later use).
    case unknownFrameType(UInt64)
    /// A length field exceeds its limit.
    case lengthOutOfRange(field: WireField, value: UInt64, limit: UInt64)
    /// A non-length field (for example a channel identifier) exceeds its limit.
    case valueOutOfRange(field: WireField, value: UInt64, limit: UInt64)
    /// An ACK frame announces more ranges than ``WireLimits/maxAckRanges`` (`count` counts the first range).
    case tooManyAckRanges(count: UInt64, limit: Int)
    /// ACK range number `index` (0 is the first range) would reach below packet number 0, or ranges given
    /// to ``AckRanges`` are empty, not descending, overlapping or adjacent.
    case invalidAckRange(index: Int)
    /// A MESSAGE fragment ends beyond its message: `offset + length > totalLength`.
    case fragmentOutOfBounds(offset: UInt64, length: UInt64, totalLength: UInt64)
    /// A reserved byte at `offset` is not zero.
    case nonZeroReserved(offset: Int)
    /// A fixed-size packet has `count` bytes after its end.
    case trailingBytes(count: Int)
    /// A CLOSE reason phrase is not valid UTF-8.
    case invalidUTF8
    /// A value larger than 2^62 - 1 cannot be encoded as a variable-length integer.
    case varIntOutOfRange(UInt64)
    /// A fixed-size byte field was given with the wrong number of bytes.
    case invalidFieldLength(field: WireField, expected: Int, actual: Int)

    /// A one-line, human-readable explanation of the error.
    public var description: String {
        switch self {
        case .truncated(let needed, let available):
            return "truncated input: needed \(needed) bytes, only \(available) available"
        case .bufferTooSmall(let needed, let available):
            return "output buffer too small: needed \(needed) bytes, only \(available) available"
        case .unknownPacketType(let type):
            return "unknown packet type \(type)"
        case .unexpectedPacketType(let expected, let actual):
            return "expected a \(expected) (type \(expected.rawValue)), got packet type \(actual)"
        case .unknownFrameType(let type):
            return "unknown frame type 0x\(String(type, radix: 16))"
        case .lengthOutOfRange(let field, let value, let limit):
            return "\(field) \(value) exceeds the limit of \(limit)"
        case .valueOutOfRange(let field, let value, let limit):
            return "\(field) \(value) exceeds the maximum of \(limit)"
        case .tooManyAckRanges(let count, let limit):
            return "ACK frame with \(count) ranges exceeds the limit of \(limit)"
        case .invalidAckRange(let index):
            return "ACK range \(index) is invalid (below packet number 0, empty, or not strictly descending)"
        case .fragmentOutOfBounds(let offset, let length, let totalLength):
            return "message fragment at offset \(offset) with \(length) bytes exceeds the total length \(totalLength)"
        case .nonZeroReserved(let offset):
            return "reserved byte at offset \(offset) is not zero"
        case .trailingBytes(let count):
            return "\(count) unexpected bytes after the end of the packet"
        case .invalidUTF8:
            return "CLOSE reason is not valid UTF-8"
        case .varIntOutOfRange(let value):
            return "\(value) is too large for a variable-length integer (maximum 2^62 - 1)"
        case .invalidFieldLength(let field, let expected, let actual):
            return "\(field) must be \(expected) bytes, got \(actual)"
        }
    }
}

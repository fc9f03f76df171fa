/// The sequence number of a reliable message within one channel (62 bits, a variable-length integer).
///
/// Each sender numbers the messages of each channel 0, 1, 2, ... and never wraps: 2^62 messages are
/// out of reach of a connection's lifetime, so comparison is plain integer comparison.
public struct MessageSequence: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The largest representable sequence number, 2^62 - 1.
    public static let max = MessageSequence(WireLimits.maxVarInt)

    /// The sequence number as an unsigned integer; encoding throws if it exceeds 2^62 - 1.
    public var rawValue: UInt64

    /// Wraps a raw sequence number.
    @inlinable
    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// Wraps a raw sequence number.
    @inlinable
    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// The next sequence number, or `nil` if this is ``max``.
    @inlinable
    public var next: MessageSequence? {
        rawValue >= WireLimits.maxVarInt ? nil : MessageSequence(rawValue &+ 1)
    }

    /// Orders sequence numbers as plain unsigned integers.
    @inlinable
    public static func < (lhs: MessageSequence, rhs: MessageSequence) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// The decimal sequence number.
    public var description: String { String(rawValue) }
}

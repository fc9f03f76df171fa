/// The 64-bit number of a transport packet, sent little-endian in the transport header.
///
/// Packet numbers start at 0 and rise by one for every packet sent on a connection; they never wrap and
/// never repeat within a connection, not even across rekeys. They also form the ACK number space, which
/// (as in QUIC) is limited to ``maxAcknowledgeable`` = 2^62 - 1 because ACK frames carry packet numbers
/// as variable-length integers. Comparison is therefore plain integer comparison.
public struct PacketNumber: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The largest packet number an ACK frame can acknowledge (2^62 - 1). A sender must stop (rekeying
    /// does not reset numbers) before reaching it; at one million packets per second that takes about
    /// 146,000 years.
    public static let maxAcknowledgeable = PacketNumber(WireLimits.maxVarInt)

    /// The packet number as an unsigned integer.
    public var rawValue: UInt64

    /// Wraps a raw packet number.
    @inlinable
    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// Wraps a raw packet number.
    @inlinable
    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// The packet number after this one, or `nil` if this is `UInt64.max` (numbers never wrap).
    @inlinable
    public var next: PacketNumber? {
        rawValue == .max ? nil : PacketNumber(rawValue &+ 1)
    }

    /// Orders packet numbers as plain unsigned integers.
    @inlinable
    public static func < (lhs: PacketNumber, rhs: PacketNumber) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// The decimal packet number.
    public var description: String { String(rawValue) }
}

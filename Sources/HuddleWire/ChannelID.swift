/// Identifies one of the ``WireLimits/maxChannels`` (256) channels of a connection.
///
/// On the wire a channel identifier is a variable-length integer; decoders reject values of 256 and
/// above with ``WireError/valueOutOfRange(field:value:limit:)``. Because the type holds a `UInt8`, every
/// `ChannelID` value is valid.
public struct ChannelID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The channel number, `0 ..< 256`.
    public var rawValue: UInt8

    /// Wraps a channel number.
    @inlinable
    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// Wraps a channel number.
    @inlinable
    public init(_ rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// Validates a channel number read from the wire.
    ///
    /// Throws ``WireError/valueOutOfRange(field:value:limit:)`` unless `value < WireLimits.maxChannels`.
    @inlinable
    public init(validating value: UInt64) throws(WireError) {
        guard value < UInt64(WireLimits.maxChannels) else {
            throw .valueOutOfRange(field: .channel, value: value, limit: UInt64(WireLimits.maxChannels - 1))
        }
        self.rawValue = UInt8(truncatingIfNeeded: value)
    }

    /// Orders channels by number.
    @inlinable
    public static func < (lhs: ChannelID, rhs: ChannelID) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// The decimal channel number.
    public var description: String { String(rawValue) }
}

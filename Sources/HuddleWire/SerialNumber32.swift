/// A 32-bit serial number that wraps around and compares as in RFC 1982 ("serial number arithmetic").
///
/// `a` precedes `b` when `b` lies less than 2^31 steps ahead of `a` on the 32-bit circle, so
/// `0xFFFF_FFFF` precedes `0`. When the two are exactly 2^31 apart the comparison is undefined
/// (``compare(_:)`` returns `nil`), which is why this type is deliberately not `Comparable`: RFC 1982
/// order is not transitive.
///
/// No field of the current wire format uses it (packet numbers and message sequences are 62/64-bit
/// and never wrap); it is provided for protocol parts that must keep small counters.
public struct SerialNumber32: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The largest step that ``advanced(by:)`` accepts, 2^31 - 1 (RFC 1982 §3.1).
    public static let maxStep: UInt32 = (1 << 31) - 1

    /// The serial number's bits.
    public var rawValue: UInt32

    /// Wraps a raw serial number.
    @inlinable
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// Wraps a raw serial number.
    @inlinable
    public init(_ rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// Returns the serial number `step` ahead, wrapping modulo 2^32.
    ///
    /// - Precondition: `step <= SerialNumber32.maxStep` (larger additions are undefined in RFC 1982).
    @inlinable
    public func advanced(by step: UInt32) -> SerialNumber32 {
        precondition(step <= Self.maxStep, "RFC 1982 addition is defined only for steps below 2^31")
        return SerialNumber32(rawValue &+ step)
    }

    /// The signed distance from `self` to `other` (positive when `other` is ahead), or `nil` when the
    /// two are exactly 2^31 apart and their order is undefined.
    @inlinable
    public func distance(to other: SerialNumber32) -> Int32? {
        let difference = other.rawValue &- rawValue
        if difference == 1 << 31 { return nil }
        return Int32(bitPattern: difference)
    }

    /// Compares two serial numbers in RFC 1982 order; `nil` means the order is undefined.
    ///
    /// - Returns: `.ascending` if `self` precedes `other`, `.same` if they are equal, `.descending` if
    ///   `self` follows `other`.
    @inlinable
    public func compare(_ other: SerialNumber32) -> Order? {
        guard let distance = distance(to: other) else { return nil }
        if distance > 0 { return .ascending }
        if distance < 0 { return .descending }
        return .same
    }

    /// Whether `self` precedes `other` in RFC 1982 order (`false` when the order is undefined).
    @inlinable
    public func precedes(_ other: SerialNumber32) -> Bool {
        compare(other) == .ascending
    }

    /// Whether `self` follows `other` in RFC 1982 order (`false` when the order is undefined).
    @inlinable
    public func follows(_ other: SerialNumber32) -> Bool {
        compare(other) == .descending
    }

    /// The decimal serial number.
    public var description: String { String(rawValue) }

    /// The result of an RFC 1982 comparison.
    public enum Order: Sendable, Hashable {
        /// The left-hand serial number precedes the right-hand one.
        case ascending
        /// Both serial numbers are equal.
        case same
        /// The left-hand serial number follows the right-hand one.
        case descending
    }
}

/// A point on the monotonic clock of whoever drives the protocol, in nanoseconds since an arbitrary origin.
///
/// The protocol core never reads a clock: the transport passes `now` in (from a monotonic clock), and the simulator
/// passes virtual time. Only differences between instants are meaningful.
public struct Instant: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Nanoseconds since the driver's origin.
    public var nanoseconds: Int64

    /// The instant `nanoseconds` after the origin.
    @inlinable
    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    /// The driver's origin.
    public static let zero = Instant(nanoseconds: 0)
    /// Later than any deadline a run reaches: "not scheduled" for a deadline kept as a plain `Instant`.
    static let distantFuture = Instant(nanoseconds: .max / 2)

    @inlinable
    public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// The instant `duration` later.
    @inlinable
    public static func + (lhs: Instant, rhs: Duration) -> Instant {
        Instant(nanoseconds: lhs.nanoseconds &+ rhs.nanoseconds)
    }

    /// The instant `duration` earlier.
    @inlinable
    public static func - (lhs: Instant, rhs: Duration) -> Instant {
        Instant(nanoseconds: lhs.nanoseconds &- rhs.nanoseconds)
    }

    /// The time from `rhs` to `lhs` (negative if `lhs` is earlier).
    @inlinable
    public static func - (lhs: Instant, rhs: Instant) -> Duration {
        .nanoseconds(lhs.nanoseconds &- rhs.nanoseconds)
    }

    public var description: String { "t+\(Double(nanoseconds) / 1e6)ms" }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating at the `Int64` range, about 292 years).
    @inlinable
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled &+ attoseconds / 1_000_000_000
    }

    /// Scales by a floating-point factor, rounding to the nearest nanosecond.
    @inlinable
    public func scaled(by factor: Double) -> Duration {
        .nanoseconds(Int64((Double(nanoseconds) * factor).rounded()))
    }
}

extension Instant {
    /// The earlier of two optional instants (`nil` when both are), without building a collection: deadlines are
    /// combined on every input.
    public static func earliest(_ a: Instant?, _ b: Instant?) -> Instant? {
        guard let a else { return b }
        guard let b else { return a }
        return min(a, b)
    }
}

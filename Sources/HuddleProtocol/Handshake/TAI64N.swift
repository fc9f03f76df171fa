/// A TAI64N timestamp (12 bytes: big-endian seconds since 1970 plus 2^62, then big-endian nanoseconds), the
/// payload of a handshake initiation. A responder accepts an initiation from a peer only if its timestamp is newer
/// than the last one it accepted from that peer, so a captured initiation cannot be replayed (TEST-MATRIX H6, R5).
///
/// Sans-IO: the protocol core never reads the wall clock. A ``TimestampClock`` turns the driver's monotonic `now`
/// into timestamps from a wall-clock reading taken once at start, so a wall clock that jumps backwards later cannot
/// make this node's timestamps go backwards (TEST-MATRIX N17).
public struct TAI64N: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The encoded length in bytes.
    public static let encodedLength = 12
    /// TAI64's label offset: 2^62.
    static let secondsOffset: UInt64 = 1 << 62

    /// Seconds since 1970-01-01 (without the 2^62 label).
    public var seconds: UInt64
    /// Nanoseconds within the second, below 1,000,000,000.
    public var nanoseconds: UInt32

    /// A timestamp from its parts.
    public init(seconds: UInt64, nanoseconds: UInt32) {
        self.seconds = seconds + UInt64(nanoseconds / 1_000_000_000)
        self.nanoseconds = nanoseconds % 1_000_000_000
    }

    /// Decodes 12 bytes; `nil` when the length is wrong or the nanoseconds are out of range.
    public init?(bytes: some Collection<UInt8>) {
        let array = Array(bytes)
        guard array.count == Self.encodedLength else { return nil }
        let labelled = array[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let nanos = array[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard labelled >= Self.secondsOffset, nanos < 1_000_000_000 else { return nil }
        seconds = labelled - Self.secondsOffset
        nanoseconds = nanos
    }

    /// The 12-byte encoding.
    public var bytes: [UInt8] {
        let labelled = seconds &+ Self.secondsOffset
        return (0..<8).map { UInt8(truncatingIfNeeded: labelled >> (56 - 8 * UInt64($0))) }
            + (0..<4).map { UInt8(truncatingIfNeeded: nanoseconds >> (24 - 8 * UInt32($0))) }
    }

    public static func < (lhs: TAI64N, rhs: TAI64N) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }

    public var description: String { "\(seconds).\(nanoseconds)" }
}

/// Produces strictly increasing ``TAI64N`` timestamps from the driver's monotonic clock, anchored to one wall-clock
/// reading the driver supplies at start.
public struct TimestampClock: Sendable {
    private let wallClockAtOrigin: TAI64N
    private var last: TAI64N?

    /// `wallClockAtOrigin` is the wall-clock time at monotonic instant zero (read once by the driver).
    public init(wallClockAtOrigin: TAI64N) {
        self.wallClockAtOrigin = wallClockAtOrigin
    }

    /// The timestamp for `now`: origin + elapsed monotonic time, and always later than the previous one returned.
    public mutating func timestamp(now: Instant) -> TAI64N {
        let elapsed = UInt64(max(now.nanoseconds, 0))
        let total = UInt64(wallClockAtOrigin.nanoseconds) + elapsed % 1_000_000_000
        var candidate = TAI64N(
            seconds: wallClockAtOrigin.seconds + elapsed / 1_000_000_000 + total / 1_000_000_000,
            nanoseconds: UInt32(total % 1_000_000_000))
        if let last, candidate <= last {
            candidate =
                last.nanoseconds < 999_999_999
                ? TAI64N(seconds: last.seconds, nanoseconds: last.nanoseconds + 1)
                : TAI64N(seconds: last.seconds + 1, nanoseconds: 0)
        }
        last = candidate
        return candidate
    }
}

import HuddleProtocol
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The driver's time source: monotonic ``Instant``s counted from the moment the driver started, plus one wall-clock
/// reading taken at that moment (the endpoint derives handshake timestamps from it, so a wall clock that jumps
/// later cannot make timestamps go backwards).
struct DriverClock: Sendable {
    /// The monotonic reading that is ``Instant/zero``.
    let origin: NIODeadline
    /// The wall-clock time at ``origin``.
    let wallClockAtOrigin: TAI64N

    /// A clock whose origin is now.
    init() {
        origin = .now()
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        wallClockAtOrigin = TAI64N(seconds: UInt64(max(time.tv_sec, 0)), nanoseconds: UInt32(time.tv_nsec))
    }

    /// The current instant.
    var now: Instant {
        Instant(nanoseconds: Int64(NIODeadline.now().uptimeNanoseconds &- origin.uptimeNanoseconds))
    }

    /// The monotonic deadline of `instant`, for scheduling timers.
    func deadline(for instant: Instant) -> NIODeadline {
        origin + .nanoseconds(max(instant.nanoseconds, 0))
    }
}

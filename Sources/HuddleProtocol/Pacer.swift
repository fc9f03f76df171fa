/// Spreads a congestion window's worth of packets over a round trip instead of sending it in one burst
/// (RFC 9002 §7.7): a token bucket refilled at 1.25 × window / smoothed RTT, holding at most a small burst.
///
/// The connection asks ``earliestSendTime(bytes:bytesPerSecond:congestionWindow:now:)`` (at its controller's
/// pacing rate) before sending a packet and reports it with ``onSent(bytes:)``; a returned instant becomes part of
/// the connection's `nextDeadline`.
public struct Pacer: Sendable {
    /// RFC 9002's N: pace slightly faster than window / RTT so pacing never limits a window-limited sender.
    public static let rateMultiplier = 1.25
    /// The smallest burst the bucket holds, in datagrams.
    public static let burstDatagrams = 10
    /// The bucket holds up to this much time at the pacing rate (quinn's 2 ms), at most ``maxBurstDatagrams``: on a
    /// fast path a timer per 10 datagrams would cap the rate at what the host's timers deliver.
    public static let burstInterval: Duration = .milliseconds(2)
    /// The largest burst the bucket holds, in datagrams.
    public static let maxBurstDatagrams = 64
    /// An empty bucket releases the next packet once it holds this much time at the rate (or the packet, if larger),
    /// up to a full bucket: on a fast path, waking for every datagram (3 µs apart at 500 MB/s) costs a timer and a
    /// flush of one datagram each, which doubled the sender's system time; 250 µs releases a batch per wake-up and
    /// is far below any round trip the spacing is for.
    public static let releaseGranularity: Duration = .microseconds(250)

    /// The largest datagram the connection sends.
    public let maxDatagramSize: Int
    private var tokens: Double
    private var lastRefill: Instant?

    /// A pacer whose bucket starts full.
    public init(maxDatagramSize: Int) {
        self.maxDatagramSize = maxDatagramSize
        tokens = Double(Self.burstDatagrams * maxDatagramSize)
    }

    /// `nil` when a packet of `bytes` may be sent at `now`, otherwise the instant it may be sent, pacing at RFC
    /// 9002's 1.25 × `congestionWindow` / `smoothedRTT`.
    public mutating func earliestSendTime(
        bytes: Int, congestionWindow: Int, smoothedRTT: Duration, now: Instant
    ) -> Instant? {
        earliestSendTime(
            bytes: bytes,
            bytesPerSecond: Self.windowRate(congestionWindow: congestionWindow, smoothedRTT: smoothedRTT),
            congestionWindow: congestionWindow, now: now)
    }

    /// `nil` when a packet of `bytes` may be sent at `now`, otherwise the instant it may be sent, pacing at
    /// `bytesPerSecond` (a controller's ``CongestionController/pacingRate(smoothedRTT:)``); the bucket holds
    /// ``burstInterval`` at that rate, at least ``burstDatagrams`` and at most ``maxBurstDatagrams`` datagrams, and
    /// never more than `congestionWindow`.
    public mutating func earliestSendTime(
        bytes: Int, bytesPerSecond: Double, congestionWindow: Int, now: Instant
    ) -> Instant? {
        let rate = max(bytesPerSecond / 1e9, 1e-6)
        refill(rate: rate, congestionWindow: congestionWindow, now: now)
        guard Double(bytes) > tokens else { return nil }
        let batch = min(
            rate * Double(Self.releaseGranularity.nanoseconds), capacity(congestionWindow: congestionWindow, rate: rate)
        )
        let needed = max(Double(bytes), batch) - tokens
        return now + .nanoseconds(Int64((needed / rate).rounded(.up)))
    }

    /// Takes `bytes` from the bucket for a packet just sent.
    public mutating func onSent(bytes: Int) {
        tokens = max(tokens - Double(bytes), 0)
    }

    private func capacity(congestionWindow: Int, rate: Double) -> Double {
        let byRate = min(
            rate * Double(Self.burstInterval.nanoseconds), Double(Self.maxBurstDatagrams * maxDatagramSize))
        let burst = max(Double(Self.burstDatagrams * maxDatagramSize), byRate)
        return max(min(burst, Double(congestionWindow)), Double(maxDatagramSize))
    }

    /// `gain` × `congestionWindow` / `smoothedRTT` in bytes per second (the RTT taken as at least 1 µs): RFC 9002's
    /// window-based pacing rate with its N = ``rateMultiplier`` by default.
    public static func windowRate(congestionWindow: Int, smoothedRTT: Duration, gain: Double = rateMultiplier) -> Double
    {
        gain * Double(congestionWindow) / (max(Double(smoothedRTT.nanoseconds), 1_000) / 1e9)
    }

    private mutating func refill(rate: Double, congestionWindow: Int, now: Instant) {
        defer { lastRefill = now }
        guard let lastRefill, now > lastRefill else { return }
        let elapsed = Double((now - lastRefill).nanoseconds)
        tokens = min(tokens + elapsed * rate, capacity(congestionWindow: congestionWindow, rate: rate))
    }
}

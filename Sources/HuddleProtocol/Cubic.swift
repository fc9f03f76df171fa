/// CUBIC congestion control (RFC 9438), Huddle's default: after a loss the window follows a cubic curve that
/// returns quickly to the previous maximum, probes carefully around it, then grows again; a Reno-friendly estimate
/// keeps it at least as aggressive as Reno on short, low-bandwidth paths.
public struct Cubic: CongestionController {
    /// RFC 9438's C (segments per second cubed).
    public static let c = 0.4
    /// RFC 9438's multiplicative decrease factor.
    public static let beta = 0.7
    /// The Reno-friendly additive increase factor, 3(1 - β)/(1 + β).
    static let alpha = 3 * (1 - beta) / (1 + beta)

    /// The largest datagram the connection sends, the unit of growth.
    public let maxDatagramSize: Int
    public private(set) var congestionWindow: Int
    /// The slow-start threshold.
    public private(set) var slowStartThreshold = Int.max

    private var recoveryStart: Instant?
    /// When the current cubic curve started: the first acknowledgement after recovery (RFC 9438 §4.2's t_epoch).
    private var epochStart: Instant?
    /// Set by a congestion event: the curve (W_max, K) is known, its epoch starts with the next new ack.
    private var curvePending = false
    /// The window (in segments) just before the last reduction (RFC 9438's cwnd_prior).
    private var windowPrior = 0.0
    /// The window (in segments) before the last reduction.
    private var windowMax = 0.0
    /// The time (seconds) the cubic curve takes to return to `windowMax`.
    private var k = 0.0
    /// The Reno-friendly window estimate, in segments.
    private var renoEstimate = 0.0
    /// Fractional segments of growth not yet applied to the window.
    private var pendingGrowth = 0.0
    /// The state just before the last congestion event, for ``onSpuriousCongestionEvent()``.
    private var beforeCongestionEvent: Saved?

    /// Everything a congestion event changes: the window, the threshold, the recovery period and the curve.
    private struct Saved: Sendable {
        let congestionWindow: Int
        let slowStartThreshold: Int
        let recoveryStart: Instant?
        let epochStart: Instant?
        let curvePending: Bool
        let windowPrior: Double
        let windowMax: Double
        let k: Double
        let renoEstimate: Double
        let pendingGrowth: Double
    }

    /// A controller starting at the RFC 9002 initial window.
    public init(maxDatagramSize: Int) {
        self.maxDatagramSize = maxDatagramSize
        congestionWindow = CongestionWindowLimits.initialWindow(maxDatagramSize: maxDatagramSize)
    }

    public var isInSlowStart: Bool { congestionWindow < slowStartThreshold }

    private var windowInSegments: Double { Double(congestionWindow) / Double(maxDatagramSize) }

    public mutating func onAcknowledged(bytes: Int, sentTime: Instant, rtt: RTTEstimator, now: Instant) {
        if let recoveryStart, sentTime <= recoveryStart { return }
        if isInSlowStart {
            congestionWindow += bytes
            return
        }
        if epochStart == nil {
            epochStart = now
            if curvePending {
                curvePending = false
            } else {
                // Congestion avoidance began without a loss: the curve is centred on the current window.
                windowMax = windowInSegments
                windowPrior = windowInSegments
                k = 0
                renoEstimate = windowInSegments
            }
        }
        let segmentsAcknowledged = Double(bytes) / Double(maxDatagramSize)
        let current = windowInSegments
        let elapsed = Double((now - epochStart!).nanoseconds) / 1e9
        let roundTrip = Double(rtt.smoothed.nanoseconds) / 1e9

        renoEstimate += (renoEstimate < windowPrior ? Self.alpha : 1) * segmentsAcknowledged / current
        let cubicNow = cubicWindow(at: elapsed)
        var growth: Double
        if cubicNow < renoEstimate {
            growth = renoEstimate - current
        } else {
            let target = min(max(cubicWindow(at: elapsed + roundTrip), current), 1.5 * current)
            growth = (target - current) / current * segmentsAcknowledged
        }
        growth = max(growth, 0)
        pendingGrowth += growth * Double(maxDatagramSize)
        let whole = Int(pendingGrowth)
        congestionWindow += whole
        pendingGrowth -= Double(whole)
    }

    public mutating func onCongestionEvent(sentTime: Instant, now: Instant) {
        if let recoveryStart, sentTime <= recoveryStart { return }
        beforeCongestionEvent = Saved(
            congestionWindow: congestionWindow, slowStartThreshold: slowStartThreshold, recoveryStart: recoveryStart,
            epochStart: epochStart, curvePending: curvePending, windowPrior: windowPrior, windowMax: windowMax, k: k,
            renoEstimate: renoEstimate, pendingGrowth: pendingGrowth)
        recoveryStart = now
        let current = windowInSegments
        windowPrior = current
        // Fast convergence: release bandwidth to newer flows when the maximum keeps shrinking.
        windowMax = current < windowMax ? current * (1 + Self.beta) / 2 : current
        let reduced = max(
            Int(Double(congestionWindow) * Self.beta),
            CongestionWindowLimits.minimumWindow(maxDatagramSize: maxDatagramSize))
        congestionWindow = reduced
        slowStartThreshold = reduced
        epochStart = nil
        curvePending = true
        k = Self.cubeRoot(max(windowMax - windowInSegments, 0) / Self.c)
        renoEstimate = windowInSegments
        pendingGrowth = 0
    }

    public mutating func onPersistentCongestion(now: Instant) {
        congestionWindow = CongestionWindowLimits.minimumWindow(maxDatagramSize: maxDatagramSize)
        recoveryStart = nil
        epochStart = nil
        curvePending = false
        pendingGrowth = 0
        beforeCongestionEvent = nil
    }

    public mutating func onSpuriousCongestionEvent() {
        guard let saved = beforeCongestionEvent else { return }
        beforeCongestionEvent = nil
        // The window may have grown past the saved one since; never shrink it here.
        guard congestionWindow < saved.congestionWindow else { return }
        // The whole curve comes back with the window, including its epoch: CUBIC continues as if the reduction had
        // never happened (W_max, K and the Reno estimate of the reduced window would cap growth well below the
        // restored window for many round trips).
        congestionWindow = saved.congestionWindow
        slowStartThreshold = saved.slowStartThreshold
        recoveryStart = saved.recoveryStart
        epochStart = saved.epochStart
        curvePending = saved.curvePending
        windowPrior = saved.windowPrior
        windowMax = saved.windowMax
        k = saved.k
        renoEstimate = saved.renoEstimate
        pendingGrowth = saved.pendingGrowth
    }

    /// W_cubic(t) = C (t - K)^3 + W_max, in segments.
    private func cubicWindow(at seconds: Double) -> Double {
        let offset = seconds - k
        return Self.c * offset * offset * offset + windowMax
    }

    /// The real cube root of a non-negative value, by Newton's method (the standard library has no `cbrt`, and
    /// this module stays free of platform imports).
    static func cubeRoot(_ value: Double) -> Double {
        guard value > 0 else { return 0 }
        var root = value > 1 ? value / 3 : 1
        for _ in 0..<100 {
            let next = (2 * root + value / (root * root)) / 3
            if abs(next - root) <= 1e-12 * root { return next }
            root = next
        }
        return root
    }
}

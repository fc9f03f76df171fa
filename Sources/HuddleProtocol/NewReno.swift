/// NewReno congestion control as specified by RFC 9002 §7 and its Appendix B: slow start, congestion avoidance
/// (one datagram per window per round trip), halving on loss, one reaction per recovery period.
public struct NewReno: CongestionController {
    /// The largest datagram the connection sends, the unit of growth.
    public let maxDatagramSize: Int
    public private(set) var congestionWindow: Int
    /// The slow-start threshold.
    public private(set) var slowStartThreshold = Int.max
    private var recoveryStart: Instant?
    private var bytesAcknowledgedInAvoidance = 0
    /// The state just before the last congestion event, for ``onSpuriousCongestionEvent()``.
    private var beforeCongestionEvent: Saved?

    /// Everything a congestion event changes.
    private struct Saved: Sendable {
        let congestionWindow: Int
        let slowStartThreshold: Int
        let recoveryStart: Instant?
        let bytesAcknowledgedInAvoidance: Int
    }

    /// A controller starting at the RFC 9002 initial window.
    public init(maxDatagramSize: Int) {
        self.maxDatagramSize = maxDatagramSize
        congestionWindow = CongestionWindowLimits.initialWindow(maxDatagramSize: maxDatagramSize)
    }

    public var isInSlowStart: Bool { congestionWindow < slowStartThreshold }

    public mutating func onAcknowledged(bytes: Int, sentTime: Instant, rtt: RTTEstimator, now: Instant) {
        if let recoveryStart, sentTime <= recoveryStart { return }
        if isInSlowStart {
            congestionWindow += bytes
            return
        }
        // Congestion avoidance: one maxDatagramSize per congestion window of acknowledged bytes.
        bytesAcknowledgedInAvoidance += bytes
        if bytesAcknowledgedInAvoidance >= congestionWindow {
            bytesAcknowledgedInAvoidance -= congestionWindow
            congestionWindow += maxDatagramSize
        }
    }

    public mutating func onCongestionEvent(sentTime: Instant, now: Instant) {
        if let recoveryStart, sentTime <= recoveryStart { return }
        beforeCongestionEvent = Saved(
            congestionWindow: congestionWindow, slowStartThreshold: slowStartThreshold, recoveryStart: recoveryStart,
            bytesAcknowledgedInAvoidance: bytesAcknowledgedInAvoidance)
        recoveryStart = now
        slowStartThreshold = max(
            congestionWindow / 2, CongestionWindowLimits.minimumWindow(maxDatagramSize: maxDatagramSize))
        congestionWindow = slowStartThreshold
        bytesAcknowledgedInAvoidance = 0
    }

    public mutating func onPersistentCongestion(now: Instant) {
        congestionWindow = CongestionWindowLimits.minimumWindow(maxDatagramSize: maxDatagramSize)
        recoveryStart = nil
        bytesAcknowledgedInAvoidance = 0
        beforeCongestionEvent = nil
    }

    public mutating func onSpuriousCongestionEvent() {
        guard let saved = beforeCongestionEvent else { return }
        beforeCongestionEvent = nil
        // The window may have grown past the saved one since (a later slow start); never shrink it here.
        guard congestionWindow < saved.congestionWindow else { return }
        congestionWindow = saved.congestionWindow
        slowStartThreshold = saved.slowStartThreshold
        recoveryStart = saved.recoveryStart
        bytesAcknowledgedInAvoidance = saved.bytesAcknowledgedInAvoidance
    }
}

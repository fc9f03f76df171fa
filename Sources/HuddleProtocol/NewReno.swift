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
    }
}

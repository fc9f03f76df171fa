/// Round-trip time estimation exactly as RFC 9002 §5: latest, minimum, smoothed RTT and RTT variation, with the
/// peer's acknowledgement delay subtracted when that cannot push a sample below the minimum.
public struct RTTEstimator: Sendable {
    /// RFC 9002's kInitialRtt: the RTT assumed before the first sample.
    public static let initialRTT: Duration = .milliseconds(333)
    /// RFC 9002's kGranularity: the timer granularity floor.
    public static let granularity: Duration = .milliseconds(1)

    /// The most recent sample.
    public private(set) var latest: Duration
    /// The minimum sample seen (ignoring ack delay).
    public private(set) var minimum: Duration
    /// The exponentially smoothed RTT.
    public private(set) var smoothed: Duration
    /// The RTT variation.
    public private(set) var variation: Duration
    /// Whether any sample has been taken.
    public private(set) var hasSample = false
    /// The largest acknowledgement delay the peer says it adds (its max_ack_delay).
    public var maxAckDelay: Duration

    /// An estimator with no samples yet, assuming `initialRTT`.
    public init(initialRTT: Duration = RTTEstimator.initialRTT, maxAckDelay: Duration = .milliseconds(25)) {
        latest = initialRTT
        minimum = initialRTT
        smoothed = initialRTT
        variation = initialRTT / 2
        self.maxAckDelay = maxAckDelay
    }

    /// Folds in one sample: `sample` is the time from sending the largest newly acknowledged packet to receiving
    /// its acknowledgement, `ackDelay` what the peer reported it waited before acknowledging.
    public mutating func update(sample: Duration, ackDelay: Duration) {
        let sample = max(sample, .zero)
        latest = sample
        guard hasSample else {
            hasSample = true
            minimum = sample
            smoothed = sample
            variation = sample / 2
            return
        }
        minimum = min(minimum, sample)
        let delay = min(max(ackDelay, .zero), maxAckDelay)
        let adjusted = sample >= minimum + delay ? sample - delay : sample
        let deviation = smoothed > adjusted ? smoothed - adjusted : adjusted - smoothed
        variation = (variation * 3 + deviation) / 4
        smoothed = (smoothed * 7 + adjusted) / 8
    }

    /// The probe timeout before backoff (RFC 9002 §6.2.1): smoothed + max(4 × variation, granularity) +
    /// max_ack_delay.
    public var probeTimeout: Duration {
        smoothed + max(variation * 4, Self.granularity) + maxAckDelay
    }

    /// The probe timeout for a packet the peer acknowledges at once (it asked for IMMEDIATE_ACK and the peer
    /// honours it, PROTOCOL.md §7.8): ``probeTimeout`` without the peer's acknowledgement delay, so a lost lone
    /// message costs about a round trip, not 25 ms.
    public var immediateProbeTimeout: Duration {
        smoothed + max(variation * 4, Self.granularity)
    }

    /// How long after a packet was sent it is declared lost once a later packet is acknowledged (RFC 9002 §6.1.2):
    /// 9/8 × max(smoothed, latest), at least the granularity.
    public var lossDelay: Duration {
        max((max(smoothed, latest) * 9) / 8, Self.granularity)
    }
}

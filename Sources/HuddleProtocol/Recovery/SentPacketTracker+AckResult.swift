extension SentPacketTracker {
    /// What one ACK frame changed: the newly acknowledged packets, the packets it let the tracker declare lost, and
    /// what to tell the congestion controller.
    ///
    /// The connection handles a result in RFC 9002's order: first the undo if ``recoveryWasSpurious``, then the
    /// losses (see ``LossEvent``), then
    /// `CongestionController.onAcknowledged(bytes: acknowledgedBytesInFlight, sentTime:
    /// latestAcknowledgedSentTime, rtt:, now:)` if ``latestAcknowledgedSentTime`` is not `nil`. A duplicate ACK gives
    /// an empty result, except that it may still prove packets declared lost spurious.
    public struct AckResult: Sendable {
        /// The newly acknowledged packets, in increasing packet-number order.
        public internal(set) var acknowledged: [Packet] = []
        /// The bytes of the newly acknowledged packets that counted toward bytes in flight (already removed from
        /// ``SentPacketTracker/bytesInFlight``).
        public internal(set) var acknowledgedBytesInFlight = 0
        /// The latest send time among the newly acknowledged in-flight packets, or `nil` if none was in flight.
        public internal(set) var latestAcknowledgedSentTime: Instant?
        /// Whether the ACK produced an RTT sample (RFC 9002 §5.1): its largest acknowledged packet was newly
        /// acknowledged and at least one newly acknowledged packet was ack-eliciting. The estimator passed to
        /// `onAck` has then been updated with sample = now - that packet's send time and the frame's ACK delay.
        public internal(set) var tookRTTSample = false
        /// The packets this ACK let the tracker declare lost.
        public internal(set) var loss = LossEvent()
        /// How many packets declared lost earlier this ACK acknowledged: they had arrived, overtaken by later ones
        /// (their frames were retransmitted anyway; the receiver ignores the duplicates). Each raised the tracker's
        /// thresholds before ``loss`` was computed.
        public internal(set) var spuriousLosses = 0
        /// Whether this ACK proved every loss of the current recovery period spurious: the connection calls
        /// `CongestionController.onSpuriousCongestionEvent()` to undo the reduction, before handling ``loss``.
        public internal(set) var recoveryWasSpurious = false

        /// The delivery-rate sample this ACK gave (taken after its losses were counted), or `nil` when it
        /// acknowledged nothing new in flight or its interval was shorter than the minimum RTT.
        public internal(set) var deliverySample: DeliveryRateSample?

        /// An empty result.
        public init() {}

        /// The packets declared lost (the same as `loss.packets`).
        public var lost: [Packet] { loss.packets }
    }
}

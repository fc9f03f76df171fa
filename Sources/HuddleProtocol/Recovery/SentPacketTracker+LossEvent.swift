extension SentPacketTracker {
    /// Packets declared lost by one ACK or one loss timer, with what the congestion controller needs to know.
    ///
    /// The connection retransmits the frames of each packet's ``SentPacketTracker/Packet/record`` in new packets,
    /// calls `CongestionController.onCongestionEvent(sentTime: latestSentTime, now:)` once if ``latestSentTime`` is
    /// not `nil`, and then `onPersistentCongestion(now:)` if ``persistentCongestion`` is `true`.
    public struct LossEvent: Sendable {
        /// The lost packets, in increasing packet-number order.
        public internal(set) var packets: [Packet] = []
        /// The bytes of the lost packets that counted toward bytes in flight (already removed from
        /// ``SentPacketTracker/bytesInFlight``).
        public internal(set) var bytesInFlight = 0
        /// The latest send time among the lost in-flight packets, or `nil` if none of the lost packets was in flight
        /// (then there is no congestion event).
        public internal(set) var latestSentTime: Instant?
        /// Whether the losses establish persistent congestion (RFC 9002 §7.6): two ack-eliciting packets, both sent
        /// after the first RTT sample, lost with nothing acknowledged between them, sent more than
        /// ``ProtocolLimits/persistentCongestionThreshold`` × the probe timeout (smoothed + max(4 × variation,
        /// 1 ms) + max_ack_delay, without backoff) apart.
        public internal(set) var persistentCongestion = false

        /// No losses.
        public init() {}

        /// Whether no packet was lost.
        public var isEmpty: Bool { packets.isEmpty }
    }
}

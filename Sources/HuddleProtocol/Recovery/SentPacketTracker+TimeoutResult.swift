extension SentPacketTracker {
    /// What the connection must do after ``SentPacketTracker/onTimeout(now:rtt:)``.
    public enum TimeoutResult: Sendable {
        /// No timer was due at that time (called early, or nothing armed): nothing to do.
        case notDue
        /// The time threshold declared these packets lost: handle them as after an ACK (``LossEvent``).
        case lost(LossEvent)
        /// The probe timeout fired: send `count` ack-eliciting packets now (new data, the frames of the oldest
        /// outstanding packet, or a PING), even if the congestion window is full (RFC 9002 §6.2.4, §7.5). Probes are
        /// recorded with `onSent` like any packet.
        case probe(count: Int)
    }
}

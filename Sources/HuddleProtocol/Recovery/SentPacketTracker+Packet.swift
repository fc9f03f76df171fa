extension SentPacketTracker {
    /// One sent packet as the tracker remembers it, handed back when it is acknowledged or declared lost.
    public struct Packet: Sendable {
        /// The packet's number.
        public let packetNumber: UInt64
        /// The packet's size in bytes, as counted for congestion control.
        public let bytes: Int
        /// When the packet was sent.
        public let sentTime: Instant
        /// Whether the packet elicits an acknowledgement (carries any frame other than ACK and padding).
        public let ackEliciting: Bool
        /// Whether the packet counts toward bytes in flight.
        public let inFlight: Bool
        /// What the connection stored with the packet, such as its frames to retransmit on loss.
        public let record: Record
        /// The delivery-rate state when the packet was sent (``DeliveryRateEstimator``).
        public let delivery: DeliverySnapshot
        /// Whether the packet is a Path MTU probe: its loss says the path may not carry its size, not that the path
        /// is congested, so it is left out of congestion events, persistent congestion and the delivery rate's
        /// losses (RFC 9000 §14.4).
        public let isPathProbe: Bool

        /// Describes a sent packet.
        public init(
            packetNumber: UInt64, bytes: Int, sentTime: Instant, ackEliciting: Bool, inFlight: Bool, record: Record,
            delivery: DeliverySnapshot, isPathProbe: Bool = false
        ) {
            self.packetNumber = packetNumber
            self.bytes = bytes
            self.sentTime = sentTime
            self.ackEliciting = ackEliciting
            self.inFlight = inFlight
            self.record = record
            self.delivery = delivery
            self.isPathProbe = isPathProbe
        }
    }
}

/// One delivery-rate sample: what one ACK says about the path.
public struct DeliveryRateSample: Sendable, Hashable {
    /// Bytes delivered over ``interval``.
    public var deliveredBytes: Int
    /// The longer of the send and ACK intervals of the newest acknowledged packet.
    public var interval: Duration
    /// The connection's delivered total when that packet was sent (rounds start when it passes a mark).
    public var priorDelivered: Int
    /// The connection's delivered total now.
    public var totalDelivered: Int
    /// Whether the sender was application-limited when that packet was sent.
    public var isApplicationLimited: Bool
    /// Bytes in flight when that packet was sent, itself included.
    public var txInFlight: Int
    /// The connection's lost total now.
    public var totalLost: Int
    /// Bytes this ACK newly acknowledged.
    public var newlyAcknowledged: Int

    /// The delivery rate in bytes per second.
    public var bytesPerSecond: Double {
        Double(deliveredBytes) / (Double(interval.nanoseconds) / 1e9)
    }

    /// A sample with these values.
    public init(
        deliveredBytes: Int, interval: Duration, priorDelivered: Int, totalDelivered: Int, isApplicationLimited: Bool,
        txInFlight: Int, totalLost: Int, newlyAcknowledged: Int
    ) {
        self.deliveredBytes = deliveredBytes
        self.interval = interval
        self.priorDelivered = priorDelivered
        self.totalDelivered = totalDelivered
        self.isApplicationLimited = isApplicationLimited
        self.txInFlight = txInFlight
        self.totalLost = totalLost
        self.newlyAcknowledged = newlyAcknowledged
    }
}

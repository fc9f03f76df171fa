/// What the ``DeliveryRateEstimator`` stamps on a packet when it is sent.
public struct DeliverySnapshot: Sendable, Hashable {
    /// The connection's total delivered bytes when the packet was sent.
    public var delivered: Int
    /// When that total last grew.
    public var deliveredTime: Instant
    /// The start of the send interval the packet belongs to.
    public var firstSentTime: Instant
    /// Whether the sender was application-limited.
    public var isApplicationLimited: Bool
    /// Bytes in flight just after the packet was sent, itself included (BBRv3's `tx_in_flight`).
    public var txInFlight: Int

    /// A snapshot with these values.
    public init(
        delivered: Int, deliveredTime: Instant, firstSentTime: Instant, isApplicationLimited: Bool, txInFlight: Int
    ) {
        self.delivered = delivered
        self.deliveredTime = deliveredTime
        self.firstSentTime = firstSentTime
        self.isApplicationLimited = isApplicationLimited
        self.txInFlight = txInFlight
    }

    /// The snapshot of a packet sent before anything was delivered, at `now`.
    public static func initial(at now: Instant) -> DeliverySnapshot {
        DeliverySnapshot(
            delivered: 0, deliveredTime: now, firstSentTime: now, isApplicationLimited: false, txInFlight: 0)
    }
}

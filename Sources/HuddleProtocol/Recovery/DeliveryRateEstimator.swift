/// Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation, as Linux's `tcp_rate.c` and BBR use it):
/// every ACK yields a sample of the rate at which the path delivered data, measured over the flight of the newest
/// packet it acknowledges.
///
/// The estimator keeps the connection's running totals (bytes delivered, bytes lost) and stamps each sent packet with
/// a ``DeliverySnapshot`` of them. When packets are acknowledged, the snapshot of the most recently sent one gives the
/// sample: the bytes delivered since it was sent over the longer of its send interval and its ACK interval (the
/// longer one, so neither a burst of sends nor a compressed burst of ACKs inflates the rate).
///
/// A sample taken while the sender had nothing to send is marked application-limited: it shows what the application
/// offered, not what the path can carry, and a bandwidth filter must not let it lower the estimate.
public struct DeliveryRateEstimator: Sendable {
    /// Bytes acknowledged in total (counting retransmissions, as each acknowledged packet counts its size).
    public private(set) var delivered = 0
    /// Bytes declared lost in total.
    public private(set) var lost = 0
    /// When ``delivered`` last grew (the arrival of the ACK).
    private var deliveredTime: Instant?
    /// The send time of the newest packet acknowledged so far, or of the first packet of a new flight: the start
    /// of the send interval of packets sent after it.
    private var firstSentTime: Instant?
    /// While non-zero, the connection is application-limited until ``delivered`` passes this mark.
    private var applicationLimitedUntil = 0
    /// The sample being built from the ACK in progress.
    private var pending = Pending()

    private struct Pending: Sendable {
        var priorDelivered = -1
        var sendElapsed = Duration.zero
        var ackElapsed = Duration.zero
        var isApplicationLimited = false
        var txInFlight = 0
        var newlyAcknowledged = 0
    }

    /// An estimator before the first packet.
    public init() {}

    /// Whether samples are marked application-limited now.
    public var isApplicationLimited: Bool { applicationLimitedUntil != 0 }

    /// The snapshot to store with a packet about to be sent at `now`, with `bytesInFlight` bytes in flight before
    /// it (the packet's own `bytes` are added for ``DeliverySnapshot/txInFlight``).
    public mutating func onSending(bytes: Int, bytesInFlight: Int, now: Instant) -> DeliverySnapshot {
        if bytesInFlight == 0 {
            // A new flight after an idle period: intervals start now, not at the last ACK before the pause.
            firstSentTime = now
            deliveredTime = now
        }
        return DeliverySnapshot(
            delivered: delivered, deliveredTime: deliveredTime ?? now, firstSentTime: firstSentTime ?? now,
            isApplicationLimited: isApplicationLimited, txInFlight: bytesInFlight + bytes)
    }

    /// The sender ran out of data to send with `bytesInFlight` bytes in flight and room in its congestion window:
    /// samples are application-limited until what is in flight now has been delivered.
    public mutating func onApplicationLimited(bytesInFlight: Int) {
        applicationLimitedUntil = max(delivered + bytesInFlight, 1)
    }

    /// A packet of `bytes` stamped with `snapshot` and sent at `sentTime` was acknowledged at `now`. Call it for
    /// every newly acknowledged packet of one ACK, then ``takeSample(minRTT:)``.
    public mutating func onAcknowledged(bytes: Int, sentTime: Instant, snapshot: DeliverySnapshot, now: Instant) {
        delivered += bytes
        deliveredTime = now
        pending.newlyAcknowledged += bytes
        // The most recently sent packet (the one that saw the most deliveries before it) defines the sample.
        guard snapshot.delivered >= pending.priorDelivered else { return }
        pending.priorDelivered = snapshot.delivered
        pending.isApplicationLimited = snapshot.isApplicationLimited
        pending.sendElapsed = sentTime - snapshot.firstSentTime
        pending.ackElapsed = now - snapshot.deliveredTime
        pending.txInFlight = snapshot.txInFlight
        firstSentTime = sentTime
    }

    /// A packet of `bytes` was declared lost (before ``takeSample(minRTT:)`` if the same ACK declared it).
    public mutating func onLost(bytes: Int) {
        lost += bytes
    }

    /// The sample of the ACK whose packets were just reported, or `nil` when it acknowledged nothing new or its
    /// interval is shorter than `minRTT` (such a sample would overstate the rate: RFC draft §3.3).
    public mutating func takeSample(minRTT: Duration?) -> DeliveryRateSample? {
        defer { pending = Pending() }
        if applicationLimitedUntil != 0, delivered > applicationLimitedUntil { applicationLimitedUntil = 0 }
        guard pending.priorDelivered >= 0 else { return nil }
        let interval = max(pending.sendElapsed, pending.ackElapsed)
        let bytes = delivered - pending.priorDelivered
        guard interval > .zero, bytes > 0, interval >= (minRTT ?? .zero) else { return nil }
        return DeliveryRateSample(
            deliveredBytes: bytes, interval: interval, priorDelivered: pending.priorDelivered,
            totalDelivered: delivered, isApplicationLimited: pending.isApplicationLimited,
            txInFlight: pending.txInFlight, totalLost: lost,
            newlyAcknowledged: pending.newlyAcknowledged)
    }
}

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
        var priorTime: Instant?
        var sendElapsed = Duration.zero
        var ackElapsed = Duration.zero
        var isApplicationLimited = false
        var txInFlight = 0
        var lostAtSend = 0
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
            isApplicationLimited: applicationLimitedUntil != 0, txInFlight: bytesInFlight + bytes, lost: lost)
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
        pending.priorTime = snapshot.deliveredTime
        pending.isApplicationLimited = snapshot.isApplicationLimited
        pending.sendElapsed = sentTime - snapshot.firstSentTime
        pending.ackElapsed = now - snapshot.deliveredTime
        pending.txInFlight = snapshot.txInFlight
        pending.lostAtSend = snapshot.lost
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
        guard pending.priorDelivered >= 0, pending.priorTime != nil else { return nil }
        let interval = max(pending.sendElapsed, pending.ackElapsed)
        let bytes = delivered - pending.priorDelivered
        guard interval > .zero, bytes > 0, interval >= (minRTT ?? .zero) else { return nil }
        return DeliveryRateSample(
            deliveredBytes: bytes, interval: interval, priorDelivered: pending.priorDelivered,
            totalDelivered: delivered, isApplicationLimited: pending.isApplicationLimited,
            txInFlight: pending.txInFlight, lostSinceSend: lost - pending.lostAtSend, totalLost: lost,
            newlyAcknowledged: pending.newlyAcknowledged)
    }
}

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
    /// The connection's total lost bytes when the packet was sent.
    public var lost: Int

    /// A snapshot with these values.
    public init(
        delivered: Int, deliveredTime: Instant, firstSentTime: Instant, isApplicationLimited: Bool, txInFlight: Int,
        lost: Int
    ) {
        self.delivered = delivered
        self.deliveredTime = deliveredTime
        self.firstSentTime = firstSentTime
        self.isApplicationLimited = isApplicationLimited
        self.txInFlight = txInFlight
        self.lost = lost
    }

    /// The snapshot of a packet sent before anything was delivered, at `now`.
    public static func initial(at now: Instant) -> DeliverySnapshot {
        DeliverySnapshot(
            delivered: 0, deliveredTime: now, firstSentTime: now, isApplicationLimited: false, txInFlight: 0, lost: 0)
    }
}

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
    /// Bytes declared lost between that packet's send and now.
    public var lostSinceSend: Int
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
        txInFlight: Int, lostSinceSend: Int, totalLost: Int, newlyAcknowledged: Int
    ) {
        self.deliveredBytes = deliveredBytes
        self.interval = interval
        self.priorDelivered = priorDelivered
        self.totalDelivered = totalDelivered
        self.isApplicationLimited = isApplicationLimited
        self.txInFlight = txInFlight
        self.lostSinceSend = lostSinceSend
        self.totalLost = totalLost
        self.newlyAcknowledged = newlyAcknowledged
    }
}

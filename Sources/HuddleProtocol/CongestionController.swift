/// A congestion controller: decides how many bytes may be in flight. The connection reports sends,
/// acknowledgements and losses; the controller answers with ``congestionWindow``.
///
/// Implementations: ``Bbr`` (delivery-rate based, the default), ``Cubic`` (RFC 9438) and ``NewReno`` (RFC 9002 §7).
public protocol CongestionController: Sendable {
    /// Bytes that may be in flight now.
    var congestionWindow: Int { get }

    /// Whether the controller is in slow start (exponential growth).
    var isInSlowStart: Bool { get }

    /// Packets carrying `bytes` (which count toward bytes in flight) were acknowledged; the latest of them was sent
    /// at `sentTime`.
    mutating func onAcknowledged(bytes: Int, sentTime: Instant, rtt: RTTEstimator, now: Instant)

    /// Loss (or an ECN signal) was detected for a packet sent at `sentTime`. A controller reacts at most once per
    /// round trip: losses of packets sent before the current recovery period began are ignored.
    mutating func onCongestionEvent(sentTime: Instant, now: Instant)

    /// RFC 9002 §7.6: every packet over a long enough period was lost; collapse to the minimum window.
    mutating func onPersistentCongestion(now: Instant)

    /// Every loss that started the current recovery period (and every later loss in it) turned out spurious: the
    /// packets had only been reordered. Restores the state saved at the congestion event that started the period,
    /// as if it had never happened (Linux's and quinn's undo), unless the window has since grown past it. Does
    /// nothing when no state is saved (after persistent congestion, or a second call).
    mutating func onSpuriousCongestionEvent()

    /// After every ACK that yields a delivery-rate sample, once the other callbacks for that ACK have run:
    /// `bytesInFlight` is what is in flight after it. Window-based controllers ignore it (the default).
    mutating func onDeliverySample(_ sample: DeliveryRateSample, bytesInFlight: Int, rtt: RTTEstimator, now: Instant)

    /// The rate, in bytes per second, at which the ``Pacer`` releases packets. The default is RFC 9002 §7.7's
    /// 1.25 × window / smoothed RTT, so pacing never limits a window-limited sender.
    func pacingRate(smoothedRTT: Duration) -> Double
}

extension CongestionController {
    public mutating func onDeliverySample(
        _ sample: DeliveryRateSample, bytesInFlight: Int, rtt: RTTEstimator, now: Instant
    ) {}

    public func pacingRate(smoothedRTT: Duration) -> Double {
        Pacer.windowRate(congestionWindow: congestionWindow, smoothedRTT: smoothedRTT)
    }
}

/// Window sizes shared by the controllers, from RFC 9002 §7.2.
public enum CongestionWindowLimits {
    /// The initial window for a maximum datagram size: min(10 × size, max(14720, 2 × size)).
    public static func initialWindow(maxDatagramSize: Int) -> Int {
        min(10 * maxDatagramSize, max(14_720, 2 * maxDatagramSize))
    }

    /// The minimum window: 2 × the maximum datagram size.
    public static func minimumWindow(maxDatagramSize: Int) -> Int { 2 * maxDatagramSize }
}

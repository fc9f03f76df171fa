import HuddleWire

extension ProtocolLimits {
    /// How many times an unanswered initiation is sent again byte for byte (after 250, 500 and 1000 ms) before a new
    /// one replaces it: a response that is merely slow (a path with a long round trip) still matches, and a
    /// responder answers an exact duplicate with the same response.
    public static let initiationResends = 3

    /// The longest a receiver waits before acknowledging an ack-eliciting packet (its max_ack_delay, RFC 9000
    /// §13.2.1): 25 ms, QUIC's default. ``ReceivedPacketTracker`` arms its deadline this far after the first
    /// unacknowledged ack-eliciting packet; the sender's `RTTEstimator.maxAckDelay` must use the same value.
    public static let maxAckDelay: Duration = .milliseconds(25)

    /// A receiver acknowledges immediately once this many ack-eliciting packets arrived since its last ACK (RFC 9000
    /// §13.2.2 recommends every second packet).
    public static let ackElicitingPacketsBeforeAck = 2

    /// RFC 9002's kPacketThreshold: a packet is lost once a packet sent at least this many packet numbers after it
    /// is acknowledged.
    public static let packetThreshold: UInt64 = 3

    /// The largest packet reordering threshold a `SentPacketTracker` adapts to (RFC 9002 §6.1.1 allows raising
    /// ``packetThreshold`` on a path that reorders). A spurious loss raises the threshold to the reordering distance
    /// it revealed plus one, up to this cap; beyond it the adapted time threshold alone tolerates the reordering.
    /// Linux caps its TCP reordering estimate similarly (`tcp_max_reordering`, 300).
    public static let maxPacketThreshold: UInt64 = 256

    /// RFC 9002's kTimeThreshold, 9/8, expressed in eighths of an RTT: a packet is lost once a later packet is
    /// acknowledged and it was sent this many eighths of max(smoothed RTT, latest RTT) ago.
    public static let timeThresholdEighths = 9

    /// The largest time threshold a `SentPacketTracker` adapts to, in eighths of an RTT: 4 RTTs, twice RFC 8985's
    /// bound (RACK caps its reordering window at the smoothed RTT, on top of the RTT itself). Under reordering the
    /// RTT estimate runs low: samples come only from the largest newly acknowledged packet, which is usually one
    /// that overtook others. Measured in the simulator's `reorder` scenario (RTTs spread over 10-130 ms), the
    /// smoothed RTT stays at 20-30 ms, and goodput over 50 seeds was 0.39 MB/s with a 2 RTT cap, 2.47 MB/s with
    /// 4 RTTs and 2.87 MB/s with 8. The cap only binds after spurious losses, and a larger one would only delay
    /// the recovery of real losses on such a path further.
    public static let maxTimeThresholdEighths = 32

    /// How many recovery periods in a row without a spurious loss return an adapted reordering threshold and time
    /// threshold to their RFC 9002 defaults (RFC 8985 §7.2 resets its reordering window after 16 recoveries).
    public static let reorderingDecayPeriods = 16

    /// How many of the most recently declared-lost in-flight packets a `SentPacketTracker` remembers, to recognise
    /// an ACK arriving for one of them as a spurious loss. Beyond it the oldest is forgotten (a late ACK for it then
    /// counts as nothing). One record is 24 bytes, so the bound is 24 KiB per connection, allocated only as
    /// losses occur; 1024 covers the losses of a whole 1.2 MB window.
    public static let maxTrackedLostPackets = 1024

    /// RFC 9002's kPersistentCongestionThreshold: losses spanning more than this many probe timeouts (without
    /// backoff) with nothing acknowledged in between are persistent congestion.
    public static let persistentCongestionThreshold = 3

    /// How many ack-eliciting probe packets a connection sends when the probe timeout fires (RFC 9002 §6.2.4 allows
    /// one or two; two avoid a second expensive timeout when a single probe is lost).
    public static let probePacketsPerTimeout = 2

    /// The probe timeout doubles on each consecutive expiry up to 2^16 times the base value; later expiries reuse
    /// that backoff (the idle timeout closes the connection long before).
    public static let maxProbeTimeoutBackoffExponent = 16

    /// The longest a backed-off probe timeout may be (when the base probe timeout is shorter): 2 s, so a lossy but
    /// live path is probed at least seven times within the 15 s idle timeout (fifteen within the 30 s it was when
    /// this was measured). Measured in the simulator:
    /// with 20 % loss at 75 % correlation, an 8 s cap let six consecutive lost ACKs close healthy connections.
    public static let maxProbeTimeoutInterval: Duration = .seconds(2)
    /// How much later than its probe timer a connection with packets in flight may run before it counts as having
    /// been stalled (its process stopped or starved of CPU, not its path slow): 1 s. Acknowledgements of packets sent
    /// before a stall ended then give no RTT sample: they may have waited in the socket buffer for the whole stall,
    /// and one such sample (40 s after a SIGSTOP) had raised the idle timeout, three probe timeouts, to two minutes.
    public static let stallTolerance: Duration = .seconds(1)
    /// How long a peer still has to be heard from after this process was found stalled (its unresponsive check ran
    /// more than ``stallTolerance`` late) before it is reported unresponsive: the stall, not the peer, made the
    /// silence, and a keepalive sent at once is answered within a round trip.
    public static let unresponsiveGraceAfterStall: Duration = .milliseconds(500)

    /// The most sent packets a `SentPacketTracker` keeps, counted from its oldest unresolved packet to its newest
    /// (acknowledged or lost packets in between still occupy a slot until everything older is resolved).
    ///
    /// At the limit, `SentPacketTracker.canSend` is `false` and `onSent` throws ``ProtocolError/queueFull(limit:)``:
    /// the connection must stop sending until an ACK or a loss frees room. The congestion window normally keeps the
    /// count far lower (65,536 packets of 1200 bytes would need a 78 MB window), so the limit only bounds memory
    /// against a peer that never acknowledges.
    public static let maxTrackedSentPackets = 65_536

    /// The most packets that are neither ack-eliciting nor in flight (pure ACKs) a `SentPacketTracker` remembers
    /// after its newest ack-eliciting or in-flight packet. The peer never acknowledges such packets on their own, so
    /// a node that only receives would otherwise track them forever; when one more would exceed the limit, the
    /// oldest half of them is forgotten (acknowledging them later has no effect).
    public static let maxTrackedAckOnlyPackets = 1024

    /// How many runs of deliberately skipped packet numbers a `SentPacketTracker` remembers, to reject an ACK for
    /// a number that was never sent. Beyond it the oldest run is forgotten.
    public static let maxTrackedSkippedRanges = 64

    /// How many ranges of received packet numbers a ``ReceivedPacketTracker`` keeps: as many as one ACK frame can
    /// carry (`WireLimits.maxAckRanges`). When a packet would open one more, the lowest range is dropped.
    public static let maxTrackedReceivedRanges = WireLimits.maxAckRanges
}

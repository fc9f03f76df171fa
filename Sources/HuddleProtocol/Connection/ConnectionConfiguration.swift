import HuddleWire

/// The tunables of one connection. Defaults follow WireGuard's timers and QUIC's recovery constants.
public struct ConnectionConfiguration: Sendable, Hashable {
    /// Which congestion controller a connection uses.
    public enum CongestionControl: String, Sendable, Hashable, CaseIterable {
        /// Delivery-rate based, modelled on BBR (``Bbr``; the default): paces at the measured bottleneck bandwidth,
        /// so random loss does not collapse the rate.
        case bbr
        /// RFC 9438 CUBIC.
        case cubic
        /// RFC 9002 NewReno.
        case newReno = "newreno"
    }

    /// The UDP payload size every path is assumed to carry (1200 bytes, QUIC's safe minimum, by default): the
    /// size of handshake-time, relayed and probe-timeout packets, and the unit of congestion windows.
    public var maxDatagramSize: Int = 1200
    /// The largest UDP payload Path MTU discovery may raise a direct path's datagrams to (``PathMTUDiscovery``), at
    /// most ``WireLimits/maxDatagramSize`` (8972, a 9000-byte jumbo frame). `nil` (the default) leaves it to the
    /// transport: the UDP transport sets 8972 where it can set the don't-fragment bit and turns discovery off
    /// elsewhere; the core alone never probes with `nil` (probing without don't-fragment would confirm sizes the
    /// path only carries as IP fragments). At or below ``maxDatagramSize`` nothing is probed.
    public var maxProbedDatagramSize: Int?
    /// A connection that hears nothing from its peer for this long closes with ``ProtocolError/idleTimeout``. 15 s:
    /// with a keepalive after every second of silence (``keepaliveInterval``) and its loss probes after it, a peer
    /// that is gone has been asked many times by then, so it is given up about half a minute sooner than under QUIC's
    /// and WireGuard's customary 30 s, which assume keepalives ten or more seconds apart.
    public var idleTimeout: Duration = .seconds(15)
    /// Whether the tail of what the connection sends, and its probes, ask the peer to acknowledge them at once
    /// (IMMEDIATE_ACK, PROTOCOL.md §7.8). On by default; off only to measure the difference (`huddle-sim --scenario
    /// rtt-wan-2-delayed`). The connection honours the flag from its peer either way.
    public var requestsImmediateAck = true
    /// After hearing nothing from its peer for this long, with nothing ack-eliciting in flight, a connection sends a
    /// PING that asks for an immediate acknowledgement (a keepalive). The responder of the current keys waits half as
    /// long again, so on a quiet connection the initiator's PING and its acknowledgement are the only traffic: one
    /// small packet each way per second, about what WebRTC's consent checks cost (a check every 2.5 s from each
    /// side). The answer is what lets ``unresponsiveAfter`` notice a silent peer in seconds.
    public var keepaliveInterval: Duration = .seconds(1)
    /// An established connection that has heard nothing from its peer for this long reports
    /// ``ConnectionEvent/unresponsive(lastHeard:)`` (once), and ``ConnectionEvent/responsive`` when a packet arrives
    /// again. At least twice ``keepaliveInterval``; on a slow path the connection waits longer, until its keepalive
    /// and a loss probe of it had two probe timeouts to be answered (``Connection`` never reports a live peer between
    /// its answers).
    public var unresponsiveAfter: Duration = .seconds(2)
    /// Channels whose small messages (at most ``ProtocolLimits/maxDuplicatedMessageSize`` bytes) are sent twice,
    /// in consecutive packets: a message whose first packet is lost arrives with the second, so one loss costs it
    /// nothing instead of a loss-detection delay, at twice its bytes. For latency-critical messages on lossy paths
    /// (inputs, strokes). Empty by default. The copy is an ordinary retransmission on the wire.
    public var duplicatedChannels: Set<ChannelID> = []
    /// The congestion controller.
    public var congestionControl: CongestionControl = .bbr
    /// A keypair older than this is replaced by a new handshake (WireGuard's REKEY_AFTER_TIME).
    public var rekeyAfterTime: Duration = .seconds(120)
    /// A keypair older than this is never used again (WireGuard's REJECT_AFTER_TIME).
    public var rejectAfterTime: Duration = .seconds(180)
    /// Packets sent under one keypair before a new handshake starts.
    public var rekeyAfterPackets: UInt64 = ProtocolLimits.rekeyAfterPackets
    /// Packets under one keypair that may fail authentication before it is retired: it then accepts nothing more and
    /// a new handshake starts at once, from either side (``ProtocolLimits/maxAuthenticationFailuresPerKeypair``,
    /// 2^24). Lower it only in tests.
    public var maxAuthenticationFailuresPerKeypair: UInt64 = ProtocolLimits.maxAuthenticationFailuresPerKeypair
    /// The wait before the first retry of an unanswered handshake initiation. Each further retry waits twice as long,
    /// up to ``handshakeRetryInterval``, plus a random extra of up to a quarter of the wait (at most
    /// ``handshakeJitter``). 250 ms is below RFC 9002's initial probe timeout for an unknown path (3 x 333 ms) because
    /// an initiation is small and unanswered ones cost the peer no state; a lost first initiation (or one that
    /// reached a member before it learned of us) then costs a quarter of a second, not WireGuard's 5 s.
    public var handshakeInitialRetryInterval: Duration = .milliseconds(250)
    /// The longest wait between handshake initiation retries (WireGuard's REKEY_TIMEOUT).
    public var handshakeRetryInterval: Duration = .seconds(5)
    /// The largest random extra delay added to each retry, so peers do not retry in lockstep.
    public var handshakeJitter: Duration = .milliseconds(333)
    /// A handshake that has not completed after this long fails with ``ProtocolError/handshakeTimeout``.
    public var handshakeTimeout: Duration = .seconds(90)
    /// How long a closing connection keeps its state to answer stray packets before it is forgotten.
    public var drainPeriod: Duration = .seconds(3)

    /// The default configuration.
    public init() {}
}

import CoreMetrics
import HuddleProtocol
import NIOConcurrencyHelpers

/// A node's metrics in swift-metrics: counters, gauges and timers an app's metrics backend (Prometheus, StatsD,
/// OpenTelemetry, ...) exports. Every label value comes from a small fixed set (a reason, a message class), never
/// from a peer, so a node's series stay few whatever the session's size.
///
/// Per-packet counters are not touched per packet: the core counts in plain integers and ``publish(_:)`` adds what
/// changed since the previous sample (`publish(_:participants:)`, every ``HuddleNode/Configuration/metricsInterval``
/// and on ``HuddleNode/updateMetrics()`` before a scrape). Messages, delivery failures and joins are recorded as they
/// happen. The names, with their labels:
///
/// | Metric | Kind | Labels |
/// | --- | --- | --- |
/// | `huddle_datagrams_sent_total`, `huddle_datagrams_received_total` | counter | |
/// | `huddle_bytes_sent_total`, `huddle_bytes_received_total` | counter | |
/// | `huddle_datagrams_dropped_total` | counter | `reason` |
/// | `huddle_handshakes_initiated_total`, `huddle_handshakes_completed_total` (rekeys included) | counter | |
/// | `huddle_handshakes_failed_total` | counter | `reason`: `authentication`, `never_completed` |
/// | `huddle_cookie_replies_sent_total`, `huddle_initiations_rate_limited_total` | counter | |
/// | `huddle_protocol_refusals_total` (a handshake between different protocol revisions) | counter | `direction`: `sent` (this node refused a ticket holder of another revision), `received` (one refused this node) |
/// | `huddle_packets_sent_total`, `huddle_packets_lost_total`, `huddle_spurious_losses_total` | counter | |
/// | `huddle_messages_sent_total`, `huddle_messages_received_total` | counter | `class`: `reliable`, `unreliable` |
/// | `huddle_message_bytes_sent_total`, `huddle_message_bytes_received_total` | counter | `class` |
/// | `huddle_messages_undelivered_total` | counter | `reason`: `left`, `unreachable`, `restarted`, `session_ended` |
/// | `huddle_attachment_chunks_sent_total`, `huddle_attachment_chunks_received_total` | counter | |
/// | `huddle_attachment_chunks_rejected_total`, `huddle_attachment_requests_timed_out_total` | counter | |
/// | `huddle_protocol_violations_total` | counter | `layer`: `membership`, `journal` |
/// | `huddle_refused_total` | counter | `what`: `member_record`, `invitation`, `attachment`, `non_member_message` |
/// | `huddle_member_relay_packets_forwarded_total`, `huddle_member_relay_bytes_forwarded_total`, `huddle_member_relay_rate_limited_total` (what this node relayed for other members, and dropped over their 2 MiB/s) | counter | |
/// | `huddle_connections`, `huddle_participants` | gauge | |
/// | `huddle_congestion_window_bytes`, `huddle_bytes_in_flight` (summed over connections) | gauge | |
/// | `huddle_rtt_seconds` (each connection's smoothed RTT, per sample) | timer | |
/// | `huddle_join_duration_seconds` | timer | |
///
/// Every metric also carries the ``HuddleNode/Configuration/metricsDimensions`` (none by default).
final class NodeMetrics: Sendable {
    /// The reasons dropped datagrams are counted under, as label values: the endpoint's, then the driver's and the
    /// connections' own.
    static let dropReasons: [(String, @Sendable (NodeMetricsSample) -> Int)] = {
        typealias Figure = @Sendable (NodeMetricsSample) -> Int
        let own: [(String, Figure)] = [
            ("unsupported_source", { $0.transport.unsupportedSourceDropped }),
            ("send_queue_full", { $0.connections.datagramsDropped }),
        ]
        return EndpointStatistics.dropReasons.map { reason, count -> (String, Figure) in
            (reason, { @Sendable sample in count(sample.transport.endpoint) })
        } + own
    }()

    /// Counters published from samples: each with the sample figure it follows.
    private let sampled: [(Counter, @Sendable (NodeMetricsSample) -> Int)]
    /// The same for the session's counters, which restart with each session.
    private let sessionSampled: [(Counter, @Sendable (NodeMetricsSample.SessionCounters) -> Int)]
    private let connections: Gauge
    private let participants: Gauge
    private let congestionWindow: Gauge
    private let bytesInFlight: Gauge
    private let rtt: Timer
    private let joinDuration: Timer
    private let messagesSent: [Counter]
    private let messageBytesSent: [Counter]
    private let messagesReceived: [Counter]
    private let messageBytesReceived: [Counter]
    private let undelivered: [DeliveryFailure.Reason: Counter]
    /// The previous sample, to publish differences.
    private let previous = NIOLockedValueBox<NodeMetricsSample?>(nil)

    /// Metrics made by `factory`, each with `dimensions` added to its own labels.
    init(factory: any MetricsFactory, dimensions: [(String, String)]) {
        func counter(_ label: String, _ extra: [(String, String)] = []) -> Counter {
            Counter(label: label, dimensions: extra + dimensions, factory: factory)
        }
        func gauge(_ label: String) -> Gauge { Gauge(label: label, dimensions: dimensions, factory: factory) }
        var sampled: [(Counter, @Sendable (NodeMetricsSample) -> Int)] = [
            (counter("huddle_datagrams_sent_total"), { $0.transport.datagramsSent }),
            (counter("huddle_datagrams_received_total"), { $0.transport.datagramsReceived }),
            (counter("huddle_bytes_sent_total"), { $0.transport.bytesSent }),
            (counter("huddle_bytes_received_total"), { $0.transport.bytesReceived }),
            (counter("huddle_handshakes_initiated_total"), { $0.transport.endpoint.initiationsSent }),
            (counter("huddle_handshakes_completed_total"), { $0.connections.handshakes }),
            (
                counter("huddle_handshakes_failed_total", [("reason", "authentication")]),
                { $0.transport.endpoint.handshakeFailures }
            ),
            (
                counter("huddle_handshakes_failed_total", [("reason", "never_completed")]),
                { $0.transport.endpoint.handshakesNeverCompleted }
            ),
            (counter("huddle_cookie_replies_sent_total"), { $0.transport.endpoint.cookieRepliesSent }),
            (counter("huddle_initiations_rate_limited_total"), { $0.transport.endpoint.initiationsRateLimited }),
            // Someone upgraded and someone did not: only the joiner's error says so otherwise (docs/PROTOCOL.md 2.5).
            (
                counter("huddle_protocol_refusals_total", [("direction", "sent")]),
                { $0.transport.endpoint.refusalsSent }
            ),
            (
                counter("huddle_protocol_refusals_total", [("direction", "received")]),
                { $0.transport.endpoint.refusalsAccepted }
            ),
            // The kernel refused these (a local firewall's EPERM, a probe over the interface MTU, no route): lost as
            // on the path, so an operator sees a firewall eating the mesh's traffic here and nowhere else.
            (counter("huddle_datagrams_refused_total"), { $0.transport.datagramsRefused }),
            (counter("huddle_socket_rebinds_total"), { $0.transport.socketRebinds }),
            (counter("huddle_packets_sent_total"), { $0.connections.packetsSent }),
            (counter("huddle_packets_lost_total"), { $0.connections.packetsLost }),
            (counter("huddle_spurious_losses_total"), { $0.connections.spuriousLosses }),
        ]
        for (reason, figure) in Self.dropReasons {
            sampled.append((counter("huddle_datagrams_dropped_total", [("reason", reason)]), figure))
        }
        self.sampled = sampled
        let sessionSampled: [(Counter, @Sendable (NodeMetricsSample.SessionCounters) -> Int)] = [
            (counter("huddle_attachment_chunks_sent_total"), { $0.chunksServed }),
            (counter("huddle_attachment_chunks_received_total"), { $0.chunksVerified }),
            (counter("huddle_attachment_chunks_rejected_total"), { $0.badChunksReceived }),
            (counter("huddle_attachment_requests_timed_out_total"), { $0.chunkRequestTimeouts }),
            (counter("huddle_protocol_violations_total", [("layer", "membership")]), { $0.membershipViolations }),
            (counter("huddle_protocol_violations_total", [("layer", "journal")]), { $0.journalViolations }),
            (counter("huddle_refused_total", [("what", "member_record")]), { $0.memberRecordsRefused }),
            (counter("huddle_refused_total", [("what", "invitation")]), { $0.invitationsEvicted }),
            (counter("huddle_refused_total", [("what", "attachment")]), { $0.attachmentAnnouncesRefused }),
            (counter("huddle_refused_total", [("what", "non_member_message")]), { $0.nonMemberMessagesDropped }),
            (counter("huddle_member_relay_packets_forwarded_total"), { $0.memberRelayPacketsForwarded }),
            (counter("huddle_member_relay_bytes_forwarded_total"), { $0.memberRelayBytesForwarded }),
            (counter("huddle_member_relay_rate_limited_total"), { $0.memberRelayRateLimited }),
        ]
        self.sessionSampled = sessionSampled
        connections = gauge("huddle_connections")
        participants = gauge("huddle_participants")
        congestionWindow = gauge("huddle_congestion_window_bytes")
        bytesInFlight = gauge("huddle_bytes_in_flight")
        rtt = Timer(label: "huddle_rtt_seconds", dimensions: dimensions, factory: factory)
        joinDuration = Timer(label: "huddle_join_duration_seconds", dimensions: dimensions, factory: factory)
        let classes = [[("class", "unreliable")], [("class", "reliable")]]
        messagesSent = classes.map { counter("huddle_messages_sent_total", $0) }
        messageBytesSent = classes.map { counter("huddle_message_bytes_sent_total", $0) }
        messagesReceived = classes.map { counter("huddle_messages_received_total", $0) }
        messageBytesReceived = classes.map { counter("huddle_message_bytes_received_total", $0) }
        var undelivered: [DeliveryFailure.Reason: Counter] = [:]
        for reason in DeliveryFailure.Reason.allCases {
            undelivered[reason] = counter("huddle_messages_undelivered_total", [("reason", reason.metricsLabel)])
        }
        self.undelivered = undelivered
    }

    /// Publishes `sample`: counters grow by what changed since the previous sample, gauges take its levels, and each
    /// connection's RTT is recorded once. `participants` is the current session's count (0 outside a session).
    func publish(_ sample: NodeMetricsSample, participants count: Int) {
        let previous = self.previous.withLockedValue { previous in
            defer { previous = sample }
            return previous
        }
        for (counter, figure) in sampled {
            let grown = figure(sample) - (previous.map(figure) ?? 0)
            if grown > 0 { counter.increment(by: grown) }
        }
        if let session = sample.session {
            // A new session starts its counters at zero.
            let before = previous?.session.flatMap { $0.generation == session.generation ? $0 : nil }
            for (counter, figure) in sessionSampled {
                let grown = figure(session) - (before.map(figure) ?? 0)
                if grown > 0 { counter.increment(by: grown) }
            }
        }
        connections.record(sample.openConnections)
        participants.record(count)
        congestionWindow.record(sample.congestionWindow)
        bytesInFlight.record(sample.bytesInFlight)
        for smoothed in sample.smoothedRTTs { rtt.recordNanoseconds(smoothed.nanoseconds) }
    }

    /// `count` messenger messages of `bytes` bytes each were handed to the transport.
    func sent(count: Int, bytes: Int, reliable: Bool) {
        guard count > 0 else { return }
        messagesSent[reliable ? 1 : 0].increment(by: count)
        messageBytesSent[reliable ? 1 : 0].increment(by: count * bytes)
    }

    /// A messenger message of `bytes` bytes arrived from a member.
    func received(bytes: Int, reliable: Bool) {
        messagesReceived[reliable ? 1 : 0].increment()
        messageBytesReceived[reliable ? 1 : 0].increment(by: bytes)
    }

    /// `count` messenger messages will not be delivered, for `reason`.
    func undelivered(count: Int, reason: DeliveryFailure.Reason) {
        undelivered[reason]?.increment(by: count)
    }

    /// A join completed `duration` after it began.
    func joined(after duration: Duration) {
        joinDuration.recordNanoseconds(duration.nanoseconds)
    }
}

extension DeliveryFailure.Reason {
    /// The reason as a metrics label value (snake case, like every label of ``NodeMetrics``).
    var metricsLabel: String { self == .sessionEnded ? "session_ended" : rawValue }
}

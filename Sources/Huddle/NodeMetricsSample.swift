import HuddleProtocol
import HuddleTransport

/// A node's counters and levels at one moment, from which ``NodeMetrics`` publishes. Taken on the event loop in one
/// step, so the figures agree with each other.
struct NodeMetricsSample: Sendable {
    /// The session's own counters; they start at zero with every session the node joins (``generation``).
    struct SessionCounters: Sendable, Equatable {
        /// Which of the engine's sessions these belong to.
        var generation: Int
        var membershipViolations = 0
        var journalViolations = 0
        var nonMemberMessagesDropped = 0
        var memberRecordsRefused = 0
        var invitationsEvicted = 0
        var attachmentAnnouncesRefused = 0
        var chunksServed = 0
        var chunksVerified = 0
        var badChunksReceived = 0
        var chunkRequestTimeouts = 0
        /// What this node relayed for the session's other members (PROTOCOL.md 10.3): packets, bytes, and packets
        /// over a member's 2 MiB/s dropped.
        var memberRelayPacketsForwarded = 0
        var memberRelayBytesForwarded = 0
        var memberRelayRateLimited = 0
    }

    /// The transport's and endpoint's counters.
    var transport: TransportStatistics
    /// Every connection's counters, closed ones included: they never go down.
    var connections: ConnectionStatistics
    /// Connections open now.
    var openConnections: Int
    /// The congestion windows of the open connections, summed.
    var congestionWindow: Int
    /// The bytes in flight of the open connections, summed.
    var bytesInFlight: Int
    /// The smoothed round-trip time of each open connection that completed its handshake.
    var smoothedRTTs: [Duration]
    /// The current session's counters, if the node is in one.
    var session: SessionCounters?

    init(endpoint: Endpoint, transport: TransportStatistics, session: SessionCounters?) {
        self.transport = transport
        self.session = session
        var connections = endpoint.closedConnectionStatistics
        var window = 0
        var inFlight = 0
        var rtts: [Duration] = []
        let ids = endpoint.connectionIDs
        rtts.reserveCapacity(ids.count)
        for id in ids {
            guard let connection = endpoint.connection(id) else { continue }
            connections.add(connection.statistics)
            window += connection.congestionWindow
            inFlight += connection.bytesInFlight
            if connection.statistics.handshakes > 0 { rtts.append(connection.rtt.smoothed) }
        }
        self.connections = connections
        self.openConnections = ids.count
        self.congestionWindow = window
        self.bytesInFlight = inFlight
        self.smoothedRTTs = rtts
    }
}

extension NodeMetricsSample.SessionCounters {
    /// The counters of the engine's session `loop` on `endpoint` (`nil`: none, as once a session finished).
    init?(_ loop: LoopSession, endpoint: Endpoint) {
        guard let session = loop.machine.session else { return nil }
        let membership = session.membership
        let journal = loop.machine.journal.state
        self.init(
            generation: loop.generation, membershipViolations: session.membershipViolations,
            journalViolations: loop.machine.journal.violations,
            nonMemberMessagesDropped: session.nonMemberMessagesDropped,
            memberRecordsRefused: membership.membersRefused, invitationsEvicted: membership.invitationsEvicted,
            attachmentAnnouncesRefused: journal.announcesRefused, chunksServed: journal.chunksServed,
            chunksVerified: journal.chunksVerified, badChunksReceived: journal.badChunksReceived,
            chunkRequestTimeouts: journal.requestTimeouts,
            memberRelayPacketsForwarded: endpoint.relayServiceStatistics?.packetsForwarded ?? 0,
            memberRelayBytesForwarded: endpoint.relayServiceStatistics?.bytesForwarded ?? 0,
            memberRelayRateLimited: endpoint.relayServiceStatistics?.rateLimitedDropped ?? 0)
    }
}

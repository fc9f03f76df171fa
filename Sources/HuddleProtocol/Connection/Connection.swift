import DequeModule
import HuddleCrypto
import HuddleWire

/// Identifies a connection within its ``Endpoint``.
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
    /// The endpoint-assigned number.
    public let rawValue: UInt64

    /// Wraps a number.
    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public var description: String { "#\(rawValue)" }
}

/// One encrypted, reliable connection to one peer, as a sans-IO state machine: reliable ordered channels with
/// fragmentation, unreliable datagrams, ACKs, RFC 9002 loss recovery, congestion control with pacing, flow control,
/// keepalive, idle timeout, rekeying and CLOSE.
///
/// The ``Endpoint`` owns connections: it runs handshakes, decrypts packets to the right connection and encrypts what
/// ``pollTransmit(into:now:)`` builds. Nothing here reads a clock or the system RNG.
public struct Connection {
    /// Where a connection is in its life.
    public enum State: Sendable, Equatable {
        /// Waiting for the first handshake to complete.
        case connecting
        /// Keys confirmed; data flows.
        case established
        /// CLOSE sent or received; lingering to absorb stray packets until the instant given.
        case draining(until: Instant)
        /// Gone: the endpoint removes it.
        case closed
    }

    /// The endpoint-assigned identifier.
    public let id: ConnectionID
    /// The peer's static key.
    public let peer: X25519PublicKey
    /// The routes to the peer: the one in use, the validated ones, path challenges in progress.
    var paths: PathSet
    /// This endpoint's own addresses to offer the peer in CANDIDATES while the connection is relayed.
    var localCandidates: [NetworkAddress] = []
    /// CANDIDATES are to be sent (the connection became relayed, or the local candidates changed).
    var candidatesOwed = false
    /// OBSERVED_ADDRESS is to be sent (the connection reached the peer at a new direct address).
    var observedAddressOwed = false
    /// The peer's latest CANDIDATES.
    var candidatesReceived: [NetworkAddress] = []
    /// Where the connection is in its life.
    public internal(set) var state: State = .connecting
    /// The configuration it runs with.
    public let configuration: ConnectionConfiguration

    // Keys. Packet numbers belong to the connection and never repeat, across keypairs too.
    var current: TransportKeypair?
    var previous: TransportKeypair?
    var next: TransportKeypair?
    var nextPacketNumber: UInt64 = 0
    var packetsUnderCurrentKey: UInt64 = 0

    // Handshake bookkeeping (the endpoint builds the messages).
    var initiation: HandshakeMessages.Initiation?
    /// Verifies the `mac1` of responses to ``initiation``: the credentials it was made with (the peer's credentials
    /// may have changed since, e.g. from invitation to member credentials).
    var initiationAuthenticator: MacAuthenticator?
    /// The initiation that ``initiation`` replaced and its authenticator, kept so its response, already on its way,
    /// still completes the handshake (a retry with new credentials right after the first initiation otherwise costs
    /// a retry interval: the responder answered the first and drops the second as too soon).
    var superseded: (initiation: HandshakeMessages.Initiation, authenticator: MacAuthenticator)?
    /// Times the pending initiation's very bytes were sent again (a lost initiation or response is recovered
    /// without a new handshake, so a slow path's late response still matches; see ``ProtocolLimits/initiationResends``).
    var initiationResends = 0
    /// The peer's credentials changed since the pending initiation was made: the next retry must be a new one.
    var initiationCredentialsChanged = false
    /// The last initiation this side answered and its response, so an exact duplicate (the initiator resending
    /// because the response was lost or slow) gets the same response again instead of nothing.
    var answeredInitiation: (initiation: [UInt8], response: [UInt8])?
    var handshakeStartedAt: Instant?
    /// Initiations sent for the handshake in progress (before the current one), for the retry backoff.
    var initiationsSent = 0
    /// Other addresses the peer may be reached at directly, tried with the first handshake's retries (see
    /// ``Endpoint/connect(to:at:alternates:now:)``).
    var alternateAddresses: [NetworkAddress] = []
    var nextInitiationAt: Instant?
    var cookie: [UInt8]?
    var lastAcceptedTimestamp: TAI64N?
    var lastInitiationAcceptedAt: Instant?

    // Recovery.
    var sentPackets = SentPacketTracker<SentFrames>()
    /// The result of the last ACK, kept so its arrays' storage is reused instead of allocated for every ACK.
    var ackScratch = SentPacketTracker<SentFrames>.AckResult()
    var receivedPackets = ReceivedPacketTracker()
    /// The round-trip estimate.
    public internal(set) var rtt = RTTEstimator()
    var congestion: any CongestionController
    var pacer: Pacer
    var probesOwed = 0
    /// Path MTU discovery on the direct route: the datagram size the current path is known to carry.
    var pathMTU: PathMTUDiscovery
    /// When the pacer will let the next packet go, if it held one back at the last poll.
    var pacerReleaseAt: Instant?

    // Channels and flow control.
    var sendChannels = ChannelTable<SendChannel>()
    var receiveChannels = ChannelTable<ReceiveChannel>()
    var reassembly = ReassemblyBudget()
    var incompleteMessages = IncompleteMessageAllowance()
    /// The peer's MAX_DATA: total message bytes we may start.
    var peerMaxData: UInt64
    /// Total message bytes we have started.
    var creditUsed: UInt64 = 0
    /// The MAX_DATA we last advertised.
    var advertisedMaxData: UInt64
    /// Message bytes the application has taken.
    var consumedBytes: UInt64 = 0
    /// When the receive window was last considered for an update (the arrival time of the packet then).
    var lastWindowUpdateAt: Instant?
    /// The largest the receive window may grow to: ``ProtocolLimits/maxReceiveWindowPerConnection``, lowered by the
    /// endpoint while its connections together reach ``ProtocolLimits/maxReceiveWindowGrowthPerEndpoint``.
    var receiveWindowCeiling = ProtocolLimits.maxReceiveWindowPerConnection
    var maxDataPending = false
    var datagrams = Deque<(ChannelID, [UInt8])>()
    var packetsSinceBulk = 0
    /// Which bulk channel comes first among the bulk channels in the next packet that carries bulk data.
    var bulkTurn = 0
    /// Fragments of the packet being built that go again in the next one (a duplicated channel's small messages);
    /// kept with its capacity, so duplicating allocates nothing per packet.
    var duplicates: [(position: Int, record: FragmentRecord)] = []

    // Liveness.
    var lastReceivedAt: Instant
    var lastSentAt: Instant
    var lastAckElicitingReceivedAt: Instant?
    /// When the idle timer last restarted: on every authenticated packet, and on the first ack-eliciting packet sent
    /// after one (RFC 9000 §10.1).
    var idleTimerStartedAt: Instant
    /// When this connection last ran (a packet or a timer), to tell a stalled process from a slow path.
    var lastServicedAt: Instant
    /// When this connection last ran after a stall (see ``ProtocolLimits/stallTolerance``), if it ever did.
    var stallEndedAt: Instant?
    var sentAckElicitingSinceReceive = false
    /// When the peer's silence started to count, if later than ``lastReceivedAt``: the end of a stall of this process
    /// (a silence this side was not there to notice is not the peer's).
    var silenceCountedFrom: Instant?
    /// Whether ``ConnectionEvent/unresponsive(lastHeard:)`` was reported and no packet has arrived since.
    var reportedUnresponsive = false
    /// Whether the peer set HONORS_IMMEDIATE_ACK on an authenticated packet: it acknowledges packets flagged
    /// IMMEDIATE_ACK at once, so their probe timeout leaves its acknowledgement delay out (PROTOCOL.md §7.8).
    var peerHonorsImmediateAck = false
    var pingPending = false
    var closeFrame: CloseFrame?
    var closeReason: ProtocolError?

    var events = Deque<ConnectionEvent>()
    /// Local indices no longer in use, for the endpoint to forget.
    var retiredIndices: [ReceiverIndex] = []

    /// Statistics for `/peers`-style reporting.
    public internal(set) var statistics = ConnectionStatistics()

    /// A new connection to `peer` over `route`, created at `now`; path challenges draw their data from `random`.
    public init(
        id: ConnectionID, peer: X25519PublicKey, route: Route, configuration: ConnectionConfiguration,
        random: ChaChaRandomGenerator, now: Instant
    ) {
        self.id = id
        self.peer = peer
        self.paths = PathSet(route: route, random: random)
        self.configuration = configuration
        congestion = Self.makeCongestionController(id: id, peer: peer, configuration: configuration)
        pacer = Pacer(maxDatagramSize: configuration.maxDatagramSize)
        pathMTU = PathMTUDiscovery(
            base: configuration.maxDatagramSize,
            ceiling: configuration.maxProbedDatagramSize ?? configuration.maxDatagramSize)
        // Both sides start with the whole reassembly budget as implicit credit, so no round trip is needed first.
        let initialWindow = UInt64(ProtocolLimits.maxReassemblyBytesPerConnection)
        peerMaxData = initialWindow
        advertisedMaxData = initialWindow
        reassembly.flowControlLimit = initialWindow
        lastReceivedAt = now
        lastSentAt = now
        idleTimerStartedAt = now
        lastServicedAt = now
    }

    /// Notes that the connection runs at `now`: when packets were in flight and it did not run for longer than its
    /// probe timer allows (plus ``ProtocolLimits/stallTolerance``), the process was stalled, and the stall ended now.
    mutating func noteServiced(now: Instant) {
        let probeInterval = Swift.max(ProtocolLimits.maxProbeTimeoutInterval, rtt.probeTimeout)
        if sentPackets.bytesInFlight > 0, now - lastServicedAt > probeInterval + ProtocolLimits.stallTolerance {
            stallEndedAt = now
            statistics.stallsDetected += 1
        }
        lastServicedAt = now
    }

    static func makeCongestionController(
        id: ConnectionID, peer: X25519PublicKey, configuration: ConnectionConfiguration
    ) -> any CongestionController {
        switch configuration.congestionControl {
        case .bbr:
            // The peer's key and the connection number seed the probing phase: flows from different senders, or to
            // different peers, do not probe in step.
            let seed = peer.bytes.prefix(8).reduce(id.rawValue) { $0 &* 257 &+ UInt64($1) }
            return Bbr(maxDatagramSize: configuration.maxDatagramSize, seed: seed)
        case .cubic: return Cubic(maxDatagramSize: configuration.maxDatagramSize)
        case .newReno: return NewReno(maxDatagramSize: configuration.maxDatagramSize)
        }
    }

    // MARK: - Application API

    /// Queues a reliable message on `channel`. `tag` (0: none) comes back in the message's
    /// ``ConnectionEvent/delivered(channel:sequence:tag:)`` event, or in the close's undelivered list. Throws
    /// ``ProtocolError/messageTooLarge(size:limit:)`` above 256 KiB, ``ProtocolError/queueFull(limit:)`` while the
    /// channel's queue is full (wait for ``ConnectionEvent/delivered(channel:sequence:tag:)`` events),
    /// ``ProtocolError/connectionClosed`` after close.
    public mutating func send(
        _ message: [UInt8], on channel: ChannelID, tag: UInt64 = 0
    ) throws(ProtocolError) -> MessageSequence {
        guard isOpen else { throw .connectionClosed }
        if let position = sendChannels.position(of: channel) {
            return try sendChannels.channels[position].enqueue(message, tag: tag)
        }
        // A new channel is only added once it holds a message.
        var sender = SendChannel(channel: channel)
        sender.isDuplicated = configuration.duplicatedChannels.contains(channel)
        let sequence = try sender.enqueue(message, tag: tag)
        _ = sendChannels.insert(sender, for: channel)
        return sequence
    }

    /// Queues an unreliable datagram (dropped, oldest first, when more than
    /// ``ProtocolLimits/maxQueuedDatagrams`` wait). Throws for oversized datagrams or a closed connection.
    public mutating func sendDatagram(_ bytes: [UInt8], on channel: ChannelID) throws(ProtocolError) {
        guard isOpen else { throw .connectionClosed }
        let limit = Self.maxDatagramPayload(datagramSize: configuration.maxDatagramSize)
        guard bytes.count <= limit else { throw .messageTooLarge(size: bytes.count, limit: limit) }
        if datagrams.count >= ProtocolLimits.maxQueuedDatagrams {
            datagrams.removeFirst()
            statistics.datagramsDropped += 1
        }
        datagrams.append((channel, bytes))
    }

    /// Whether `channel` can accept another message of `size` bytes now.
    public func canSend(size: Int, on channel: ChannelID) -> Bool {
        guard isOpen else { return false }
        let position = sendChannels.position(of: channel)
        let queued = position.map { sendChannels.channels[$0].queuedBytes } ?? 0
        return queued + size <= ProtocolLimits.maxQueuedBytesPerChannel
            && (position.map { sendChannels.channels[$0].queuedMessages } ?? 0)
                < ProtocolLimits.maxQueuedMessagesPerChannel
    }

    /// Closes the connection because the peer opened a new one that replaces it (see ``ProtocolError/superseded``):
    /// like ``close(code:reason:now:)``, but reported with that reason.
    mutating func supersede(now: Instant) {
        guard isOpen else { return }
        closeReason = .superseded
        close(code: .noError, reason: "superseded by a new connection", now: now)
    }

    /// Starts an orderly close: a CLOSE frame with `code` and `reason` is sent, then the connection drains.
    public mutating func close(code: CloseCode = .noError, reason: String = "", now: Instant) {
        guard isOpen else { return }
        var trimmed = reason
        while trimmed.utf8.count > WireLimits.maxCloseReasonLength { trimmed.removeLast() }
        closeFrame = CloseFrame(code: code, reason: trimmed)
        if current == nil {
            finish(reason: closeReason, now: now)
        }
    }

    /// The next event, or `nil`.
    public mutating func pollEvent() -> ConnectionEvent? {
        guard let event = events.popFirst() else { return nil }
        if case .message(_, let bytes) = event { consumed(bytes.count) }
        return event
    }

    /// Whether the connection still accepts sends.
    public var isOpen: Bool {
        switch state {
        case .connecting, .established: return closeFrame == nil
        case .draining, .closed: return false
        }
    }

    /// When the connection closes for silence: the idle timeout after the idle timer last restarted, but never
    /// sooner than three probe timeouts (RFC 9000 §10.1), so slow paths are not cut off while still probing.
    var idleDeadline: Instant {
        idleTimerStartedAt + max(configuration.idleTimeout, rtt.probeTimeout * 3)
    }

    /// Bytes the congestion controller currently allows in flight.
    public var congestionWindow: Int { congestion.congestionWindow }
    /// The largest datagram the current path is known to carry (Path MTU discovery; the base size until a larger
    /// one is confirmed, and always on a relayed or not yet validated route).
    public var pathDatagramSize: Int {
        paths.current.isRelayed || !paths.currentValidated ? configuration.maxDatagramSize : pathMTU.current
    }

    /// Bytes in flight.
    public var bytesInFlight: Int { sentPackets.bytesInFlight }

    /// How many reliable messages on `channel` the peer may not have delivered yet (queued, in flight, or
    /// acknowledged behind an earlier one that is not).
    public func unacknowledgedMessageCount(on channel: ChannelID) -> Int {
        guard let position = sendChannels.position(of: channel) else { return 0 }
        return sendChannels.channels[position].undeliveredCount
    }

    /// The largest DATAGRAM payload that fits one packet of `datagramSize`.
    public static func maxDatagramPayload(datagramSize: Int) -> Int {
        // Header and tag, then a DATAGRAM frame: type (1), channel (up to 2), length (up to 2).
        datagramSize - TransportHeader.encodedLength - TransportHeader.tagLength - 5
    }

    // MARK: - Flow control

    /// The receive window: the flow-control credit this side advertises beyond what the application consumed, and the
    /// reassembly byte budget that backs it. Starts at ``ProtocolLimits/maxReassemblyBytesPerConnection`` and only
    /// grows (auto-tuning), up to ``receiveWindowCeiling``.
    public var receiveWindow: Int { reassembly.maxBytes }

    /// Counts `bytes` the application took and, once a quarter of the window was consumed since the last MAX_DATA,
    /// advertises a new limit (consumed + window).
    ///
    /// Auto-tuning (as Chromium's QUIC does): when that quarter was consumed in less than half a smoothed RTT, the
    /// sender is held by the window (a window-limited sender delivers a quarter window in a quarter RTT; one limited
    /// by the path or by its application takes longer), so the window doubles, up to ``receiveWindowCeiling``. A
    /// slow application never grows it: the window only says how much this side is prepared to buffer for a fast
    /// one. The time is the arrival of the latest packet (the core reads no clock; messages are taken right after
    /// their packets arrive).
    private mutating func consumed(_ bytes: Int) {
        consumedBytes += UInt64(bytes)
        var window = UInt64(reassembly.maxBytes)
        guard consumedBytes + window >= advertisedMaxData + window / 4 else { return }
        if let last = lastWindowUpdateAt, lastReceivedAt - last < rtt.smoothed / 2 {
            let grown = min(window * 2, UInt64(max(receiveWindowCeiling, reassembly.maxBytes)))
            if grown > window {
                window = grown
                reassembly.raiseMaxBytes(to: Int(window))
                statistics.receiveWindowIncreases += 1
            }
        }
        lastWindowUpdateAt = lastReceivedAt
        let proposed = min(consumedBytes + window, reassembly.largestSafeFlowControlLimit)
        if proposed >= advertisedMaxData + window / 4 {
            advertisedMaxData = proposed
            reassembly.flowControlLimit = proposed
            maxDataPending = true
        }
    }

    var sendCredit: UInt64 { peerMaxData > creditUsed ? peerMaxData - creditUsed : 0 }

    // MARK: - Closing

    /// Ends the connection: reports every unacknowledged message as undelivered, then drains.
    mutating func finish(reason: ProtocolError?, now: Instant) {
        guard state != .closed else { return }
        if case .draining = state { return }
        var undelivered: [UndeliveredMessage] = []
        for (channel, sender) in zip(sendChannels.ids, sendChannels.channels) {
            undelivered += sender.undeliveredMessages.map {
                UndeliveredMessage(channel: channel, sequence: $0.sequence, tag: $0.tag)
            }
        }
        sendChannels.removeAll()
        datagrams.removeAll()
        closeReason = reason
        events.append(.closed(reason: reason, undelivered: undelivered))
        state = .draining(until: now + configuration.drainPeriod)
    }
}

extension Connection {
    /// A description of the first buffer found over its named limit, or `nil` when all are within bounds. The
    /// simulator checks this after every event.
    public var limitViolation: String? {
        if reassembly.bufferedBytes > reassembly.maxBytes {
            return "reassembly holds \(reassembly.bufferedBytes) bytes, limit \(reassembly.maxBytes)"
        }
        if reassembly.incompleteMessages > reassembly.maxIncompleteMessages {
            return "\(reassembly.incompleteMessages) incomplete messages, limit \(reassembly.maxIncompleteMessages)"
        }
        if sentPackets.trackedPacketCount > ProtocolLimits.maxTrackedSentPackets {
            return "\(sentPackets.trackedPacketCount) tracked packets, limit \(ProtocolLimits.maxTrackedSentPackets)"
        }
        if datagrams.count > ProtocolLimits.maxQueuedDatagrams {
            return "\(datagrams.count) queued datagrams, limit \(ProtocolLimits.maxQueuedDatagrams)"
        }
        for (channel, sender) in zip(sendChannels.ids, sendChannels.channels)
        where sender.queuedBytes > ProtocolLimits.maxQueuedBytesPerChannel {
            return
                "channel \(channel) queues \(sender.queuedBytes) bytes, limit \(ProtocolLimits.maxQueuedBytesPerChannel)"
        }
        return nil
    }
}

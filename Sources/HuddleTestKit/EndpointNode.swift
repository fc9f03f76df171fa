import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// An ``Endpoint`` running inside a ``SimulatedNetwork``, with an application model: it feeds its workloads into
/// the endpoint, drains every event, and checks each delivered message is the next one expected on its channel,
/// byte for byte, exactly once.
public struct EndpointNode: SimulatedNode {
    /// Per (peer, channel) receive bookkeeping.
    public struct ReceiveState: Sendable {
        /// Messages received so far (the next expected sequence).
        public var count = 0
        /// Bytes received so far.
        public var bytes = 0
        /// When the latest message arrived.
        public var lastDeliveryAt: Instant?
    }

    /// The protocol core under test.
    public var endpoint: Endpoint
    /// What this node sends.
    public var workloads: [Workload]
    /// The sizes each peer sends on each channel, so deliveries can be checked.
    public var expectedSizes: [ExpectationKey: [Int]]
    /// What arrived, per sender and channel.
    public private(set) var received: [ExpectationKey: ReceiveState] = [:]
    /// Peers whose connection completed a handshake (counted per event).
    public private(set) var connectedEvents = 0
    /// Connections that closed, with their reasons and undelivered messages.
    public private(set) var closures:
        [(peer: X25519PublicKey, reason: ProtocolError?, undelivered: [UndeliveredMessage])] = []
    /// Messages the peer confirmed, per channel.
    public private(set) var deliveredConfirmations = 0
    /// Whether every received message is sent straight back to its sender on the same channel (an echo server).
    public var echoes = false
    /// Whether to keep the arrival time of every message in ``deliveryTimes``.
    public var recordsDeliveryTimes = false
    /// Arrival times per sender and channel, in order (kept only when ``recordsDeliveryTimes`` is set).
    public private(set) var deliveryTimes: [ExpectationKey: [Instant]] = [:]
    /// When set, the application takes at most this many message bytes per second (a slow reader), banking unused
    /// time for at most 10 ms; `nil` (the default): every event as soon as the endpoint has it.
    public var readRate: Int?
    /// Bytes the slow reader may still take, and when it last looked.
    private var readAllowance = 0
    private var lastReadAt: Instant?
    /// Whether the slow reader stopped with events possibly waiting: it looks again a millisecond later.
    private var readingPaused = false
    /// Invariant violations seen by this node (the network's checker reports them).
    public private(set) var violations: [String] = []

    /// Identifies a stream: the sender's static key and the channel.
    public struct ExpectationKey: Hashable, Sendable {
        /// The sender.
        public var sender: X25519PublicKey
        /// The channel.
        public var channel: ChannelID

        /// A key for `sender` on `channel`.
        public init(sender: X25519PublicKey, channel: ChannelID) {
            self.sender = sender
            self.channel = channel
        }
    }

    /// A node running `endpoint` that sends `workloads` and expects `expectedSizes`.
    public init(endpoint: Endpoint, workloads: [Workload] = [], expectedSizes: [ExpectationKey: [Int]] = [:]) {
        self.endpoint = endpoint
        self.workloads = workloads
        self.expectedSizes = expectedSizes
    }

    public mutating func handle(datagram: [UInt8], from source: NetworkAddress, now: Instant) {
        endpoint.handle(datagram: datagram, from: source, now: now)
        pump(now: now)
    }

    public mutating func handleTimeout(now: Instant) {
        endpoint.handleTimeout(now: now)
        pump(now: now)
    }

    public mutating func pollTransmit(now: Instant) -> SimulatedTransmit? {
        guard let (destination, datagram) = endpoint.pollTransmit(now: now) else { return nil }
        return SimulatedTransmit(destination: destination, datagram: datagram)
    }

    public var nextDeadline: Instant? {
        mutating get {
            let deadline = endpoint.nextDeadline
            guard readingPaused, let lastReadAt else { return deadline }
            let resume = lastReadAt + .milliseconds(1)
            return min(deadline ?? resume, resume)
        }
    }

    public var diagnostics: String {
        (endpoint.connectionIDs.compactMap { id in endpoint.connection(id).map { "\(id): \($0.timerReport)" } }
            + ["\(endpoint.statistics)"]).joined(separator: "\n")
    }

    /// Connects to `peer` and runs the application model.
    public mutating func connect(to peer: X25519PublicKey, at address: NetworkAddress, now: Instant) throws {
        try endpoint.connect(to: peer, at: address, now: now)
        pump(now: now)
    }

    /// Feeds workloads and drains events.
    public mutating func pump(now: Instant) {
        feedWorkloads()
        drainEvents(now: now)
        feedWorkloads()
    }

    private mutating func feedWorkloads() {
        for index in workloads.indices {
            let peer = workloads[index].peer
            guard let id = endpoint.connectionID(for: peer), endpoint.connection(id)?.state == .established else {
                continue
            }
            while !workloads[index].isFullyAccepted {
                let sequence = workloads[index].accepted
                let size = workloads[index].sizes[sequence]
                let channel = workloads[index].channel
                guard endpoint.connection(id)?.canSend(size: size, on: channel) == true else { break }
                let bytes = MessagePattern.bytes(channel: channel.rawValue, sequence: UInt64(sequence), size: size)
                do {
                    _ = try endpoint.send(bytes, on: channel, to: id)
                    workloads[index].accepted += 1
                } catch {
                    break
                }
            }
        }
    }

    /// When the first connection closed, if one did.
    public private(set) var closedAt: Instant?

    /// Every route change the endpoint reported, in order.
    public private(set) var routeChanges: [Route] = []
    /// Every unresponsive (`responsive` false) and responsive report, with the peer and when it came.
    public private(set) var responsiveness: [(peer: X25519PublicKey, responsive: Bool, at: Instant)] = []

    private mutating func drainEvents(now: Instant) {
        if let readRate {
            let elapsed = Double(((lastReadAt.map { now - $0 }) ?? .zero).nanoseconds) / 1e9
            readAllowance = min(readAllowance + Int(Double(readRate) * elapsed), readRate / 100)
            lastReadAt = now
        }
        readingPaused = false
        while true {
            if readRate != nil, readAllowance <= 0 {
                readingPaused = true
                break
            }
            guard let event = endpoint.pollEvent() else { break }
            switch event {
            case .connected:
                connectedEvents += 1
            case .message(let id, let channel, let bytes):
                guard let peer = endpoint.connection(id)?.peer else { continue }
                let key = ExpectationKey(sender: peer, channel: channel)
                var state = received[key] ?? ReceiveState()
                let sequence = state.count
                if let sizes = expectedSizes[key] {
                    if sequence >= sizes.count {
                        violations.append("extra message \(sequence) on channel \(channel) (duplicate delivery)")
                    } else if !MessagePattern.matches(
                        bytes, channel: channel.rawValue, sequence: UInt64(sequence), expectedSize: sizes[sequence])
                    {
                        violations.append(
                            "message \(sequence) on channel \(channel): \(bytes.count) bytes differ from what was sent")
                    }
                }
                state.count += 1
                state.bytes += bytes.count
                if readRate != nil { readAllowance -= bytes.count }
                state.lastDeliveryAt = now
                received[key] = state
                if recordsDeliveryTimes { deliveryTimes[key, default: []].append(now) }
                if echoes { echo(size: bytes.count, to: peer, on: channel) }
            case .datagram:
                break
            case .delivered:
                deliveredConfirmations += 1
            case .routeChanged(_, _, let route):
                routeChanges.append(route)
            case .unresponsive(_, let peer, _):
                responsiveness.append((peer, false, now))
            case .responsive(_, let peer):
                responsiveness.append((peer, true, now))
            case .unsent:
                break  // only drivers with a queue in front of the endpoint report these
            case .turnChanged, .portMappingChanged:
                break  // the simulator runs no TURN servers or routers
            case .closed(_, let peer, let reason, let undelivered):
                closures.append((peer, reason, undelivered))
                if closedAt == nil { closedAt = now }
            }
        }
    }

    /// Queues a copy of a received message back to its sender; the copy's bytes are the same pattern because the
    /// echo stream's sequence numbers match the original's.
    private mutating func echo(size: Int, to peer: X25519PublicKey, on channel: ChannelID) {
        if let index = workloads.firstIndex(where: { $0.peer == peer && $0.channel == channel }) {
            workloads[index].sizes.append(size)
        } else {
            workloads.append(Workload(peer: peer, channel: channel, sizes: [size]))
        }
    }

    /// The first message this node's workloads handed to the endpoint that neither arrived at `receiver` nor is in
    /// `undelivered` (what the connection's close reported), described; `nil` when nothing was lost silently.
    public func unaccounted(by receiver: EndpointNode, undelivered: [UndeliveredMessage]) -> String? {
        let reported = Set(undelivered)
        for workload in workloads {
            let arrived = receiver.received[.init(sender: endpoint.staticKey, channel: workload.channel)]?.count ?? 0
            for sequence in arrived..<max(arrived, workload.accepted) {
                let message = UndeliveredMessage(
                    channel: workload.channel, sequence: MessageSequence(rawValue: UInt64(sequence)))
                if !reported.contains(message) {
                    return "message \(sequence) on \(workload.channel) neither arrived nor was reported undelivered"
                }
            }
        }
        return nil
    }

    /// Whether every expected message from every sender arrived.
    public var receivedEverything: Bool {
        expectedSizes.allSatisfy { key, sizes in (received[key]?.count ?? 0) == sizes.count }
    }

    /// Total workload bytes received.
    public var receivedBytes: Int { received.values.reduce(0) { $0 + $1.bytes } }

    /// Total workload messages received.
    public var receivedMessages: Int { received.values.reduce(0) { $0 + $1.count } }
}

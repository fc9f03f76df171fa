import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// The standard transfer check run under every link fault: node 0 sends node 1 messages of mixed sizes (1 B to
/// 256 KiB) on a message channel and a bulk stream of 64 KiB messages on a bulk channel, while node 1 sends a few
/// chat messages back. Invariants, checked after every event:
///
/// - every delivered message is the next expected one on its channel, byte-identical (so: exactly once, in order,
///   nothing unauthenticated delivered);
/// - no (key, nonce) pair is used twice (every transport datagram's sender, receiver index and packet number is
///   unique);
/// - reassembly buffers, sent-packet tracking and datagram queues stay within their limits;
///
/// and at the end every accepted message was delivered (or the sender was told it was not).
public struct TransferScenario: Sendable {
    /// The link fault model for a seed, with a description of every option.
    public var conditions: @Sendable (inout SimulationRandom) -> LinkConditions
    /// Bytes of bulk data per seed.
    public var bulkBytes: Int
    /// How long (virtual) a seed may take before it counts as stuck.
    public var timeout: Duration
    /// Faults applied during the run (blackholes, partitions), scheduled on the network.
    public var schedule: (@Sendable (inout SimulatedNetwork<EndpointNode>) -> Void)?
    /// Connection settings for both endpoints.
    public var configuration: ConnectionConfiguration
    /// A scenario's own check once everything arrived: a description of what is wrong, or `nil`.
    public var finalCheck: (@Sendable (SimulatedNetwork<EndpointNode>) -> String?)?

    /// A transfer scenario.
    public init(
        bulkBytes: Int = 10 * 1024 * 1024, timeout: Duration = .seconds(900),
        configuration: ConnectionConfiguration = ConnectionConfiguration(),
        conditions: @escaping @Sendable (inout SimulationRandom) -> LinkConditions,
        schedule: (@Sendable (inout SimulatedNetwork<EndpointNode>) -> Void)? = nil,
        finalCheck: (@Sendable (SimulatedNetwork<EndpointNode>) -> String?)? = nil
    ) {
        self.bulkBytes = bulkBytes
        self.timeout = timeout
        self.configuration = configuration
        self.conditions = conditions
        self.schedule = schedule
        self.finalCheck = finalCheck
    }

    /// The statistics of node `index`'s connection to the other node, if it is up.
    public static func connectionStatistics(
        _ net: SimulatedNetwork<EndpointNode>, node index: Int
    ) -> (statistics: ConnectionStatistics, pathDatagramSize: Int)? {
        guard let endpoint = net.node(index)?.endpoint, let id = endpoint.connectionIDs.first,
            let connection = endpoint.connection(id)
        else { return nil }
        return (connection.statistics, connection.pathDatagramSize)
    }

    /// Messages of mixed sizes: the edges (0, 1, one packet, just over, 64 KiB, the 256 KiB maximum) plus 24
    /// random sizes, a fifth of them up to 256 KiB.
    public static func mixedSizes(using random: inout SimulationRandom) -> [Int] {
        var sizes = [1, 0, 1167, 1168, 1169, 65_536, 262_144]
        for _ in 0..<24 { sizes.append(random.integer(in: 1...(random.chance(0.2) ? 262_144 : 4096))) }
        return sizes
    }

    /// A bulk stream of `bytes` as 64 KiB messages (at least one).
    public static func bulkSizes(bytes: Int) -> [Int] {
        Array(repeating: 65_536, count: max(bytes / 65_536, 1))
    }

    /// Runs one seed.
    public func run(seed: UInt64) throws -> ScenarioOutcome {
        var random = SimulationRandom(seed: seed ^ 0xC0FF_EE00)
        let link = conditions(&random)
        let chat = Self.mixedSizes(using: &random)
        let bulk = Self.bulkSizes(bytes: bulkBytes)
        let reply = (0..<10).map { _ in random.integer(in: 1...2000) }

        let endpoints = try TestMesh.endpoints(count: 2, seed: seed, configuration: configuration)
        let a = endpoints[0].staticKey
        let b = endpoints[1].staticKey
        let chatChannel = ChannelID(16)
        let bulkChannel = ChannelID(200)
        var sender = EndpointNode(
            endpoint: endpoints[0],
            workloads: [
                Workload(peer: b, channel: chatChannel, sizes: chat),
                Workload(peer: b, channel: bulkChannel, sizes: bulk),
            ])
        sender.expectedSizes = [.init(sender: b, channel: chatChannel): reply]
        var receiver = EndpointNode(
            endpoint: endpoints[1], workloads: [Workload(peer: a, channel: chatChannel, sizes: reply)])
        receiver.expectedSizes = [
            .init(sender: a, channel: chatChannel): chat, .init(sender: a, channel: bulkChannel): bulk,
        ]

        var net = SimulatedNetwork(seed: seed, nodes: [sender, receiver], conditions: link)
        net.options.append("chat sizes: \(chat)")
        net.options.append("bulk: \(bulk.count) x 65536 bytes")
        Invariants.install(on: &net)

        schedule?(&net)
        if let interval = SimulationTrace.interval {
            SimulationTrace.install(on: &net, every: interval, until: timeout)
        }

        let addressB = net.address(of: 1)
        try net.withNode(0) { try $0.connect(to: b, at: addressB, now: .zero) }
        let finished = try net.run(
            until: { $0.node(1)?.receivedEverything == true && $0.node(0)?.receivedEverything == true },
            timeout: timeout)
        guard finished else {
            let got = net.node(1).map { "\($0.receivedMessages) messages, \($0.receivedBytes) bytes" } ?? "crashed"
            let closures = (0..<2).map { index in
                net.node(index).map { node in
                    node.closures.map { "node \(index) closed: \($0.reason.map { "\($0)" } ?? "locally")" }
                } ?? []
            }.joined()
            throw net.failure(
                "not finished after \(timeout): receiver has \(got); network \(net.statistics); "
                    + closures.joined(separator: "; ") + "; node 0: " + (net.node(0)?.diagnostics ?? "crashed")
                    + "; node 1: " + (net.node(1)?.diagnostics ?? "crashed"))
        }
        if let problem = finalCheck?(net) { throw net.failure(problem) }
        let delivered = (net.node(1)?.receivedMessages ?? 0) + (net.node(0)?.receivedMessages ?? 0)
        let bytes = (net.node(1)?.receivedBytes ?? 0) + (net.node(0)?.receivedBytes ?? 0)
        return ScenarioOutcome(simulatedTime: net.now - .zero, messagesDelivered: delivered, bytesDelivered: bytes)
    }
}

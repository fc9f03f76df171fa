import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// Two endpoints, each optionally behind a ``SimulatedNAT``, and a public relay both register with: node 0 is the
/// relay, node 1 (A) dials node 2 (B) at B's own address (private when B is behind a NAT), and A sends B mixed
/// messages and a bulk stream while B sends chat back. Every message is checked on arrival (exactly once, in order,
/// byte-identical) and every buffer against its limit, after every event.
///
/// The outcome tells which route A ended on and when it first went direct, so tests can assert what NAT traversal
/// promises: direct between cone NATs, relayed otherwise, nothing lost either way (and through a NAT rebinding).
public struct TraversalScenario: Sendable {
    /// What the run showed.
    public struct Outcome: Sendable {
        /// When B had every message and A every reply.
        public var finishedAt: Instant
        /// A's route to B at the end.
        public var finalRoute: Route
        /// When A's connection first moved to a direct route, if it did.
        public var wentDirectAt: Instant?
        /// Migrations B's connection to A made (a rebinding shows up here).
        public var migrationsAtB: Int
        /// Packets the relay forwarded.
        public var packetsRelayed: Int
    }

    /// The NAT in front of A, if any.
    public var natA: SimulatedNAT.Mapping?
    /// The NAT in front of B, if any.
    public var natB: SimulatedNAT.Mapping?
    /// Bulk bytes A sends.
    public var bulkBytes: Int
    /// When A's NAT forgets its mappings (a rebinding), if ever.
    public var rebindAt: Duration?
    /// The link between every pair of nodes.
    public var link: LinkConditions

    /// A traversal scenario.
    public init(
        natA: SimulatedNAT.Mapping?, natB: SimulatedNAT.Mapping?, bulkBytes: Int = 4 << 20, rebindAt: Duration? = nil,
        link: LinkConditions = .clean(latency: .milliseconds(10))
    ) {
        self.natA = natA
        self.natB = natB
        self.bulkBytes = bulkBytes
        self.rebindAt = rebindAt
        self.link = link
    }

    /// Runs one seed.
    public func run(seed: UInt64, timeout: Duration = .seconds(300)) throws -> Outcome {
        var random = SimulationRandom(seed: seed ^ 0x7A7)
        let chat = TransferScenario.mixedSizes(using: &random)
        let bulk = TransferScenario.bulkSizes(bytes: bulkBytes)
        let reply = (0..<10).map { _ in random.integer(in: 1...2000) }
        var endpoints = try TestMesh.endpoints(count: 2, seed: seed)
        let relayAddress = SimulatedNetwork<TraversalNode>.address(of: 0)
        for index in 0..<2 {
            endpoints[index].addRelay(relayAddress, now: .zero)
            endpoints[index].setLocalAddresses([SimulatedNetwork<TraversalNode>.address(of: index + 1)])
        }
        let a = endpoints[0].staticKey
        let b = endpoints[1].staticKey
        let chatChannel = ChannelID(16)
        let bulkChannel = ChannelID(200)
        var nodeA = EndpointNode(
            endpoint: endpoints[0],
            workloads: [
                Workload(peer: b, channel: chatChannel, sizes: chat),
                Workload(peer: b, channel: bulkChannel, sizes: bulk),
            ])
        nodeA.expectedSizes = [.init(sender: b, channel: chatChannel): reply]
        var nodeB = EndpointNode(
            endpoint: endpoints[1], workloads: [Workload(peer: a, channel: chatChannel, sizes: reply)])
        nodeB.expectedSizes = [
            .init(sender: a, channel: chatChannel): chat, .init(sender: a, channel: bulkChannel): bulk,
        ]

        let nodes: [TraversalNode] = [.relay(RelayNode(seed: seed &+ 99)), .endpoint(nodeA), .endpoint(nodeB)]
        var net = SimulatedNetwork(seed: seed, nodes: nodes, conditions: link)
        if let natA { net.placeBehindNAT(1, SimulatedNAT(mapping: natA, publicAddress: (198, 51, 100, 1))) }
        if let natB { net.placeBehindNAT(2, SimulatedNAT(mapping: natB, publicAddress: (203, 0, 113, 1))) }
        net.addChecker("deliveries") { net in
            for index in 1...2 {
                guard let node = net.node(index)?.endpointNode else { continue }
                if let violation = node.violations.first { return "node \(index): \(violation)" }
                for id in node.endpoint.connectionIDs {
                    if let violation = node.endpoint.connection(id)?.limitViolation {
                        return "node \(index): \(violation)"
                    }
                }
            }
            return nil
        }
        if let rebindAt { net.schedule(at: .zero + rebindAt) { $0.rebindNAT(1) } }
        // Registration first (a real node starts with its relays), then the dial.
        _ = try net.run(
            until: { net in
                (1...2).allSatisfy {
                    net.node($0)?.endpointNode?.endpoint.relays(now: net.now).first?.registered == true
                }
            }, timeout: .seconds(5))
        let addressB = net.address(of: 2)
        var wentDirectAt: Instant?
        let dialAt = net.now
        try net.withNode(1) { try $0.endpointNode!.connect(to: b, at: addressB, now: dialAt) }
        let finished = try net.run(
            until: { net in
                guard let nodeA = net.node(1)?.endpointNode, let nodeB = net.node(2)?.endpointNode else { return false }
                if wentDirectAt == nil, nodeA.routeChanges.contains(where: { !$0.isRelayed }) { wentDirectAt = net.now }
                return nodeA.receivedEverything && nodeB.receivedEverything
            }, timeout: timeout)
        let endpointA = net.node(1)!.endpointNode!.endpoint
        let endpointB = net.node(2)!.endpointNode!.endpoint
        guard finished, let idA = endpointA.connectionID(for: b), let connectionA = endpointA.connection(idA) else {
            throw net.failure(
                "not finished after \(timeout): network \(net.statistics); A: \(net.node(1)!.diagnostics); "
                    + "B: \(net.node(2)!.diagnostics)")
        }
        let migrations = endpointB.connectionID(for: a).flatMap { endpointB.connection($0)?.statistics.migrations } ?? 0
        return Outcome(
            finishedAt: net.now, finalRoute: connectionA.route, wentDirectAt: wentDirectAt, migrationsAtB: migrations,
            packetsRelayed: net.node(0)!.relayNode!.relay.statistics.packetsForwarded)
    }
}

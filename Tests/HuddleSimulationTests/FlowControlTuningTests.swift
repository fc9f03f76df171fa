import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

/// Receive-window auto-tuning (issue 13, PROTOCOL §7.9): the window doubles while the application takes credit
/// faster than the path refills it, up to ``ProtocolLimits/maxReceiveWindowPerConnection``, and never for an
/// application that reads slowly.
@Suite("Flow-control auto-tuning")
struct FlowControlTuningTests {
    static let channel = ChannelID(16)

    /// `senders` nodes (1...senders) sending 64 KiB messages as fast as they may to node 0 over clean links with a
    /// `oneWay` delay and no bandwidth limit; node 0's application reads every message at once, or `readRate` bytes
    /// per second. Every transfer checker is on (each message delivered once, in order, byte-identical).
    static func fanIn(
        senders: Int, oneWay: Duration, messages: Int, readRate: Int? = nil, seed: UInt64
    ) throws -> SimulatedNetwork<EndpointNode> {
        let endpoints = try TestMesh.endpoints(count: senders + 1, seed: seed)
        let receiverKey = endpoints[0].staticKey
        let bulk = Array(repeating: 65_536, count: messages)
        var nodes = [EndpointNode(endpoint: endpoints[0])]
        nodes[0].readRate = readRate
        for index in 1...senders {
            nodes.append(
                EndpointNode(
                    endpoint: endpoints[index],
                    workloads: [Workload(peer: receiverKey, channel: Self.channel, sizes: bulk)]))
            nodes[0].expectedSizes[.init(sender: endpoints[index].staticKey, channel: Self.channel)] = bulk
        }
        var net = SimulatedNetwork(seed: seed, nodes: nodes, conditions: .clean(latency: oneWay))
        Invariants.install(on: &net)
        let address = net.address(of: 0)
        for index in 1...senders {
            try net.withNode(index) { try $0.connect(to: receiverKey, at: address, now: .zero) }
        }
        return net
    }

    /// Node 0's connection from node 1.
    static func receiving(_ net: SimulatedNetwork<EndpointNode>) throws -> Connection {
        let receiver = try #require(net.node(0)?.endpoint)
        let sender = try #require(net.node(1)?.endpoint.staticKey)
        return try #require(receiver.connectionID(for: sender).flatMap { receiver.connection($0) })
    }

    @Test("A fast reader on a 100 ms path grows the window from 2 MiB to 16 MiB in doublings, and no further")
    func growsToTheLimit() throws {
        var net = try Self.fanIn(senders: 1, oneWay: .milliseconds(50), messages: 10_000, seed: 13)
        try net.run(for: .milliseconds(200))
        #expect(try Self.receiving(net).receiveWindow == ProtocolLimits.maxReassemblyBytesPerConnection)
        try net.run(for: .seconds(4))
        let connection = try Self.receiving(net)
        #expect(connection.receiveWindow == ProtocolLimits.maxReceiveWindowPerConnection)
        #expect(connection.statistics.receiveWindowIncreases == 3, "2 -> 4 -> 8 -> 16 MiB")
        #expect(net.node(0)?.endpoint.receiveWindowGrowth == 14 * 1024 * 1024)
        // Without tuning a 100 ms path carries at most 2 MiB per round trip: 80 MiB in 4 s is the ceiling.
        let received = net.node(0)?.receivedBytes ?? 0
        #expect(received > 80 * 1024 * 1024, "received \(received) bytes")
    }

    @Test("An application reading 10 MB/s (a fifth of 2 MiB per 40 ms round trip) keeps the 2 MiB window")
    func slowReaderKeepsTheWindow() throws {
        var net = try Self.fanIn(
            senders: 1, oneWay: .milliseconds(20), messages: 1_000, readRate: 10_000_000, seed: 13)
        try net.run(for: .seconds(3))
        let connection = try Self.receiving(net)
        #expect(connection.receiveWindow == ProtocolLimits.maxReassemblyBytesPerConnection)
        #expect(connection.statistics.receiveWindowIncreases == 0)
        let received = net.node(0)?.receivedBytes ?? 0
        #expect(received > 25_000_000, "the reader was fed: \(received) bytes")
    }

    @Test("Closing a connection returns its grown window to the endpoint's 64 MiB growth budget")
    func growthIsReturned() throws {
        var net = try Self.fanIn(senders: 1, oneWay: .milliseconds(50), messages: 10_000, seed: 13)
        try net.run(for: .seconds(4))
        #expect(net.node(0)?.endpoint.receiveWindowGrowth == 14 * 1024 * 1024)
        let toSender = try Self.receiving(net).id
        let now = net.now
        try net.withNode(0) { $0.endpoint.close(toSender, code: .noError, reason: "done", now: now) }
        try net.run(for: .seconds(10))
        #expect(net.node(0)?.endpoint.connection(toSender) == nil)
        #expect(net.node(0)?.endpoint.receiveWindowGrowth == 0)
    }

    @Test("Six fast senders to one receiver: the windows grow by exactly the endpoint's 64 MiB, never more")
    func endpointGrowthBound() throws {
        let senders = 6
        var net = try Self.fanIn(senders: senders, oneWay: .milliseconds(50), messages: 4096, seed: 21)
        var largestGrowth = 0
        net.addChecker("receive-window growth within the endpoint's bound") { net in
            guard let growth = net.node(0)?.endpoint.receiveWindowGrowth else { return nil }
            largestGrowth = max(largestGrowth, growth)
            return growth <= ProtocolLimits.maxReceiveWindowGrowthPerEndpoint ? nil : "growth \(growth)"
        }
        try net.run(for: .seconds(4))
        let receiver = try #require(net.node(0)?.endpoint)
        let windows = receiver.connectionIDs.compactMap { receiver.connection($0)?.receiveWindow }
        #expect(windows.count == senders)
        let base = ProtocolLimits.maxReassemblyBytesPerConnection
        #expect(receiver.receiveWindowGrowth == windows.reduce(0) { $0 + $1 - base })
        #expect(receiver.receiveWindowGrowth == ProtocolLimits.maxReceiveWindowGrowthPerEndpoint)
        #expect(largestGrowth == ProtocolLimits.maxReceiveWindowGrowthPerEndpoint)
        #expect(windows.filter { $0 == ProtocolLimits.maxReceiveWindowPerConnection }.count >= 3, "\(windows)")
    }
}

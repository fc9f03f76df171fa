import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

@Suite("Two endpoints in the simulator")
struct FirstContactTests {
    @Test("Handshake, messages of mixed sizes and a bulk stream over a clean 15 ms link")
    func cleanLink() throws {
        let endpoints = try TestMesh.endpoints(count: 2, seed: 1)
        let a = endpoints[0].staticKey
        let b = endpoints[1].staticKey
        let chat = [1, 5, 1200, 70_000, 262_144, 0, 33]
        let bulk = Array(repeating: 65_536, count: 16)
        var nodeA = EndpointNode(
            endpoint: endpoints[0],
            workloads: [
                Workload(peer: b, channel: ChannelID(16), sizes: chat),
                Workload(peer: b, channel: ChannelID(200), sizes: bulk),
            ])
        var nodeB = EndpointNode(endpoint: endpoints[1])
        nodeB.expectedSizes = [
            .init(sender: a, channel: ChannelID(16)): chat, .init(sender: a, channel: ChannelID(200)): bulk,
        ]
        _ = nodeA
        var net = SimulatedNetwork(seed: 1, nodes: [nodeA, nodeB])
        let addressB = net.address(of: 1)
        try net.withNode(0) { try $0.connect(to: b, at: addressB, now: .zero) }
        let done = try net.run(until: { $0.node(1)!.receivedEverything }, timeout: .seconds(60))
        let receiver = net.node(1)!
        #expect(receiver.violations.isEmpty, "\(receiver.violations)")
        #expect(done, "received \(receiver.receivedMessages) messages, \(receiver.receivedBytes) bytes by \(net.now)")
        #expect(net.node(0)!.connectedEvents == 1)
        print("clean link: \(receiver.receivedBytes) bytes by \(net.now); \(net.statistics)")
        nodeA = net.node(0)!
    }
}

@Suite("Channel scheduling")
struct ChannelSchedulingTests {
    @Test("Bulk data keeps flowing while higher-priority messages saturate the link (control > messages > bulk)")
    func bulkIsNotStarved() throws {
        let endpoints = try TestMesh.endpoints(count: 2, seed: 3)
        let a = endpoints[0].staticKey
        let b = endpoints[1].staticKey
        let chat = Array(repeating: 4096, count: 2000)  // 8 MiB of messages
        let bulk = Array(repeating: 65_536, count: 8)  // 512 KiB of bulk
        var receiver = EndpointNode(endpoint: endpoints[1])
        receiver.expectedSizes = [
            .init(sender: a, channel: ChannelID(16)): chat, .init(sender: a, channel: ChannelID(200)): bulk,
        ]
        let sender = EndpointNode(
            endpoint: endpoints[0],
            workloads: [
                Workload(peer: b, channel: ChannelID(16), sizes: chat),
                Workload(peer: b, channel: ChannelID(200), sizes: bulk),
            ])
        var net = SimulatedNetwork(
            seed: 3, nodes: [sender, receiver],
            conditions: LinkConditions(latency: .milliseconds(5), bandwidth: 1_000_000, queueLimit: 60_000))
        let addressB = net.address(of: 1)
        try net.withNode(0) { try $0.connect(to: b, at: addressB, now: .zero) }
        let done = try net.run(until: { $0.node(1)!.receivedEverything }, timeout: .seconds(120))
        #expect(done)
        let states = net.node(1)!.received
        let chatDone = try #require(states[.init(sender: a, channel: ChannelID(16))]?.lastDeliveryAt)
        let bulkDone = try #require(states[.init(sender: a, channel: ChannelID(200))]?.lastDeliveryAt)
        // 8 MiB of chat at 1 MB/s takes over 8 s; bulk, given at least 1 packet in 8, finishes well before chat.
        #expect(bulkDone < chatDone, "bulk finished at \(bulkDone), chat at \(chatDone)")
        #expect(chatDone - .zero > .seconds(8))
    }
}

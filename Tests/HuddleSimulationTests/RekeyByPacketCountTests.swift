import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

@Suite("Rekeying by packet count")
struct RekeyByPacketCountTests {
    @Test(
        "A connection re-handshakes every N packets under continuous traffic, loses nothing, reuses no nonce (H11)",
        arguments: [1, 2, 3] as [UInt64])
    func rekeyEveryHundredPackets(seed: UInt64) throws {
        var configuration = ConnectionConfiguration()
        configuration.rekeyAfterPackets = 100
        // A 1 MB/s link spreads the 1.1 MB over a second, about 100 round trips: on an unlimited link a rate-based
        // controller sends everything within the first rekey's round trip, under the old key.
        var net = try Scenarios.pairForTests(
            seed: seed,
            link: LinkConditions(latency: .milliseconds(5), lossRate: 0.01, bandwidth: 1_000_000, queueLimit: 20_000),
            configuration: configuration)
        let a = net.node(0)!.endpoint.staticKey
        let b = net.node(1)!.endpoint.staticKey
        let addressB = net.address(of: 1)
        let sizes = (0..<400).map { 1 + Int(($0 * 7919) % 3000) }
        let bulk = Array(repeating: 65_536, count: 16)
        try net.withNode(1) {
            $0.expectedSizes = [
                .init(sender: a, channel: ChannelID(16)): sizes, .init(sender: a, channel: ChannelID(200)): bulk,
            ]
        }
        try net.withNode(0) {
            $0.workloads = [
                Workload(peer: b, channel: ChannelID(16), sizes: sizes),
                Workload(peer: b, channel: ChannelID(200), sizes: bulk),
            ]
            try $0.connect(to: b, at: addressB, now: .zero)
        }
        let done = try net.run(until: { $0.node(1)!.receivedEverything }, timeout: .seconds(120))
        #expect(done, "received \(net.node(1)!.receivedMessages) of \(sizes.count + bulk.count)")
        let connection = net.node(0)!.endpoint.connection(net.node(0)!.endpoint.connectionIDs[0])!
        // About 1,000 packets at 100 per key: many handshakes, each one started by the packet count, not the clock.
        #expect(connection.statistics.handshakes >= 5, "\(connection.statistics.handshakes) handshakes")
        #expect(net.now < .zero + .seconds(120))
        #expect(net.node(0)!.closures.isEmpty && net.node(1)!.closures.isEmpty)
    }
}

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

    /// TEST-MATRIX T10: a rekey must not stall the transfer. On a lossless path the sender's transport datagrams are
    /// paced a few milliseconds apart at most; a re-handshake takes one round trip (10 ms), during which the old keypair
    /// keeps sending. The longest silence between two of the sender's transport datagrams while the transfer runs
    /// stays under one round trip (measured: 4.4 ms with 14 rekeys).
    @Test("T10: rekeys every 100 packets during a transfer stall the sender for less than one round trip")
    func rekeyDoesNotStall() throws {
        var configuration = ConnectionConfiguration()
        configuration.rekeyAfterPackets = 100
        var net = try Scenarios.pairForTests(
            seed: 4, link: LinkConditions(latency: .milliseconds(5), bandwidth: 1_000_000, queueLimit: 20_000),
            configuration: configuration)
        let a = net.node(0)!.endpoint.staticKey
        let b = net.node(1)!.endpoint.staticKey
        let addressB = net.address(of: 1)
        let bulk = Array(repeating: 65_536, count: 32)
        try net.withNode(1) { $0.expectedSizes = [.init(sender: a, channel: ChannelID(200)): bulk] }
        try net.withNode(0) {
            $0.workloads = [Workload(peer: b, channel: ChannelID(200), sizes: bulk)]
            try $0.connect(to: b, at: addressB, now: .zero)
        }
        let times = TransmitTimes()
        net.observeTransmits(withTime: { source, transmit, time in
            if source == 0, transmit.datagram.first == PacketType.transportData.rawValue { times.instants.append(time) }
        })
        let done = try net.run(until: { $0.node(1)!.receivedEverything }, timeout: .seconds(60))
        #expect(done)
        let connection = net.node(0)!.endpoint.connection(net.node(0)!.endpoint.connectionIDs[0])!
        #expect(connection.statistics.handshakes >= 10, "\(connection.statistics.handshakes) handshakes")
        // From the 50th datagram on: the connection's start (its first packet goes out before the application's
        // data is queued, 13 ms ahead of the rest) is not a rekey; the first rekey comes at packet 100.
        let measured = times.instants.dropFirst(50)
        let gaps = zip(measured.dropFirst(), measured).map { $0 - $1 }
        let longest = gaps.max() ?? .zero
        #expect(longest < .milliseconds(10), "the sender fell silent for \(longest)")
        print("T10: \(connection.statistics.handshakes) handshakes, longest silence \(longest)")
    }
}

/// The sender's transmit times, collected from inside a transmit observer.
private final class TransmitTimes: @unchecked Sendable {
    var instants: [Instant] = []
}

import HuddleProtocol
import HuddleTestKit
import Testing

/// A node that sends what it is told to and records what arrives.
struct ProbeNode: SimulatedNode {
    var outbox: [SimulatedTransmit] = []
    var received: [(time: Instant, bytes: [UInt8])] = []
    var wakeAt: Instant?
    var wakeCount = 0

    mutating func handle(datagram: [UInt8], from source: NetworkAddress, now: Instant) {
        received.append((now, datagram))
    }

    mutating func handleTimeout(now: Instant) {
        wakeCount += 1
        wakeAt = nil
    }

    mutating func pollTransmit(now: Instant) -> SimulatedTransmit? {
        outbox.isEmpty ? nil : outbox.removeFirst()
    }

    var nextDeadline: Instant? { wakeAt }

    mutating func send(_ count: Int, size: Int = 100, to address: NetworkAddress) {
        for index in 0..<count {
            var bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: size)
            bytes[0] = UInt8(truncatingIfNeeded: index >> 8)
            outbox.append(SimulatedTransmit(destination: address, datagram: bytes))
        }
    }
}

@Suite("Simulated network")
struct SimulatedNetworkTests {
    func network(seed: UInt64 = 1, _ conditions: LinkConditions = .clean()) -> SimulatedNetwork<ProbeNode> {
        SimulatedNetwork(seed: seed, nodes: [ProbeNode(), ProbeNode(), ProbeNode()], conditions: conditions)
    }

    func blast(_ net: inout SimulatedNetwork<ProbeNode>, count: Int, size: Int = 100) throws {
        let target = net.address(of: 1)
        try net.withNode(0) { $0.send(count, size: size, to: target) }
        try net.run(for: .seconds(10))
    }

    @Test("A clean link delivers after exactly its latency, and timers fire at their deadline")
    func latencyAndTimers() throws {
        var net = network(.clean(latency: .milliseconds(15)))
        try blast(&net, count: 3)
        let arrivals = try #require(net.node(1)?.received.map(\.time))
        #expect(arrivals == Array(repeating: Instant.zero + .milliseconds(15), count: 3))
        let wake = net.now + .seconds(5)
        try net.withNode(2) { $0.wakeAt = wake }
        try net.run(for: .seconds(4))
        #expect(net.node(2)?.wakeCount == 0)
        try net.run(for: .seconds(1))
        #expect(net.node(2)?.wakeCount == 1)
    }

    @Test("The same seed replays the same run; another seed differs")
    func determinism() throws {
        let faulty = LinkConditions(jitter: .milliseconds(20), lossRate: 0.1, duplicateRate: 0.1, corruptRate: 0.1)
        var first = network(seed: 7, faulty)
        var second = network(seed: 7, faulty)
        var other = network(seed: 8, faulty)
        try blast(&first, count: 500)
        try blast(&second, count: 500)
        try blast(&other, count: 500)
        #expect(first.traceHash == second.traceHash)
        #expect(first.statistics == second.statistics)
        #expect(first.traceHash != other.traceHash)
    }

    @Test("Independent loss of 2 % drops about 2 % over 20,000 datagrams")
    func iidLoss() throws {
        var net = network(LinkConditions(lossRate: 0.02))
        try blast(&net, count: 20_000, size: 10)
        let rate = Double(net.statistics.lost) / 20_000
        #expect(rate > 0.015 && rate < 0.025, "loss rate \(rate)")
        #expect(net.statistics.delivered + net.statistics.lost == 20_000)
    }

    @Test("Correlated loss (20 %, correlation 0.75) keeps its rate and comes in bursts")
    func burstLoss() throws {
        var net = network(LinkConditions(burstLoss: .correlated(rate: 0.2, correlation: 0.75)))
        try blast(&net, count: 20_000, size: 10)
        let rate = Double(net.statistics.lost) / 20_000
        #expect(rate > 0.16 && rate < 0.24, "loss rate \(rate)")
        // Mean burst length: count runs of missing indices.
        let arrived = Set(net.node(1)!.received.map { Int($0.bytes[0]) << 8 | Int($0.bytes[1]) })
        var bursts = 0
        var missingRun = false
        for index in 0..<20_000 {
            let missing = !arrived.contains(index & 0xFFFF)
            if missing && !missingRun { bursts += 1 }
            missingRun = missing
        }
        let meanBurst = Double(net.statistics.lost) / Double(max(bursts, 1))
        #expect(meanBurst > 2.5, "mean burst \(meanBurst) datagrams")
    }

    @Test("Datagrams over the MTU are dropped, the rest delivered")
    func mtu() throws {
        var net = network(LinkConditions(mtu: 1200))
        let target = net.address(of: 1)
        try net.withNode(0) {
            $0.send(1, size: 1200, to: target)
            $0.send(1, size: 1201, to: target)
        }
        try net.run(for: .seconds(1))
        #expect(net.statistics.droppedOverMTU == 1)
        #expect(net.node(1)?.received.map(\.bytes.count) == [1200])
    }

    @Test("Duplication and corruption happen at their rates and are counted")
    func duplicationAndCorruption() throws {
        var net = network(LinkConditions(duplicateRate: 0.5, corruptRate: 0.3))
        try blast(&net, count: 4000, size: 64)
        let duplicates = Double(net.statistics.duplicated) / 4000
        let corrupted = Double(net.statistics.corrupted) / 4000
        #expect(duplicates > 0.45 && duplicates < 0.55)
        #expect(corrupted > 0.26 && corrupted < 0.34)
        #expect(net.statistics.delivered == 4000 + net.statistics.duplicated)
        let damaged = net.node(1)!.received.filter { $0.bytes.count != 64 || Set($0.bytes.dropFirst(2)).count > 1 }
        #expect(damaged.count > 0)
    }

    @Test("A bandwidth limit serialises datagrams and a full queue drops the tail")
    func bandwidthAndQueue() throws {
        // 1 MB/s: a 1000-byte datagram takes 1 ms. A 10 kB queue holds 10 of the 50 sent at once.
        var net = network(LinkConditions(latency: .milliseconds(10), bandwidth: 1_000_000, queueLimit: 10_000))
        try blast(&net, count: 50, size: 1000)
        let received = net.node(1)!.received
        #expect(received.count == 10)
        #expect(net.statistics.droppedQueueFull == 40)
        #expect(received.last!.time == Instant.zero + .milliseconds(20))
    }

    @Test("Partitions drop, healing restores; pause delays; crash loses state and datagrams")
    func partitionsPauseCrash() throws {
        var net = network()
        net.partition([[0], [1, 2]])
        try blast(&net, count: 5)
        #expect(net.statistics.droppedLinkDown == 5)
        net.heal()
        try blast(&net, count: 5)
        #expect(net.node(1)?.received.count == 5)

        net.pause(1, for: .seconds(3))
        let pausedAt = net.now
        try blast(&net, count: 2)
        #expect(net.node(1)?.received.count == 7)
        #expect(net.node(1)!.received.last!.time >= pausedAt + .seconds(3))

        net.crash(1)
        try blast(&net, count: 4)
        #expect(net.statistics.droppedUnroutable == 4)
        try net.restart(1, with: ProbeNode())
        try blast(&net, count: 1)
        #expect(net.node(1)?.received.count == 1)
    }

    @Test("An asymmetric partition blocks one direction only")
    func asymmetricPartition() throws {
        var net = network()
        net.setLink(from: 0, to: 1, up: false)
        try blast(&net, count: 3)
        let back = net.address(of: 0)
        try net.withNode(1) { $0.send(3, to: back) }
        try net.run(for: .seconds(1))
        #expect(net.node(1)?.received.count == 0)
        #expect(net.node(0)?.received.count == 3)
    }

    @Test("A broken invariant stops the run with the seed and options")
    func checkerFailure() throws {
        var net = network(seed: 99)
        net.replayCommand = "huddle-sim --scenario probe --seeds 99-99"
        net.addChecker("at most 2 deliveries") {
            $0.statistics.delivered <= 2 ? nil : "delivered \($0.statistics.delivered)"
        }
        let target = net.address(of: 1)
        try net.withNode(0) { $0.send(5, to: target) }
        do {
            try net.run(for: .seconds(1))
            Issue.record("the checker did not fire")
        } catch let failure as SimulationFailure {
            #expect(failure.seed == 99)
            #expect(failure.description.contains("seed: 99"))
            #expect(failure.description.contains("replay: huddle-sim"))
            #expect(failure.description.contains("option: links:"))
        }
    }

    @Test("Ten simulated minutes of timers run in well under a second")
    func speed() throws {
        var net = network()
        let clock = ContinuousClock()
        let start = clock.now
        for second in 0..<600 {
            try net.withNode(0) { $0.wakeAt = Instant.zero + .seconds(second + 1) }
            try net.run(until: Instant.zero + .seconds(second + 1))
        }
        #expect(net.node(0)?.wakeCount == 600)
        #expect(clock.now - start < .seconds(1))
    }
}

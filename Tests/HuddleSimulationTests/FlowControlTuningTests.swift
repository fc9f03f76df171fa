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
    static let message = [UInt8](repeating: 0x5A, count: 64 * 1024)

    /// Two connected endpoints on a path with a fixed one-way delay and no bandwidth limit; `a` keeps its channel
    /// queue full, `b`'s application takes at most `readBytesPerStep` message bytes per `step` (all if `nil`).
    struct Path {
        var a: Endpoint
        var b: Endpoint
        var toB: ConnectionID { a.connectionID(for: b.staticKey)! }
        var toA: ConnectionID { b.connectionID(for: a.staticKey)! }
        var now = Instant.zero
        var inFlight: [(arrival: Instant, toB: Bool, datagram: [UInt8])] = []
        /// The first entry of `inFlight` not yet delivered.
        var head = 0
        /// Bytes the slow reader may still take.
        var readAllowance = 0
        var received = 0
        let oneWayDelay: Duration

        static func address(_ index: UInt8) -> NetworkAddress { NetworkAddress(ipv4: 10, 0, 0, index, port: 4000) }

        init(oneWay: Duration) throws {
            let endpoints = try TestMesh.endpoints(count: 2, seed: 13)
            (a, b) = (endpoints[0], endpoints[1])
            try a.connect(to: b.staticKey, at: Self.address(2), now: .zero)
            oneWayDelay = oneWay
            run(for: .milliseconds(200), sending: false)
            #expect(a.connectionID(for: b.staticKey) != nil && b.connectionID(for: a.staticKey) != nil)
        }

        var window: Int { b.connection(toA)!.receiveWindow }
        var increases: Int { b.connection(toA)!.statistics.receiveWindowIncreases }

        /// Runs for `duration` of simulated time, stepping to each arrival and timer (the pacer's included) and at
        /// least every 10 ms. `b`'s application takes every message at once, or at most `readRate` bytes per second.
        mutating func run(for duration: Duration, readRate: Int? = nil, sending: Bool = true) {
            let end = now + duration
            while now < end {
                if sending, let toB = a.connectionID(for: b.staticKey) {
                    while (try? a.send(FlowControlTuningTests.message, on: FlowControlTuningTests.channel, to: toB))
                        != nil
                    {}
                }
                while let (_, datagram) = a.pollTransmit(now: now) {
                    inFlight.append((now + oneWayDelay, true, datagram))
                }
                while let (_, datagram) = b.pollTransmit(now: now) {
                    inFlight.append((now + oneWayDelay, false, datagram))
                }
                var next = min(now + .milliseconds(10), end)
                for candidate in [a.nextDeadline, b.nextDeadline, head < inFlight.count ? inFlight[head].arrival : nil]
                {
                    if let candidate, candidate > now, candidate < next { next = candidate }
                }
                if let readRate {
                    // A reader working at a rate does not bank the time it waited for data: at most 10 ms of it.
                    readAllowance = min(
                        readAllowance + Int(Double(readRate) * Double((next - now).nanoseconds) / 1e9),
                        readRate / 100)
                }
                now = next
                // One-way delays are fixed, so arrivals come in send order.
                while head < inFlight.count, inFlight[head].arrival <= now {
                    let packet = inFlight[head]
                    head += 1
                    if packet.toB {
                        b.handle(datagram: packet.datagram, from: Self.address(1), now: now)
                    } else {
                        a.handle(datagram: packet.datagram, from: Self.address(2), now: now)
                    }
                }
                if head > 4096 {
                    inFlight.removeFirst(head)
                    head = 0
                }
                a.handleTimeout(now: now)
                b.handleTimeout(now: now)
                while a.pollEvent() != nil {}
                while readRate == nil || readAllowance > 0, let event = b.pollEvent() {
                    if case .message(_, _, let bytes) = event {
                        received += bytes.count
                        readAllowance -= bytes.count
                    }
                }
            }
        }
    }

    @Test("A fast reader on a 100 ms path grows the window from 2 MiB to 16 MiB in doublings, and no further")
    func growsToTheLimit() throws {
        var path = try Path(oneWay: .milliseconds(50))
        #expect(path.window == ProtocolLimits.maxReassemblyBytesPerConnection)
        path.run(for: .seconds(4))
        #expect(path.window == ProtocolLimits.maxReceiveWindowPerConnection)
        #expect(path.increases == 3, "2 -> 4 -> 8 -> 16 MiB")
        #expect(path.b.receiveWindowGrowth == 14 * 1024 * 1024)
        // Without tuning a 100 ms path carries at most 2 MiB per round trip: 80 MiB in 4 s is the ceiling.
        #expect(path.received > 80 * 1024 * 1024, "received \(path.received) bytes")
    }

    @Test("An application reading 10 MB/s (a fifth of 2 MiB per 40 ms round trip) keeps the 2 MiB window")
    func slowReaderKeepsTheWindow() throws {
        var path = try Path(oneWay: .milliseconds(20))
        path.run(for: .seconds(3), readRate: 10_000_000)
        #expect(path.window == ProtocolLimits.maxReassemblyBytesPerConnection)
        #expect(path.increases == 0)
        #expect(path.received > 25_000_000, "the reader was fed: \(path.received) bytes")
    }

    @Test("Closing a connection returns its grown window to the endpoint's 64 MiB growth budget")
    func growthIsReturned() throws {
        var path = try Path(oneWay: .milliseconds(50))
        path.run(for: .seconds(4))
        #expect(path.b.receiveWindowGrowth == 14 * 1024 * 1024)
        let toA = path.toA
        path.b.close(toA, code: .noError, reason: "done", now: path.now)
        path.run(for: .seconds(10), sending: false)
        #expect(path.b.connection(toA) == nil)
        #expect(path.b.receiveWindowGrowth == 0)
    }

    @Test("Six fast senders to one receiver: the windows grow by exactly the endpoint's 64 MiB, never more")
    func endpointGrowthBound() throws {
        let senders = 6
        let endpoints = try TestMesh.endpoints(count: senders + 1, seed: 21)
        let receiverKey = endpoints[0].staticKey
        let bulk = Array(repeating: 65_536, count: 4096)
        var nodes = [EndpointNode(endpoint: endpoints[0])]
        for index in 1...senders {
            nodes.append(
                EndpointNode(
                    endpoint: endpoints[index],
                    workloads: [Workload(peer: receiverKey, channel: Self.channel, sizes: bulk)]))
            nodes[0].expectedSizes[.init(sender: endpoints[index].staticKey, channel: Self.channel)] = bulk
        }
        var net = SimulatedNetwork(seed: 21, nodes: nodes, conditions: .clean(latency: .milliseconds(50)))
        Invariants.install(on: &net)
        let address = net.address(of: 0)
        for index in 1...senders {
            try net.withNode(index) { try $0.connect(to: receiverKey, at: address, now: .zero) }
        }
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

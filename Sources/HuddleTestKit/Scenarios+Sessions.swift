import HuddleCrypto
@_spi(Testing) import HuddleProtocol
import HuddleWire

extension Scenarios {
    /// A two-node network of ``EndpointNode``s with the standard invariants.
    static func pair(
        seed: UInt64, link: LinkConditions = .clean(),
        configuration: ConnectionConfiguration = ConnectionConfiguration()
    ) throws -> SimulatedNetwork<EndpointNode> {
        let endpoints = try TestMesh.endpoints(count: 2, seed: seed, configuration: configuration)
        var net = SimulatedNetwork(
            seed: seed, nodes: endpoints.map { EndpointNode(endpoint: $0) }, conditions: link)
        Invariants.install(on: &net)
        return net
    }

    /// ``pair(seed:link:configuration:)`` for tests outside the kit.
    public static func pairForTests(
        seed: UInt64, link: LinkConditions = .clean(),
        configuration: ConnectionConfiguration = ConnectionConfiguration()
    ) throws -> SimulatedNetwork<EndpointNode> {
        try pair(seed: seed, link: link, configuration: configuration)
    }

    static func staticKey(_ net: SimulatedNetwork<EndpointNode>, _ index: Int) -> X25519PublicKey {
        net.node(index)!.endpoint.staticKey
    }

    /// Handshake behaviour: timeouts, simultaneous open, rekeying under continuous traffic.
    static let sessionScenarios: [Scenario] = [
        Scenario(
            name: "handshake-timeout",
            summary:
                "every response lost: retries after 250 ms doubling to 5 s (+ jitter), typed timeout at 90 s, 21-23 "
                + "initiations [H8]"
        ) { seed in
            var net = try pair(seed: seed)
            net.setLink(from: 1, to: 0, up: false)
            let b = staticKey(net, 1)
            let addressB = net.address(of: 1)
            try net.withNode(0) { try $0.connect(to: b, at: addressB, now: .zero) }
            try net.run(for: .seconds(100))
            let node = net.node(0)!
            guard let closure = node.closures.first else { throw net.failure("no closure after 100 s") }
            guard closure.reason == .handshakeTimeout else {
                throw net.failure("closed with \(String(describing: closure.reason)), expected handshakeTimeout")
            }
            let sent = node.endpoint.statistics.initiationsSent
            // 0.25 + 0.5 + 1 + 2 + 4 s, then every 5 s (+ up to 333 ms) until 90 s: 21 to 22, one more for margin.
            guard (21...23).contains(sent) else { throw net.failure("\(sent) initiations sent, expected 21-23") }
            return ScenarioOutcome(simulatedTime: net.now - .zero, messagesDelivered: 0, bytesDelivered: 0)
        },
        Scenario(
            name: "simultaneous-open",
            summary: "both sides initiate at once: one session, data flows, no handshake storm [H9]"
        ) { seed in
            var net = try pair(seed: seed, link: LinkConditions(latency: .milliseconds(20)))
            let a = staticKey(net, 0)
            let b = staticKey(net, 1)
            let addressA = net.address(of: 0)
            let addressB = net.address(of: 1)
            let sizes = [100, 2000, 70_000]
            try net.withNode(0) {
                $0.workloads = [Workload(peer: b, channel: ChannelID(16), sizes: sizes)]
                $0.expectedSizes = [.init(sender: b, channel: ChannelID(16)): sizes]
                try $0.connect(to: b, at: addressB, now: .zero)
            }
            try net.withNode(1) {
                $0.workloads = [Workload(peer: a, channel: ChannelID(16), sizes: sizes)]
                $0.expectedSizes = [.init(sender: a, channel: ChannelID(16)): sizes]
                try $0.connect(to: a, at: addressA, now: .zero)
            }
            let done = try net.run(
                until: { $0.node(0)!.receivedEverything && $0.node(1)!.receivedEverything }, timeout: .seconds(30))
            guard done else { throw net.failure("messages did not flow after simultaneous open") }
            for index in 0..<2 {
                let sent = net.node(index)!.endpoint.statistics.initiationsSent
                guard sent <= 2 else { throw net.failure("node \(index) sent \(sent) initiations (storm)") }
            }
            return ScenarioOutcome(
                simulatedTime: net.now - .zero, messagesDelivered: 6, bytesDelivered: 2 * sizes.reduce(0, +))
        },
        Scenario(
            name: "rekey",
            summary:
                "400 s of continuous traffic (messages + 10 MiB bulk) across 120 s / 180 s key lifetimes: "
                + "re-handshakes, zero loss [H10, H11]"
        ) { seed in
            var random = SimulationRandom(seed: seed)
            var net = try pair(
                seed: seed, link: LinkConditions(latency: .milliseconds(10), lossRate: random.chance(0.5) ? 0.01 : 0))
            let a = staticKey(net, 0)
            let b = staticKey(net, 1)
            let addressB = net.address(of: 1)
            // One message every 100 ms and one 64 KiB bulk message every 2.5 s for 400 s, fed in by a schedule so
            // traffic is continuous across rekeys; mixed sizes up to 256 KiB at the start.
            let chat = (0..<4000).map { _ in random.integer(in: 1...3000) }
            let mixed = TransferScenario.mixedSizes(using: &random)
            let bulk = TransferScenario.bulkSizes(bytes: 10 * 1024 * 1024)
            try net.withNode(1) {
                $0.expectedSizes = [
                    .init(sender: a, channel: ChannelID(16)): chat, .init(sender: a, channel: ChannelID(17)): mixed,
                    .init(sender: a, channel: ChannelID(200)): bulk,
                ]
            }
            try net.withNode(0) {
                $0.workloads = [
                    Workload(peer: b, channel: ChannelID(16), sizes: []),
                    Workload(peer: b, channel: ChannelID(17), sizes: mixed),
                    Workload(peer: b, channel: ChannelID(200), sizes: []),
                ]
                try $0.connect(to: b, at: addressB, now: .zero)
            }
            for step in 0..<chat.count {
                net.schedule(at: .zero + .milliseconds(Int64(step) * 100)) { net in
                    _ = try? net.withNode(0) { node in
                        node.workloads[0].sizes.append(chat[step])
                        if step % 25 == 0 { node.workloads[2].sizes.append(bulk[step / 25]) }
                    }
                }
            }
            let done = try net.run(until: { $0.node(1)!.receivedEverything }, timeout: .seconds(460))
            guard done else { throw net.failure("received \(net.node(1)!.receivedMessages) messages") }
            let handshakes = net.node(0)!.endpoint.connection(net.node(0)!.endpoint.connectionIDs[0])!.statistics
                .handshakes
            guard handshakes >= 4 else { throw net.failure("only \(handshakes) handshakes in 400 s (no rekeying)") }
            guard net.node(0)!.closures.isEmpty, net.node(1)!.closures.isEmpty else {
                throw net.failure("a connection closed during rekeying")
            }
            return ScenarioOutcome(
                simulatedTime: net.now - .zero, messagesDelivered: net.node(1)!.receivedMessages,
                bytesDelivered: net.node(1)!.receivedBytes)
        },
    ]
}

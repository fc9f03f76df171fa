import HuddleCrypto
@_spi(Testing) import HuddleProtocol
import HuddleWire

extension Scenarios {
    /// Hostile input: forged, damaged and replayed packets from the network, and an authenticated peer that
    /// breaks the protocol.
    static let adversaryScenarios: [Scenario] = [
        Scenario(
            name: "forgery",
            summary: "bit-flipped, truncated, extended, replayed, foreign-index and garbage packets: dropped, counted, "
                + "nothing delivered [F1-F3, R2, R4, R5, H4]"
        ) { seed in
            var random = SimulationRandom(seed: seed ^ 0xBAD)
            var net = try pair(seed: seed, link: LinkConditions(latency: .milliseconds(10)))
            let a = staticKey(net, 0)
            let b = staticKey(net, 1)
            let addressA = net.address(of: 0)
            let addressB = net.address(of: 1)
            let sizes = TransferScenario.mixedSizes(using: &random)
            let bulk = TransferScenario.bulkSizes(bytes: 10 * 1024 * 1024)
            try net.withNode(1) {
                $0.expectedSizes = [
                    .init(sender: a, channel: ChannelID(16)): sizes, .init(sender: a, channel: ChannelID(200)): bulk,
                ]
            }
            let captured = CapturedDatagrams()
            net.observeTransmits { source, transmit in if source == 0 { captured.keep(transmit.datagram) } }
            try net.withNode(0) {
                $0.workloads = [
                    Workload(peer: b, channel: ChannelID(16), sizes: sizes),
                    Workload(peer: b, channel: ChannelID(200), sizes: bulk),
                ]
                try $0.connect(to: b, at: addressB, now: .zero)
            }
            // Every 5 ms for 10 s, inject a damaged or replayed copy of something node 0 sent, or plain garbage.
            let injections = 2000
            for step in 1...injections {
                net.schedule(at: .zero + .milliseconds(Int64(step) * 5)) { net in
                    guard let original = captured.random(using: &net.random) else { return }
                    var forged = original
                    switch net.random.integer(in: 0...6) {
                    case 0:
                        let bit = net.random.integer(in: 0...(forged.count * 8 - 1))
                        forged[bit / 8] ^= UInt8(1) << UInt8(bit % 8)
                    case 1: forged.removeLast(min(forged.count - 1, net.random.integer(in: 1...16)))
                    case 2: forged += net.random.bytes(count: net.random.integer(in: 1...16))
                    case 3: break  // exact replay
                    case 4:
                        if forged.count > 8 { forged.replaceSubrange(4..<8, with: net.random.bytes(count: 4)) }
                    case 5: forged = net.random.bytes(count: net.random.integer(in: 1...1472))
                    default:
                        // A transport packet with a plausible header and a forged tag, packet number far ahead (R4).
                        if forged.count >= 32 {
                            forged.replaceSubrange(8..<16, with: [0, 0, 0, 0, 0, 0, 0, 0x20])
                            forged.replaceSubrange((forged.count - 16)..., with: net.random.bytes(count: 16))
                        }
                    }
                    net.inject(forged, to: 1, from: addressA, after: .milliseconds(1))
                }
            }
            let done = try net.run(until: { $0.node(1)!.receivedEverything }, timeout: .seconds(60))
            guard done else { throw net.failure("received \(net.node(1)!.receivedMessages) of \(sizes.count)") }
            try net.run(until: max(net.now, .zero + .seconds(11)))
            let statistics = net.node(1)!.endpoint.statistics
            let dropped =
                statistics.transportRejected + statistics.malformedDropped + statistics.unknownIndexDropped
                + statistics.mac1Failures + statistics.staleTimestampDropped + statistics.responsesDropped
            // A few injections land before anything was captured, or are exact copies of a handshake message the
            // endpoint answers idempotently; everything else must be counted.
            guard dropped >= injections * 9 / 10 else {
                throw net.failure("only \(dropped) of \(injections) injected datagrams were counted")
            }
            guard net.node(0)!.closures.isEmpty, net.node(1)!.closures.isEmpty else {
                throw net.failure("forged input closed a connection")
            }
            guard net.node(1)!.receivedMessages == sizes.count + bulk.count else {
                throw net.failure("forged input was delivered: \(net.node(1)!.receivedMessages) messages")
            }
            return ScenarioOutcome(
                simulatedTime: net.now - .zero, messagesDelivered: net.node(1)!.receivedMessages,
                bytesDelivered: net.node(1)!.receivedBytes)
        },
        Scenario(
            name: "protocol-violation",
            summary: "mid-transfer, an authenticated peer ACKs a never-sent packet, sends out-of-bounds or oversized "
                + "fragments, 33 ACK ranges or an unknown frame: CLOSE(protocolViolation) to that peer only, every "
                + "unconfirmed message reported to its sender, a third node's transfer unaffected [F4-F6, D9]"
        ) { seed in
            var random = SimulationRandom(seed: seed ^ 0x7107)
            let endpoints = try TestMesh.endpoints(count: 3, seed: seed)
            let a = endpoints[0].staticKey
            let b = endpoints[1].staticKey
            let c = endpoints[2].staticKey
            let mixedA = TransferScenario.mixedSizes(using: &random)
            let mixedC = TransferScenario.mixedSizes(using: &random)
            let bulk = TransferScenario.bulkSizes(bytes: 10 * 1024 * 1024)
            var nodes = endpoints.map { EndpointNode(endpoint: $0) }
            for (index, mixed) in [(0, mixedA), (2, mixedC)] {
                nodes[index].workloads = [
                    Workload(peer: b, channel: ChannelID(16), sizes: mixed),
                    Workload(peer: b, channel: ChannelID(200), sizes: bulk),
                ]
            }
            nodes[1].expectedSizes = [
                .init(sender: a, channel: ChannelID(16)): mixedA, .init(sender: a, channel: ChannelID(200)): bulk,
                .init(sender: c, channel: ChannelID(16)): mixedC, .init(sender: c, channel: ChannelID(200)): bulk,
            ]
            var net = SimulatedNetwork(seed: seed, nodes: nodes, conditions: LinkConditions(latency: .milliseconds(10)))
            Invariants.install(on: &net)
            let addressB = net.address(of: 1)
            try net.withNode(0) { try $0.connect(to: b, at: addressB, now: .zero) }
            try net.withNode(2) { try $0.connect(to: b, at: addressB, now: .zero) }

            // The violation comes after 1-5 MiB of node 0's transfer has arrived.
            let trigger = random.integer(in: 1...5) << 20
            let fromA = EndpointNode.ExpectationKey(sender: a, channel: ChannelID(200))
            guard try net.run(until: { ($0.node(1)!.received[fromA]?.bytes ?? 0) >= trigger }, timeout: .seconds(60))
            else { throw net.failure("node 0's transfer did not reach \(trigger) bytes") }
            let variant = Int(seed % 5)
            let payload = Self.violation(variant)
            net.options.append("violation \(variant) after \(trigger) bytes: \(payload.prefix(24).map { String($0) })")
            let injected = try net.withNode(0) { node in
                node.endpoint.queueRawPayload(payload, to: node.endpoint.connectionID(for: b)!)
            }
            guard injected else { throw net.failure("could not inject the payload") }
            let settled = try net.run(
                until: { net in
                    let receiver = net.node(1)!
                    let fromC = receiver.expectedSizes.filter { $0.key.sender == c }
                    return !net.node(0)!.closures.isEmpty
                        && fromC.allSatisfy { key, sizes in receiver.received[key]?.count == sizes.count }
                }, timeout: .seconds(120))
            guard settled else { throw net.failure("not settled: \(net.node(1)!.diagnostics)") }

            let receiver = net.node(1)!
            guard receiver.closures.count == 1, let closure = receiver.closures.first, closure.peer == a,
                case .protocolViolation = closure.reason
            else {
                throw net.failure(
                    "receiver closures: \(receiver.closures.map { "\($0.peer == a ? "a" : "c"): \($0.reason as Any)" }), "
                        + "expected one protocolViolation with node 0")
            }
            guard let peerSide = net.node(0)!.closures.first,
                case .closedByPeer(let code, _) = peerSide.reason, code == .protocolViolation
            else {
                throw net.failure(
                    "sender did not get CLOSE(protocolViolation): \(net.node(0)!.closures.map { "\($0.reason as Any)" })"
                )
            }
            guard net.node(2)!.closures.isEmpty else { throw net.failure("the bystander's connection closed") }
            // Nothing accepted is lost silently: every message node 0 handed over either arrived or is reported.
            if let lost = net.node(0)!.unaccounted(by: receiver, undelivered: peerSide.undelivered) {
                throw net.failure(lost)
            }
            return ScenarioOutcome(
                simulatedTime: net.now - .zero, messagesDelivered: receiver.receivedMessages,
                bytesDelivered: receiver.receivedBytes)
        },
    ]

    /// Authenticated payloads that break the protocol, built by hand because the encoder refuses to.
    static func violation(_ variant: Int) -> [UInt8] {
        switch variant {
        case 0:
            // ACK: largest 1,000,000 (never sent), delay 0, no extra ranges, first range 0.
            return [0x02, 0x80, 0x0F, 0x42, 0x40, 0x00, 0x00, 0x00]
        case 1:
            // MESSAGE: channel 16, seq 0, offset 10, total 12, length 5: offset + length > total.
            return [0x03, 0x10, 0x00, 0x0A, 0x0C, 0x05, 1, 2, 3, 4, 5]
        case 2:
            // MESSAGE: total length 262,145 (over 256 KiB), offset 0, length 1.
            return [0x03, 0x10, 0x00, 0x00, 0x80, 0x04, 0x00, 0x01, 0x01, 0xAA]
        case 3:
            // ACK with 33 ranges (range count 32 after the first).
            var bytes: [UInt8] = [0x02, 0x40, 0xC8, 0x00, 0x20, 0x00]
            for _ in 0..<32 { bytes += [0x00, 0x00] }
            return bytes
        default:
            // A frame type from the reserved journal range, unknown to this version.
            return [0x1F, 0x00]
        }
    }
}

/// Datagrams captured from the wire for an attacker to replay and damage.
final class CapturedDatagrams: @unchecked Sendable {
    private var datagrams: [[UInt8]] = []

    func keep(_ datagram: [UInt8]) {
        if datagrams.count < 2000 { datagrams.append(datagram) }
    }

    func random(using generator: inout SimulationRandom) -> [UInt8]? {
        guard !datagrams.isEmpty else { return nil }
        return datagrams[generator.integer(in: 0...(datagrams.count - 1))]
    }
}

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
            let sizes = (0..<60).map { _ in random.integer(in: 1...20_000) }
            try net.withNode(1) { $0.expectedSizes = [.init(sender: a, channel: ChannelID(16)): sizes] }
            let captured = CapturedDatagrams()
            net.observeTransmits { source, transmit in if source == 0 { captured.keep(transmit.datagram) } }
            try net.withNode(0) {
                $0.workloads = [Workload(peer: b, channel: ChannelID(16), sizes: sizes)]
                try $0.connect(to: b, at: addressB, now: .zero)
            }
            // Every 5 ms for 3 s, inject a damaged or replayed copy of something node 0 sent, or plain garbage.
            for step in 1...600 {
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
            try net.run(for: .seconds(4))
            let statistics = net.node(1)!.endpoint.statistics
            let dropped =
                statistics.transportRejected + statistics.malformedDropped + statistics.unknownIndexDropped
                + statistics.mac1Failures + statistics.staleTimestampDropped + statistics.responsesDropped
            guard dropped >= 500 else { throw net.failure("only \(dropped) of 600 injected datagrams were counted") }
            guard net.node(0)!.closures.isEmpty, net.node(1)!.closures.isEmpty else {
                throw net.failure("forged input closed a connection")
            }
            guard net.node(1)!.receivedMessages == sizes.count else {
                throw net.failure("forged input was delivered: \(net.node(1)!.receivedMessages) messages")
            }
            return ScenarioOutcome(
                simulatedTime: net.now - .zero, messagesDelivered: sizes.count, bytesDelivered: sizes.reduce(0, +))
        },
        Scenario(
            name: "protocol-violation",
            summary: "an authenticated peer ACKs a never-sent packet, sends out-of-bounds or oversized fragments, "
                + "33 ACK ranges or an unknown frame: CLOSE(protocolViolation) to that peer only [F4-F6, D9]"
        ) { seed in
            var net = try pair(seed: seed, link: LinkConditions(latency: .milliseconds(10)))
            let b = staticKey(net, 1)
            let addressB = net.address(of: 1)
            try net.withNode(0) { try $0.connect(to: b, at: addressB, now: .zero) }
            guard try net.run(until: { $0.node(1)!.connectedEvents > 0 }, timeout: .seconds(5)) else {
                throw net.failure("no connection")
            }
            let variant = Int(seed % 5)
            let payload = Self.violation(variant)
            net.options.append("violation \(variant): \(payload.prefix(24).map { String($0) }.joined(separator: " "))")
            let injected = try net.withNode(0) { node in
                node.endpoint.queueRawPayload(payload, to: node.endpoint.connectionIDs[0])
            }
            guard injected else { throw net.failure("could not inject the payload") }
            try net.run(for: .seconds(5))
            guard let closure = net.node(1)!.closures.first,
                case .protocolViolation = closure.reason
            else {
                throw net.failure(
                    "receiver did not close with a protocol violation: \(net.node(1)!.closures.map { "\($0.reason as Any)" })"
                )
            }
            guard let peerSide = net.node(0)!.closures.first,
                case .closedByPeer(let code, _) = peerSide.reason, code == .protocolViolation
            else {
                throw net.failure(
                    "sender did not get CLOSE(protocolViolation): \(net.node(0)!.closures.map { "\($0.reason as Any)" })"
                )
            }
            return ScenarioOutcome(simulatedTime: net.now - .zero, messagesDelivered: 0, bytesDelivered: 0)
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

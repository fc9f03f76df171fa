import HuddleCrypto
import HuddleProtocol
import HuddleWire

extension Scenarios {
    /// `rtt-wan-P`: what a lost message costs an interactive exchange on a wide-area path (issue 37). 40 ms round trip,
    /// P % random loss each way; 2,000 round trips of 64-byte reliable messages, one at a time (the next goes when
    /// the previous echo is back). Reports p50 / p99 / p99.9 in milliseconds and in round trips, and the bytes both
    /// sides sent per round trip. `rtt-wan-P-delayed` runs the same without IMMEDIATE_ACK
    /// (``ConnectionConfiguration/requestsImmediateAck`` off), as before it; `rtt-wan-P-duplicated` with the channel
    /// duplicated (``ConnectionConfiguration/duplicatedChannels``): each message sent twice.
    static let roundTrips: [Scenario] = [1, 2, 5].flatMap { percent -> [Scenario] in
        let variants: [(suffix: String, immediate: Bool, duplicated: Bool)] = [
            ("", true, false), ("-delayed", false, false), ("-duplicated", true, true),
        ]
        return variants.map { variant -> Scenario in
            var summary = "40 ms round trip, \(percent) % loss each way: 2,000 round trips of 64 B one at a time, "
            summary += "p50/p99/p99.9"
            if !variant.immediate { summary += ", without IMMEDIATE_ACK" }
            if variant.duplicated { summary += ", each message sent twice" }
            return Scenario(name: "rtt-wan-\(percent)" + variant.suffix, summary: summary + " [issue 37]") { seed in
                try roundTrips(
                    seed: seed, lossRate: Double(percent) / 100, immediate: variant.immediate,
                    duplicated: variant.duplicated)
            }
        }
    }

    static func roundTrips(seed: UInt64, lossRate: Double, immediate: Bool, duplicated: Bool) throws -> ScenarioOutcome
    {
        let channel = ChannelID(16)
        var configuration = ConnectionConfiguration()
        configuration.requestsImmediateAck = immediate
        if duplicated { configuration.duplicatedChannels = [channel] }
        let oneWay = Duration.milliseconds(20)
        var net = try pair(
            seed: seed, link: LinkConditions(latency: oneWay, lossRate: lossRate), configuration: configuration)
        let a = staticKey(net, 0)
        let b = staticKey(net, 1)
        let addressB = net.address(of: 1)
        let count = 2_000
        let sizes = Array(repeating: 64, count: count)
        try net.withNode(1) {
            $0.echoes = true
            $0.expectedSizes = [.init(sender: a, channel: channel): sizes]
        }
        try net.withNode(0) {
            $0.recordsDeliveryTimes = true
            $0.expectedSizes = [.init(sender: b, channel: channel): sizes]
            $0.workloads = [Workload(peer: b, channel: channel, sizes: [])]
            try $0.connect(to: b, at: addressB, now: .zero)
        }
        guard try net.run(until: { $0.node(0)!.connectedEvents > 0 }, timeout: .seconds(30)) else {
            throw net.failure("no connection after 30 s")
        }
        // A second of warm-up traffic first is not needed: the handshake gave both sides an RTT sample.
        let bytes = DatagramCount()
        net.observeTransmits { _, transmit in bytes.count += transmit.datagram.count }
        var latencies: [Duration] = []
        latencies.reserveCapacity(count)
        for index in 0..<count {
            let sentAt = net.now
            try net.withNode(0) { node in
                node.workloads[0].sizes.append(64)
                node.pump(now: sentAt)
            }
            guard try net.run(until: { $0.node(0)!.receivedMessages > index }, timeout: .seconds(60)) else {
                throw net.failure("echo \(index) did not return within 60 s")
            }
            latencies.append(net.now - sentAt)
        }
        let sorted = latencies.sorted()
        func quantile(_ fraction: Double) -> Double {
            sorted[min(sorted.count - 1, Int((fraction * Double(sorted.count - 1)).rounded()))] / .milliseconds(1)
        }
        let roundTrip = (oneWay * 2) / .milliseconds(1)
        var outcome = ScenarioOutcome(
            simulatedTime: net.now - .zero, messagesDelivered: 2 * count, bytesDelivered: 2 * 64 * count)
        outcome.measurements = [
            ("p50 ms", quantile(0.5)), ("p99 ms", quantile(0.99)), ("p99.9 ms", quantile(0.999)),
            ("p99 in RTTs", quantile(0.99) / roundTrip), ("p99.9 in RTTs", quantile(0.999) / roundTrip),
            ("bytes per round trip", Double(bytes.count) / Double(count)),
        ]
        return outcome
    }
}

import HuddleProtocol
import HuddleWire

/// Several bulk flows through one bottleneck (issue 13): sender `i` (node `i`) sends 64 KiB messages to receiver `i`
/// (node `flows + i`) as fast as it may, and every sender-to-receiver link shares one serialiser and drop-tail queue.
/// ACKs return over uncongested links with the same one-way delay.
///
/// It measures, over a window that starts once the flows had time to converge:
/// - `jain`: Jain's fairness index of the flows' goodputs, (Σx)² / (n Σx²), 1 when all are equal;
/// - `share_i`: flow `i`'s goodput as a fraction of the bottleneck's capacity;
/// - `qdelay_p50_ms` / `qdelay_p99_ms`: the time datagrams waited in the bottleneck queue;
/// - `utilisation`: all flows' goodput over the capacity.
///
/// Every checker of the transfer scenarios stays on (delivered once, in order, byte-identical; no nonce reuse;
/// buffers within limits).
public struct SharedBottleneckScenario: Sendable {
    /// How many flows share the bottleneck.
    public var flows: Int
    /// Controllers for individual flows (by flow index); the others use the run's default.
    public var controllers: [Int: ConnectionConfiguration.CongestionControl] = [:]
    /// The bottleneck's rate in bytes per second.
    public var bandwidth = 2_500_000
    /// One-way propagation delay each way.
    public var oneWayDelay: Duration = .milliseconds(20)
    /// When measuring starts.
    public var warmUp: Duration = .seconds(10)
    /// How long measuring lasts.
    public var window: Duration = .seconds(20)
    /// Flow `i` starts `i` × this after the first, so later flows must win their share from earlier ones.
    public var stagger: Duration = .milliseconds(500)

    /// A scenario of `flows` flows.
    public init(flows: Int, controllers: [Int: ConnectionConfiguration.CongestionControl] = [:]) {
        self.flows = flows
        self.controllers = controllers
    }

    /// The bandwidth-delay product of the path: the bottleneck's queue holds one.
    public var bandwidthDelayProduct: Int {
        Int(Double(bandwidth) * Double((oneWayDelay * 2).nanoseconds) / 1e9)
    }

    /// Runs one seed.
    public func run(seed: UInt64) throws -> ScenarioOutcome {
        var overrides: [Int: ConnectionConfiguration] = [:]
        for (flow, controller) in controllers {
            var configuration = ConnectionConfiguration()
            configuration.congestionControl = controller
            overrides[flow] = configuration
        }
        let endpoints = try TestMesh.endpoints(count: 2 * flows, seed: seed, overrides: overrides)
        let channel = ChannelID(200)
        // More than the bottleneck can carry in the whole run: every sender always has data.
        let totalSeconds = Double((warmUp + window + stagger * flows).nanoseconds) / 1e9
        let messages = Int(Double(bandwidth) * totalSeconds / 65_536) + 16
        let sizes = Array(repeating: 65_536, count: messages)
        var nodes: [EndpointNode] = []
        for flow in 0..<flows {
            nodes.append(
                EndpointNode(
                    endpoint: endpoints[flow],
                    workloads: [Workload(peer: endpoints[flows + flow].staticKey, channel: channel, sizes: sizes)]))
        }
        for flow in 0..<flows {
            nodes.append(
                EndpointNode(
                    endpoint: endpoints[flows + flow],
                    expectedSizes: [.init(sender: endpoints[flow].staticKey, channel: channel): sizes]))
        }
        var net = SimulatedNetwork(seed: seed, nodes: nodes, conditions: .clean(latency: oneWayDelay))
        let bottleneck = LinkConditions(
            latency: oneWayDelay, bandwidth: bandwidth, queueLimit: bandwidthDelayProduct, sharedQueue: 0)
        for flow in 0..<flows { net.setConditions(bottleneck, from: flow, to: flows + flow) }
        net.options.append("\(flows) flows, bottleneck \(bandwidth) B/s, queue \(bandwidthDelayProduct) B")
        Invariants.install(on: &net)

        for flow in 0..<flows {
            let peer = endpoints[flows + flow].staticKey
            let address = net.address(of: flows + flow)
            net.schedule(at: .zero + stagger * flow) { net in
                let now = net.now
                try? net.withNode(flow) { try $0.connect(to: peer, at: address, now: now) }
            }
        }
        let start = Instant.zero + stagger * flows + warmUp
        try net.run(until: start)
        let before = (0..<flows).map { net.node(flows + $0)?.receivedBytes ?? 0 }
        let delaysBefore = net.bottleneckDelays.count
        try net.run(until: start + window)
        let bytes = (0..<flows).map { (net.node(flows + $0)?.receivedBytes ?? 0) - before[$0] }

        let seconds = Double(window.nanoseconds) / 1e9
        let rates = bytes.map { Double($0) / seconds }
        let sum = rates.reduce(0, +)
        let squares = rates.reduce(0) { $0 + $1 * $1 }
        let jain = squares > 0 ? sum * sum / (Double(flows) * squares) : 0
        var delays = net.bottleneckDelays[delaysBefore...].map { Double($0.nanoseconds) / 1e6 }
        delays.sort()
        func percentile(_ fraction: Double) -> Double {
            delays.isEmpty ? 0 : delays[min(Int(Double(delays.count) * fraction), delays.count - 1)]
        }
        var outcome = ScenarioOutcome(
            simulatedTime: window, messagesDelivered: bytes.reduce(0, +) / 65_536, bytesDelivered: bytes.reduce(0, +))
        outcome.measurements.append(("jain", jain))
        for flow in 0..<flows { outcome.measurements.append(("share_\(flow)", rates[flow] / Double(bandwidth))) }
        outcome.measurements.append(("utilisation", sum / Double(bandwidth)))
        outcome.measurements.append(("qdelay_p50_ms", percentile(0.5)))
        outcome.measurements.append(("qdelay_p99_ms", percentile(0.99)))
        return outcome
    }
}

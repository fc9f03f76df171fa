import HuddleProtocol

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Optional tracing for debugging a seed: with `HUDDLE_SIM_TRACE=MILLISECONDS` in the environment, every node's
/// timers and counters are printed to standard error at that interval of virtual time, with the datagrams sent
/// since the previous line.
public enum SimulationTrace {
    /// The trace interval from `HUDDLE_SIM_TRACE`, if set.
    public static var interval: Duration? {
        guard let value = getenv("HUDDLE_SIM_TRACE").map({ String(cString: $0) }), let milliseconds = Int64(value),
            milliseconds > 0
        else { return nil }
        return .milliseconds(milliseconds)
    }

    /// Schedules trace lines on `net` every `interval` up to `until`.
    public static func install(on net: inout SimulatedNetwork<EndpointNode>, every interval: Duration, until: Duration)
    {
        let counter = TransmitCounter()
        net.observeTransmits { source, transmit in counter.count(source: source, bytes: transmit.datagram.count) }
        var time = Instant.zero + interval
        let end = Instant.zero + until
        while time <= end {
            net.schedule(at: time) { net in
                var lines = ["[\(net.now)] sent \(counter.drain()) \(net.statistics)"]
                for index in 0..<net.nodeCount {
                    lines.append("  node \(index): " + (net.node(index)?.diagnostics ?? "crashed"))
                }
                fputs(lines.joined(separator: "\n") + "\n", stderr)
            }
            time = time + interval
        }
    }
}

private final class TransmitCounter: @unchecked Sendable {
    private var perNode: [Int: (datagrams: Int, bytes: Int)] = [:]

    func count(source: Int, bytes: Int) {
        let current = perNode[source] ?? (0, 0)
        perNode[source] = (current.datagrams + 1, current.bytes + bytes)
    }

    func drain() -> String {
        defer { perNode.removeAll() }
        return perNode.keys.sorted().map { "node \($0): \(perNode[$0]!.datagrams) datagrams \(perNode[$0]!.bytes) B" }
            .joined(separator: ", ")
    }
}

import Foundation
import HuddleCLITestSupport
import Testing

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Three `huddle` processes on three "hosts": network namespaces joined through a bridge (in a fourth namespace)
/// over veth links, addresses 10.77.0.1-3/24. One link drops about 10 % of UDP in each direction (nftables
/// `numgen random mod 10 0 drop`; netem is not available here). Runs only as root with `ip` and `nft`.
@Suite(
    "huddle across network namespaces",
    .enabled(if: NetworkNamespace.unavailableReason == nil, Comment(rawValue: NetworkNamespace.unavailableReason ?? ""))
)
struct LossyLinkTests {
    static let port = 7000
    static let names = ["host", "ada", "bob"]

    /// The namespaces of one run, named uniquely (pid and a random tag) so parallel runs never collide.
    struct Lab {
        var bridge: NetworkNamespace?
        var hosts: [NetworkNamespace] = []

        func address(_ index: Int) -> String { "10.77.0.\(index + 1)" }

        /// Deletes namespaces an earlier run left behind when it was killed before its cleanup ran: those named
        /// `huddle-PID-...` whose process is gone.
        static func sweepLeftovers() {
            guard let listing = try? HuddleCluster.run(NetworkNamespace.ip, ["netns", "list"]) else { return }
            for line in listing.output.split(separator: "\n") {
                let name = String(line.split(separator: " ").first ?? "")
                let parts = name.split(separator: "-")
                guard parts.count >= 3, parts[0] == "huddle", let pid = Int32(parts[1]), pid != getpid() else {
                    continue
                }
                if kill(pid, 0) != 0 && errno == ESRCH { NetworkNamespace(name: name).delete() }
            }
        }

        /// Builds the bridge and one namespace per node; on failure deletes what it made.
        static func build(nodes: Int, tag: String) throws -> Lab {
            sweepLeftovers()
            var lab = Lab()
            do {
                let bridge = try NetworkNamespace.create("huddle-\(tag)-br")
                lab.bridge = bridge
                try bridge.ip(["link", "add", "br0", "type", "bridge"])
                try bridge.ip(["link", "set", "br0", "up"])
                for index in 0..<nodes {
                    let host = try NetworkNamespace.create("huddle-\(tag)-\(index)")
                    lab.hosts.append(host)
                    // The pair is created inside the node's namespace with its peer placed straight into the
                    // bridge's, so no interface name ever appears in the root namespace.
                    try host.ip([
                        "link", "add", "eth0", "type", "veth", "peer", "name", "port\(index)", "netns", bridge.name,
                    ])
                    try host.ip(["address", "add", "\(lab.address(index))/24", "dev", "eth0"])
                    try host.ip(["link", "set", "eth0", "up"])
                    try bridge.ip(["link", "set", "port\(index)", "master", "br0"])
                    try bridge.ip(["link", "set", "port\(index)", "up"])
                }
            } catch {
                lab.delete()
                throw error
            }
            return lab
        }

        /// Drops about one UDP datagram in ten to and from `port` in `host`: both directions of its link. The output
        /// hook makes `sendmsg` fail with EPERM for the dropped tenth, which also checks that the sender survives a
        /// refused send (the driver counts it and keeps its socket; see DirectDatagramSender).
        func dropTenPercent(in host: NetworkNamespace, port: Int) throws {
            try host.nft(["add", "table", "inet", "f"])
            for (chain, hook, match) in [("in", "input", "dport"), ("out", "output", "sport")] {
                try host.nft(["add", "chain", "inet", "f", chain, "{ type filter hook \(hook) priority 0; }"])
                // `counter` before and after the random match: how many datagrams passed and how many were dropped.
                let drop = ["counter", "numgen", "random", "mod", "10", "0", "counter", "drop"]
                try host.nft(["add", "rule", "inet", "f", chain, "udp", match, "\(port)"] + drop)
            }
        }

        /// The drop rules with their counters, for the log.
        func dropCounters(in host: NetworkNamespace) -> String {
            let listing = try? HuddleCluster.run(
                NetworkNamespace.ip, ["netns", "exec", host.name, NetworkNamespace.nft, "list", "table", "inet", "f"])
            return (listing?.output ?? "").split(separator: "\n").filter { $0.contains("drop") }
                .map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " | ")
        }

        func delete() {
            for namespace in hosts { namespace.delete() }
            bridge?.delete()
        }
    }

    @Test("Every chat line reaches every node in order across a link that drops 10 % of UDP", .timeLimit(.minutes(2)))
    func chatOverLossyLink() async throws {
        let clock = ContinuousClock()
        let started = clock.now
        let tag = "\(getpid())-\(UInt32.random(in: 0..<1_000_000))"
        let lab = try Lab.build(nodes: Self.names.count, tag: tag)
        let cluster = try HuddleCluster()
        // Processes first (they hold the namespaces), then the namespaces.
        defer {
            cluster.tearDown()
            lab.delete()
        }
        // The lossy link: bob's.
        try lab.dropTenPercent(in: lab.hosts[2], port: Self.port)
        // Overall bound: 90 s for everything below (each wait has its own smaller bound too).
        try await withDeadline(seconds: 90) {
            try await Self.exchange(lab: lab, cluster: cluster)
        }
        print("netns: lossy three-node chat finished in \(clock.now - started)")
    }

    static func exchange(lab: Lab, cluster: HuddleCluster) async throws {
        let listen = { (index: Int) in "\(lab.address(index)):\(port)" }
        let (host, ticket) = try await cluster.host(
            names[0], listen: listen(0), namespace: lab.hosts[0].name)
        var processes = [host]
        for index in 1..<names.count {
            let process = try cluster.join(
                ticket, as: names[index], listen: listen(index), namespace: lab.hosts[index].name)
            try await process.waitForEvent("joined", within: 40)
            processes.append(process)
        }
        // The ticket must carry the namespace address, or the joiners could not have reached the host at all.
        for process in processes {
            try await process.waitForPeerCount(names.count - 1)
        }
        let lines = 20
        for line in 0..<lines {
            for (index, process) in processes.enumerated() { try process.send("\(names[index]) \(line)") }
        }
        for index in processes.indices {
            for (otherIndex, other) in processes.enumerated() where otherIndex != index {
                let name = names[index]
                let expected = (0..<lines).map { "\(name) \($0)" }
                let received = {
                    other.events.filter { $0.name == "message" && $0["name"] == name }.compactMap { $0["text"] }
                }
                do {
                    try await other.waitForEvent("\(lines) lines from \(name)", within: 30) { _ in
                        received().count >= lines
                    }
                } catch {
                    Issue.record("\(error)")
                }
                #expect(received() == expected, "\(names[otherIndex]) from \(name)")
            }
        }
        // Report what the lossy link cost (everyone still present), then leave cleanly.
        for (index, process) in processes.enumerated() {
            let before = process.events.count
            try process.send("/peers")
            try await process.waitForEvent("answer to /peers") { _ in
                process.events.dropFirst(before).contains { $0.name == "peers" }
            }
            let figures = process.events.dropFirst(before).filter { $0.name == "peer" }.map { peer in
                let lost = "\(peer["packets_lost"] ?? "?")/\(peer["packets_sent"] ?? "?")"
                return "\(peer["name"] ?? "?"): rtt \(peer["rtt_ms"] ?? "?") ms, lost \(lost)"
            }
            print("netns: \(names[index]) sees \(figures.joined(separator: "; "))")
        }
        for process in processes { process.closeInput() }
        print("netns: bob's drop rules: \(lab.dropCounters(in: lab.hosts[2]))")
        for process in processes {
            #expect(try await process.waitForExit(within: 15) == 0, "\(process.label) exits cleanly")
        }
    }
}

/// Runs `body`, failing with ``HuddleProcessError/timedOut(_:)`` if it takes longer than `seconds`.
func withDeadline(seconds: Double, _ body: @escaping @Sendable () async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Bool.self) { group in
        group.addTask {
            try await body()
            return true
        }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return false
        }
        defer { group.cancelAll() }
        guard try await group.next() == true else {
            throw HuddleProcessError.timedOut("the whole test (\(seconds) s)")
        }
    }
}

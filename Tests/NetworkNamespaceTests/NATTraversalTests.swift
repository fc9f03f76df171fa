import Foundation
import HuddleCLITestSupport
import Testing

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Two `huddle` nodes at "home", each behind its own NAT router, and a relay on the "public" network, all network
/// namespaces (issue 14). Routers masquerade with nftables, endpoint-independent (`masquerade`: the public port is
/// kept for every destination, a cone) or port-randomising (`masquerade random,fully-random`: symmetric), and drop
/// unsolicited inbound packets on their WAN side as home routers' firewalls do (so an early probe from the other
/// side leaves no conntrack entry behind). Runs only as root with `ip` and `nft`.
@Suite(
    "NAT traversal across network namespaces",
    .serialized,
    .enabled(if: NetworkNamespace.unavailableReason == nil, Comment(rawValue: NetworkNamespace.unavailableReason ?? ""))
)
struct NATTraversalTests {
    static let relay = "10.99.0.1:3478"
    static let port = 7000

    /// The namespaces of one run: the public segment (a bridge), the relay, and per home a router and a host.
    struct Lab {
        var namespaces: [NetworkNamespace] = []
        var relay: NetworkNamespace!
        var routers: [NetworkNamespace] = []
        var homes: [NetworkNamespace] = []

        /// The home address of node `index` (0 or 1).
        func homeAddress(_ index: Int) -> String { "192.168.\(11 + index).2" }

        static func sysctl(_ namespace: NetworkNamespace, _ setting: String) throws {
            let (status, output) = try HuddleCluster.run(
                NetworkNamespace.ip, ["netns", "exec", namespace.name, "sysctl", "-qw", setting])
            guard status == 0 else { throw HuddleProcessError.commandFailed("sysctl \(setting): \(output)") }
        }

        /// Builds the lab; `symmetric[i]` makes home `i`'s router port-randomising. `wan` is the public network's
        /// /24 (the relay at .1, the routers at .11 and .12): a public-looking one for a router that refuses to map
        /// ports from a private address (miniupnpd).
        static func build(symmetric: [Bool], tag: String, wan: String = "10.99.0") throws -> Lab {
            var lab = Lab()
            do {
                let bridge = try NetworkNamespace.create("huddle-\(tag)-pub")
                lab.namespaces.append(bridge)
                try bridge.ip(["link", "add", "br0", "type", "bridge"])
                try bridge.ip(["link", "set", "br0", "up"])
                let relay = try NetworkNamespace.create("huddle-\(tag)-relay")
                lab.namespaces.append(relay)
                lab.relay = relay
                try relay.ip(["link", "add", "eth0", "type", "veth", "peer", "name", "relay", "netns", bridge.name])
                try relay.ip(["address", "add", "\(wan).1/24", "dev", "eth0"])
                try relay.ip(["link", "set", "eth0", "up"])
                try bridge.ip(["link", "set", "relay", "master", "br0"])
                try bridge.ip(["link", "set", "relay", "up"])
                for index in 0..<2 {
                    let router = try NetworkNamespace.create("huddle-\(tag)-r\(index)")
                    lab.namespaces.append(router)
                    lab.routers.append(router)
                    let home = try NetworkNamespace.create("huddle-\(tag)-h\(index)")
                    lab.namespaces.append(home)
                    lab.homes.append(home)
                    try router.ip([
                        "link", "add", "wan", "type", "veth", "peer", "name", "r\(index)", "netns", bridge.name,
                    ])
                    try router.ip(["address", "add", "\(wan).\(11 + index)/24", "dev", "wan"])
                    try router.ip(["link", "set", "wan", "up"])
                    try bridge.ip(["link", "set", "r\(index)", "master", "br0"])
                    try bridge.ip(["link", "set", "r\(index)", "up"])
                    try router.ip(["link", "add", "lan", "type", "veth", "peer", "name", "eth0", "netns", home.name])
                    try router.ip(["address", "add", "192.168.\(11 + index).1/24", "dev", "lan"])
                    try router.ip(["link", "set", "lan", "up"])
                    try home.ip(["address", "add", "\(lab.homeAddress(index))/24", "dev", "eth0"])
                    try home.ip(["link", "set", "eth0", "up"])
                    try home.ip(["route", "add", "default", "via", "192.168.\(11 + index).1"])
                    try sysctl(router, "net.ipv4.ip_forward=1")
                    try router.nft(["add", "table", "ip", "nat"])
                    try router.nft(["add", "chain", "ip", "nat", "post", "{ type nat hook postrouting priority 100; }"])
                    try router.nft(
                        ["add", "rule", "ip", "nat", "post", "oifname", "wan", "masquerade"]
                            + (symmetric[index] ? ["random,fully-random"] : []))
                    try router.nft(["add", "table", "inet", "fw"])
                    try router.nft(["add", "chain", "inet", "fw", "input", "{ type filter hook input priority 0; }"])
                    try router.nft([
                        "add", "rule", "inet", "fw", "input", "iifname", "wan", "ct", "state", "new", "drop",
                    ])
                }
            } catch {
                lab.delete()
                throw error
            }
            return lab
        }

        /// Moves home `index`'s NAT mapping: new flows leave from ports 20000-20999, and the flows of the home host
        /// are forgotten (`conntrack -D`), so its next packets appear from a new public port.
        func rebind(_ index: Int) throws {
            let router = routers[index]
            try router.nft(["flush", "chain", "ip", "nat", "post"])
            try router.nft(
                [
                    "add", "rule", "ip", "nat", "post", "oifname", "wan", "meta", "l4proto", "udp", "masquerade", "to",
                    ":20000-20999",
                ])
            _ = try HuddleCluster.run(
                NetworkNamespace.ip,
                ["netns", "exec", router.name, "conntrack", "-D", "-p", "udp", "--orig-src", homeAddress(index)])
        }

        func delete() {
            for namespace in namespaces.reversed() { namespace.delete() }
        }
    }

    /// Asks `/peers` until the one other participant's path is `kind` (direct or relayed); returns the seconds it
    /// took.
    static func waitForPath(_ kind: String, at process: HuddleProcess, within seconds: Double) async throws -> Double {
        let clock = ContinuousClock()
        let started = clock.now
        while (clock.now - started) < .seconds(seconds) {
            let before = process.events.count
            try process.send("/peers")
            try await process.waitForEvent("answer to /peers", within: 5) { _ in
                process.events.dropFirst(before).contains { $0.name == "peers" }
            }
            if process.events.dropFirst(before).contains(where: { $0.name == "peer" && $0["path"] == kind }) {
                return (clock.now - started) / .seconds(1)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw HuddleProcessError.timedOut("\(process.label) never reported a \(kind) path: \(process.events.suffix(6))")
    }

    /// Both directions of chat arrive.
    static func chat(_ a: HuddleProcess, _ b: HuddleProcess, tag: String) async throws {
        try a.send("from a \(tag)")
        try b.send("from b \(tag)")
        try await b.waitForEvent("line from a") { $0.name == "message" && $0["text"] == "from a \(tag)" }
        try await a.waitForEvent("line from b") { $0.name == "message" && $0["text"] == "from b \(tag)" }
    }

    /// Shares a 20 MiB file from `author` and waits until `reader` holds it with the same hash; `during` runs once
    /// the transfer started.
    static func share(
        from author: HuddleProcess, to reader: HuddleProcess, cluster: HuddleCluster, name: String,
        during: () throws -> Void = {}
    ) async throws {
        let path = "\(cluster.directory)/\(name)"
        var bytes = [UInt8](repeating: 0, count: 20 << 20)
        for index in stride(from: 0, to: bytes.count, by: 4096) {
            bytes[index] = UInt8(truncatingIfNeeded: index >> 12)
        }
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        let clock = ContinuousClock()
        let started = clock.now
        try author.send("/share \(path)")
        let shared = try await author.waitForEvent("attachment-shared", within: 30)
        let id = try #require(shared["id"])
        let hash = try await author.waitForEvent("attachment-complete", ["id": id], within: 30)["blake2b"]
        try await reader.waitForEvent("attachment-added", ["id": id], within: 20)
        try during()
        let received = try await reader.waitForEvent("attachment-complete", ["id": id], within: 60)
        #expect(received["blake2b"] == hash)
        print("netns: 20 MiB \(name) arrived \((clock.now - started) / .seconds(1)) s after /share")
    }

    /// Starts the relay and the two homes' nodes (0 hosts, 1 joins) and waits until they are joined.
    static func start(
        lab: Lab, cluster: HuddleCluster
    ) async throws -> (relay: HuddleProcess, host: HuddleProcess, joiner: HuddleProcess) {
        let relay = try cluster.start("relay", ["relay", "--json", "--listen", Self.relay], namespace: lab.relay.name)
        try await relay.waitForEvent("relay-listening", within: 20)
        let extra = ["--relay", Self.relay]
        let (host, ticket) = try await cluster.host(
            "ada", listen: "\(lab.homeAddress(0)):\(port)", namespace: lab.homes[0].name, extra: extra)
        let joiner = try cluster.join(
            ticket, as: "bob", listen: "\(lab.homeAddress(1)):\(port)", namespace: lab.homes[1].name)
        try await joiner.waitForEvent("joined", within: 30)
        return (relay, host, joiner)
    }

    static func tag() -> String { "\(getpid())-\(UInt32.random(in: 0..<1_000_000))" }

    /// Cone <-> cone: direct within 5 s (about 20 ms alone), chat and 20 MiB intact, a rebinding mid-transfer loses
    /// nothing, and the direct path outlives the relay.
    @Test(
        "Behind two cone NATs the nodes go direct and stay up through a rebinding and the relay's end",
        .timeLimit(.minutes(3)))
    func coneToCone() async throws {
        let lab = try Lab.build(symmetric: [false, false], tag: Self.tag())
        let cluster = try HuddleCluster()
        defer {
            cluster.tearDown()
            lab.delete()
        }
        try await withDeadline(seconds: 150) {
            let (relay, host, joiner) = try await Self.start(lab: lab, cluster: cluster)
            let seconds = try await Self.waitForPath("direct", at: joiner, within: 10)
            print("netns: cone <-> cone went direct \(seconds) s after joining")
            // About 20 ms on a quiet machine (five runs alone: 0.020 s each). Under `make test`'s phase 2, with the
            // other namespace suites beside it, a first round of path probes can miss the other side's opening and
            // the next comes a probe timeout later (2.1 s once). Before `/peers` listed only established connections
            // this bound was met from the first poll: the pending connection showed as `direct` at the address being
            // dialled.
            #expect(seconds < 5)
            _ = try await Self.waitForPath("direct", at: host, within: 5)
            try await Self.chat(host, joiner, tag: "direct")
            // The joiner shares 20 MiB; the host's NAT moves its mapping in the middle of the transfer.
            try await Self.share(from: joiner, to: host, cluster: cluster, name: "rebind.bin") {
                Thread.sleep(forTimeInterval: 0.3)
                try lab.rebind(0)
            }
            try await Self.chat(host, joiner, tag: "after rebinding")
            // The joiner now reaches the host at its new public port (the connection migrated, validated).
            _ = try await Self.waitForPath("direct", at: joiner, within: 5)
            let address = joiner.events.last { $0.name == "peer" }?["path_address"] ?? ""
            let port = Int(address.split(separator: ":").last ?? "") ?? 0
            #expect((20_000...20_999).contains(port), "the host is reached at \(address) after the rebinding")
            // The move reached the application as it happened, not only when asked: a path-changed event (issue 39,
            // item 5) names the new direct address (GroupSession.pathChanges underneath).
            let moved = try await joiner.waitForEvent("path-changed to the host's new port", within: 5) { event in
                event.name == "path-changed" && event["path"] == "direct" && event["path_address"] == address
            }
            #expect(moved["name"] == "ada", "the host")
            // The relay goes away: the direct path carries on.
            relay.signal(SIGTERM)
            _ = try await relay.waitForExit(within: 10)
            let stopped = try await relay.waitForEvent("relay-stopped", within: 5)
            #expect(Int(stopped["forwardedPackets"] ?? "") ?? 0 > 0, "the handshake went through the relay")
            try await Self.chat(host, joiner, tag: "without relay")
            _ = try await Self.waitForPath("direct", at: joiner, within: 5)
        }
    }

    @Test(
        "A symmetric NAT on one or both sides: the session runs through the relay, chat and 20 MiB intact",
        .timeLimit(.minutes(3)), arguments: [[true, false], [true, true]])
    func symmetricFallsBack(symmetric: [Bool]) async throws {
        let lab = try Lab.build(symmetric: symmetric, tag: Self.tag())
        let cluster = try HuddleCluster()
        defer {
            cluster.tearDown()
            lab.delete()
        }
        try await withDeadline(seconds: 150) {
            let (_, host, joiner) = try await Self.start(lab: lab, cluster: cluster)
            try await Self.chat(host, joiner, tag: "relayed")
            // Hole punching gives up after about 4 s; the path must still be the relay then.
            try await Task.sleep(for: .seconds(5))
            _ = try await Self.waitForPath("relayed", at: joiner, within: 2)
            _ = try await Self.waitForPath("relayed", at: host, within: 2)
            try await Self.share(from: host, to: joiner, cluster: cluster, name: "relayed.bin")
        }
    }
}

import Foundation
import HuddleCLITestSupport
import Testing

/// Two `huddle` nodes at IPv6-only homes (issue 39, item 3): each home has a global address (2001:db8::/32, the
/// documentation prefix, routed only inside the lab) behind a router that does no NAT but, like IPv6 home routers,
/// drops unsolicited inbound traffic with a stateful firewall. A `huddle relay` listens on IPv6 on the public side.
/// The joiner's first dial is dropped by the host's firewall; the two meet through the relay and hole punching opens
/// both firewalls to a direct path.
@Suite(
    "IPv6 across network namespaces",
    .serialized,
    .enabled(
        if: NetworkNamespace.unavailableReason == nil, Comment(rawValue: NetworkNamespace.unavailableReason ?? ""))
)
struct IPv6NamespaceTests {
    static let relay = "[2001:db8:99::1]:3478"
    static let port = 7000

    /// The global address of home `index` (0 or 1).
    static func home(_ index: Int) -> String { "2001:db8:\(11 + index)::2" }

    /// The namespaces: the public segment (a bridge), the relay, and per home a firewalled router and a host.
    static func build(tag: String) throws -> [NetworkNamespace] {
        var namespaces: [NetworkNamespace] = []
        do {
            let bridge = try NetworkNamespace.create("huddle-\(tag)-pub6")
            namespaces.append(bridge)
            try bridge.ip(["link", "add", "br0", "type", "bridge"])
            try bridge.ip(["link", "set", "br0", "up"])
            let relay = try NetworkNamespace.create("huddle-\(tag)-relay6")
            namespaces.append(relay)
            try relay.ip(["link", "add", "eth0", "type", "veth", "peer", "name", "relay", "netns", bridge.name])
            // nodad: usable at once, without duplicate address detection's second or two.
            try relay.ip(["-6", "address", "add", "2001:db8:99::1/64", "dev", "eth0", "nodad"])
            try relay.ip(["link", "set", "eth0", "up"])
            try bridge.ip(["link", "set", "relay", "master", "br0"])
            try bridge.ip(["link", "set", "relay", "up"])
            for index in 0..<2 {
                let prefix = "2001:db8:\(11 + index)::"
                let router = try NetworkNamespace.create("huddle-\(tag)-r6\(index)")
                namespaces.append(router)
                let home = try NetworkNamespace.create("huddle-\(tag)-h6\(index)")
                namespaces.append(home)
                try router.ip(["link", "add", "wan", "type", "veth", "peer", "name", "r\(index)", "netns", bridge.name])
                try router.ip(["-6", "address", "add", "2001:db8:99::\(11 + index)/64", "dev", "wan", "nodad"])
                try router.ip(["link", "set", "wan", "up"])
                try bridge.ip(["link", "set", "r\(index)", "master", "br0"])
                try bridge.ip(["link", "set", "r\(index)", "up"])
                try router.ip(["link", "add", "lan", "type", "veth", "peer", "name", "eth0", "netns", home.name])
                try router.ip(["-6", "address", "add", "\(prefix)1/64", "dev", "lan", "nodad"])
                try router.ip(["link", "set", "lan", "up"])
                try home.ip(["-6", "address", "add", "\(prefix)2/64", "dev", "eth0", "nodad"])
                try home.ip(["link", "set", "eth0", "up"])
                try home.ip(["-6", "route", "add", "default", "via", "\(prefix)1"])
                let (status, output) = try HuddleCluster.run(
                    NetworkNamespace.ip,
                    ["netns", "exec", router.name, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"])
                guard status == 0 else { throw HuddleProcessError.commandFailed("sysctl: \(output)") }
                // The other home and the relay's segment are routed through the public side.
                let other = "2001:db8:\(12 - index)::/64"
                try router.ip(["-6", "route", "add", other, "via", "2001:db8:99::\(12 - index)"])
                try relay.ip(["-6", "route", "add", "\(prefix)/64", "via", "2001:db8:99::\(11 + index)"])
                // A home router's IPv6 firewall: replies pass, unsolicited inbound does not.
                try router.nft(["add", "table", "inet", "fw"])
                try router.nft(["add", "chain", "inet", "fw", "forward", "{ type filter hook forward priority 0; }"])
                try router.nft([
                    "add", "rule", "inet", "fw", "forward", "iifname", "wan", "ct", "state", "new", "drop",
                ])
            }
        } catch {
            for namespace in namespaces.reversed() { namespace.delete() }
            throw error
        }
        return namespaces
    }

    @Test(
        "Two IPv6 homes behind stateful firewalls meet through a relay on IPv6 and end direct; chat both ways",
        .timeLimit(.minutes(2)))
    func firewalledHomesEndDirect() async throws {
        let namespaces = try Self.build(tag: NATTraversalTests.tag())
        let cluster = try HuddleCluster()
        defer {
            cluster.tearDown()
            for namespace in namespaces.reversed() { namespace.delete() }
        }
        let relayNamespace = namespaces[1].name
        let homes = namespaces.filter { $0.name.contains("-h6") }.map(\.name)
        try await withDeadline(seconds: 90) {
            let relay = try cluster.start(
                "relay", ["relay", "--json", "--listen", Self.relay], namespace: relayNamespace)
            try await relay.waitForEvent("relay-listening", within: 20)
            let (host, ticket) = try await cluster.host(
                "ada", listen: "[\(Self.home(0))]:\(Self.port)", namespace: homes[0], extra: ["--relay", Self.relay])
            let joiner = try cluster.join(
                ticket, as: "bob", listen: "[\(Self.home(1))]:\(Self.port)", namespace: homes[1],
                extra: ["--relay", Self.relay])
            try await joiner.waitForEvent("joined", within: 30)
            try await NATTraversalTests.chat(host, joiner, tag: "over IPv6")
            let seconds = try await NATTraversalTests.waitForPath("direct", at: joiner, within: 10)
            _ = try await NATTraversalTests.waitForPath("direct", at: host, within: 5)
            try await NATTraversalTests.chat(host, joiner, tag: "direct over IPv6")
            print("netns: IPv6 homes behind firewalls direct \(seconds) s after the first /peers")
        }
    }
}

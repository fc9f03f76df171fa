import Foundation
import Huddle
import HuddleCLITestSupport
import Testing

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// `huddle` behind NAT routers and firewalls with coturn (Debian's, as people run it) on the public network instead
/// of `huddle relay`: the lab of ``NATTraversalTests`` with coturn at 10.99.0.1, listening on port 443 for UDP and
/// TCP. Two members behind symmetric NATs meet through it alone; a member whose network drops all outbound UDP
/// joins through it over TCP (issue 38).
@Suite(
    "TURN across network namespaces",
    .serialized,
    .enabled(
        if: NetworkNamespace.unavailableReason == nil, Comment(rawValue: NetworkNamespace.unavailableReason ?? "")),
    .enabled(if: Coturn.isInstalled, "coturn is not installed: run make deps")
)
struct TurnNamespaceTests {
    static let turnIP = "10.99.0.1"
    static let turnPort: UInt16 = 443
    static var turn: String { "\(Coturn.username):\(Coturn.password)@\(turnIP):\(turnPort)" }

    /// Builds the lab (`symmetric` per home) with coturn on the public side (also on 10.99.0.3 and the next port when
    /// `alternateIP`, for RFC 5780's tests), runs `body` within `seconds`, and takes everything down.
    ///
    /// coturn's namespace gets a default route to 10.99.0.254 on the public bridge, where a datagram to a private
    /// address is dropped silently, as the internet drops it upstream. Without it (or with a blackhole route in
    /// coturn's own namespace, which makes the send fail locally) a relayed datagram to a peer's LAN address (a peer
    /// offers all its addresses) fails at coturn's `sendto`, and coturn 4.6.1 then closes a TCP client's allocation
    /// (the NAT lab's finding 3).
    static func withLab(
        symmetric: [Bool], alternateIP: Bool = false, seconds: Double,
        _ body: @escaping @Sendable (NATTraversalTests.Lab, HuddleCluster, Coturn) async throws -> Void
    ) async throws {
        let lab = try NATTraversalTests.Lab.build(symmetric: symmetric, tag: NATTraversalTests.tag())
        let cluster = try HuddleCluster()
        defer {
            cluster.tearDown()
            lab.delete()
        }
        let bridge = lab.namespaces[0]
        try bridge.ip(["address", "add", "10.99.0.254/24", "dev", "br0"])
        try bridge.ip(["route", "add", "blackhole", "default"])
        try lab.relay.ip(["route", "add", "default", "via", "10.99.0.254"])
        if alternateIP { try lab.relay.ip(["address", "add", "10.99.0.3/24", "dev", "eth0"]) }
        let coturn = try Coturn(
            namespace: lab.relay.name, ip: turnIP, port: turnPort, alternateIP: alternateIP ? "10.99.0.3" : nil)
        defer { coturn.stop() }
        try await withDeadline(seconds: seconds) { try await body(lab, cluster, coturn) }
    }

    /// Makes `home` an office network that drops every UDP datagram it sends (an nftables output rule); TCP passes.
    static func blockUDP(in home: NetworkNamespace) throws {
        try home.nft(["add", "table", "inet", "office"])
        try home.nft(["add", "chain", "inet", "office", "out", "{ type filter hook output priority 0; }"])
        try home.nft(["add", "rule", "inet", "office", "out", "meta", "l4proto", "udp", "drop"])
    }

    @Test(
        "Behind two symmetric NATs, with coturn and no huddle relay: joined, chat both ways, the path stays on TURN",
        .timeLimit(.minutes(2)))
    func symmetricThroughCoturn() async throws {
        try await Self.withLab(symmetric: [true, true], seconds: 90) { lab, cluster, coturn in
            let (host, ticket) = try await cluster.host(
                "ada", listen: "\(lab.homeAddress(0)):\(NATTraversalTests.port)", namespace: lab.homes[0].name,
                extra: ["--turn", Self.turn])
            let allocation = try await host.waitForEvent("turn", within: 5)
            #expect(allocation["relayed"]?.hasPrefix("\(Self.turnIP):") == true, "\(allocation)\n\(coturn.log)")
            let joiner = try cluster.join(
                ticket, as: "bob", listen: "\(lab.homeAddress(1)):\(NATTraversalTests.port)",
                namespace: lab.homes[1].name, extra: ["--turn", Self.turn])
            try await joiner.waitForEvent("joined", within: 30)
            try await NATTraversalTests.chat(host, joiner, tag: "through coturn")
            // Hole punching between two symmetric NATs fails (about 4 s); the session stays on the TURN server.
            try await Task.sleep(for: .seconds(5))
            _ = try await NATTraversalTests.waitForPath("relayed", at: joiner, within: 2)
            _ = try await NATTraversalTests.waitForPath("relayed", at: host, within: 2)
            try await NATTraversalTests.chat(host, joiner, tag: "still through coturn")
        }
    }

    @Test(
        "A joiner whose network drops all outbound UDP, given only a ticket that shares the host's TURN servers, joins over TCP on 443; a later member reaches it too",
        .timeLimit(.minutes(2)))
    func udpBlockedJoinsOverTCP() async throws {
        try await Self.withLab(symmetric: [false, false], seconds: 90) { lab, cluster, coturn in
            // The joiner's network: every UDP datagram it sends is dropped (no DNS is needed here); TCP passes.
            try Self.blockUDP(in: lab.homes[1])
            let (host, ticket) = try await cluster.host(
                "ada", listen: "\(lab.homeAddress(0)):\(NATTraversalTests.port)", namespace: lab.homes[0].name,
                extra: ["--turn", Self.turn, "--turn", "\(Self.turn)?transport=tcp", "--share-turn"])
            let standing = try await host.waitForEvent("turn", ["transport": "tcp"], within: 5)
            #expect(standing["standby"] == "true", "UDP works for the host: its TCP server stands by")
            let shared = try Invitation(parsing: ticket).turnServers
            #expect(shared.map(\.transport) == [.udp, .tcp])
            // No --turn of its own: the ticket's servers are all the joiner has.
            let joiner = try cluster.join(
                ticket, as: "bob", listen: "\(lab.homeAddress(1)):\(NATTraversalTests.port)",
                namespace: lab.homes[1].name)
            try await joiner.waitForEvent("joined", within: 30)
            // The servers the ticket brought are reported as they change: UDP silent, TCP granted after 2 s.
            let overTCP = try await joiner.waitForEvent("turn over tcp", within: 10) {
                $0.name == "turn" && $0["transport"] == "tcp" && $0["relayed"] != "<null>"
            }
            #expect(overTCP["relayed"]?.hasPrefix("\(Self.turnIP):") == true, "\(overTCP)\n\(coturn.log)")
            try await NATTraversalTests.chat(host, joiner, tag: "over tcp")
            _ = try await NATTraversalTests.waitForPath("relayed", at: joiner, within: 5)
            // A member joining after it knows the blocked joiner only by its record: that names the relayed address
            // first, so the newcomer reaches it through TURN too.
            let late = try cluster.join(
                ticket, as: "cy", listen: "\(lab.homeAddress(0)):\(NATTraversalTests.port + 1)",
                namespace: lab.homes[0].name)
            try await late.waitForEvent("joined", within: 30)
            try await NATTraversalTests.chat(late, joiner, tag: "to the late member")
        }
    }

    /// Runs `huddle doctor --json` in `namespace` against the lab's coturn; returns the `doctor` object.
    static func doctor(in namespace: String, cluster: HuddleCluster) async throws -> [String: Any] {
        let process = try cluster.start(
            "doctor", ["doctor", "--json", "--stun", "\(turnIP):\(turnPort)", "--turn", turn], namespace: namespace)
        _ = try await process.waitForExit(within: 10)
        let line = try #require(process.stdoutLines.first { $0.contains("\"doctor\"") }, "\(process.stdoutLines)")
        #expect(try EventSchema.load().violations(of: line).isEmpty, "\(line)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test(
        "huddle doctor names each home's NAT (port-restricted cone, symmetric) and a network that blocks UDP, in under 3 s",
        .timeLimit(.minutes(2)))
    func doctorBehindNATs() async throws {
        try await Self.withLab(symmetric: [false, true], alternateIP: true, seconds: 60) { lab, cluster, coturn in
            let cone = try await Self.doctor(in: lab.homes[0].name, cluster: cluster)
            #expect(cone["mapping"] as? String == "endpoint-independent", "\(cone)\n\(coturn.log)")
            #expect(cone["filtering"] as? String == "address-and-port-dependent", "\(cone)")
            #expect((cone["reflexive"] as? [String])?.first?.hasPrefix("10.99.0.11:") == true, "\(cone)")
            #expect((cone["elapsed_ms"] as? Double ?? .infinity) < 3000)

            let symmetric = try await Self.doctor(in: lab.homes[1].name, cluster: cluster)
            #expect(symmetric["mapping"] as? String == "address-and-port-dependent", "\(symmetric)")
            #expect(symmetric["filtering"] as? String == "address-and-port-dependent", "\(symmetric)")
            #expect((symmetric["elapsed_ms"] as? Double ?? .infinity) < 3000)

            // The cone home now drops all outbound UDP: no STUN answer, TURN over TCP only.
            try Self.blockUDP(in: lab.homes[0])
            let blocked = try await Self.doctor(in: lab.homes[0].name, cluster: cluster)
            #expect((blocked["reflexive"] as? [String])?.isEmpty == true, "\(blocked)")
            let turn = try #require(blocked["turn"] as? [[String: Any]])
            #expect(turn.first { $0["transport"] as? String == "udp" }?["relayed"] is NSNull, "\(turn)")
            #expect(turn.first { $0["transport"] as? String == "tcp" }?["relayed"] is String, "\(turn)")
            #expect((blocked["elapsed_ms"] as? Double ?? .infinity) < 3000)
        }
    }

    @Test(
        "A host behind a cone NAT given --stun names its public address in its ticket, before its LAN address",
        .timeLimit(.minutes(1)))
    func stunAddressInTicket() async throws {
        try await Self.withLab(symmetric: [false, false], seconds: 30) { lab, cluster, coturn in
            let (_, ticket) = try await cluster.host(
                "ada", listen: "0.0.0.0:\(NATTraversalTests.port)", namespace: lab.homes[0].name,
                extra: ["--stun", "\(Self.turnIP):\(Self.turnPort)"])
            let addresses = try #require(Invitation(parsing: ticket).members.first?.addresses).map { "\($0)" }
            // The router keeps the port (a cone): the server saw the router's WAN address and port 7000.
            #expect(addresses.first == "10.99.0.11:\(NATTraversalTests.port)", "\(addresses)\n\(coturn.log)")
            #expect(addresses.contains("\(lab.homeAddress(0)):\(NATTraversalTests.port)"), "\(addresses)")
        }
    }
}

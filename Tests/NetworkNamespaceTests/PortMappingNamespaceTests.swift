import Foundation
import Huddle
import HuddleCLITestSupport
import Testing

/// `huddle` behind NAT routers that run Debian's miniupnpd (PCP, NAT-PMP, UPnP-IGD), as many home routers run it or
/// its kin: the lab of ``NATTraversalTests`` on a public-looking network (miniupnpd will not map from a private
/// one), with no relay and no TURN server. Issue 39's first item: two members behind symmetric NATs, which hole
/// punching cannot open, end direct through the routers' port mappings.
@Suite(
    "Port mapping across network namespaces",
    .serialized,
    .enabled(
        if: NetworkNamespace.unavailableReason == nil, Comment(rawValue: NetworkNamespace.unavailableReason ?? "")),
    .enabled(if: MiniUPnPd.isInstalled, "miniupnpd is not installed: run make deps")
)
struct PortMappingNamespaceTests {
    /// The lab's public network: the routers' public addresses are .11 and .12.
    static let wan = "198.20.0"
    static let port = NATTraversalTests.port

    /// Builds the lab with `symmetric` homes and miniupnpd on the routers of `mapping` (per home; PCP and NAT-PMP
    /// when `natPMP`, UPnP-IGD when `upnp`), runs `body` within `seconds`, and takes everything down.
    static func withLab(
        symmetric: [Bool], mapping: [Bool], natPMP: Bool = true, upnp: Bool = true, seconds: Double,
        _ body: @escaping @Sendable (NATTraversalTests.Lab, HuddleCluster, [MiniUPnPd?]) async throws -> Void
    ) async throws {
        let lab = try NATTraversalTests.Lab.build(symmetric: symmetric, tag: NATTraversalTests.tag(), wan: wan)
        let cluster = try HuddleCluster()
        defer {
            cluster.tearDown()
            lab.delete()
        }
        let daemons = try zip(lab.routers, mapping).map { router, runs in
            runs ? try MiniUPnPd(router: router, natPMP: natPMP, upnp: upnp) : nil
        }
        defer { daemons.forEach { $0?.stop() } }
        try await withDeadline(seconds: seconds) { try await body(lab, cluster, daemons) }
    }

    /// Two members behind symmetric NATs whose routers map over `method` (`pcp` or `upnp`, the `port-mapping`
    /// event's `protocol` and the `gateway` port it names), with no relay: the ticket names the host's mapped
    /// address, the joiner gets in, the path is direct both ways, and a node that stops deletes its mapping while
    /// the other's stays.
    static func meetThroughMappings(method: String, gatewayPort: Int, natPMP: Bool) async throws {
        try await withLab(symmetric: [true, true], mapping: [true, true], natPMP: natPMP, seconds: 60) {
            lab, cluster, daemons in
            let (host, ticket) = try await cluster.host(
                "ada", listen: "\(lab.homeAddress(0)):\(port)", namespace: lab.homes[0].name)
            let hostMapping = try await host.waitForEvent("port-mapping", within: 5)
            #expect(hostMapping["protocol"] == method, "\(daemons[0]!.log)")
            #expect(hostMapping["external"] == "\(wan).11:\(port)")
            #expect(hostMapping["gateway"] == "192.168.11.1:\(gatewayPort)")
            #expect(hostMapping["lifetime_s"] == "7200")
            // Awaited at start, so the ticket names the mapped address first: a joiner anywhere dials it first.
            let member = try #require(try Invitation(parsing: ticket).members.first)
            #expect(member.address.description == "\(wan).11:\(port)")
            let joiner = try cluster.join(
                ticket, as: "bob", listen: "\(lab.homeAddress(1)):\(port)", namespace: lab.homes[1].name)
            try await joiner.waitForEvent("joined", within: 10)
            let joinerMapping = try await joiner.waitForEvent("port-mapping", within: 5)
            #expect(joinerMapping["protocol"] == method, "\(daemons[1]!.log)")
            #expect(joinerMapping["external"] == "\(wan).12:\(port)")
            try await NATTraversalTests.chat(host, joiner, tag: "through the \(method) mappings")
            _ = try await NATTraversalTests.waitForPath("direct", at: joiner, within: 5)
            _ = try await NATTraversalTests.waitForPath("direct", at: host, within: 5)
            #expect(try daemons[1]!.forwardedPorts() == [UInt16(port)])
            // A node that stops deletes its mapping as it closes (PCP: a request with lifetime 0; UPnP-IGD:
            // DeletePortMapping).
            joiner.closeInput()
            _ = try await joiner.waitForExit(within: 10)
            #expect(try await daemons[1]!.forwardedPorts(becoming: []).isEmpty, "\(daemons[1]!.log)")
            #expect(try daemons[0]!.forwardedPorts() == [UInt16(port)])
        }
    }

    @Test(
        "Behind two symmetric NATs whose routers run miniupnpd, with no relay: mapped over PCP, named in the ticket, the path is direct; a stopping node deletes its mapping",
        .timeLimit(.minutes(2)))
    func symmetricThroughPortMappings() async throws {
        try await Self.meetThroughMappings(method: "pcp", gatewayPort: 5351, natPMP: true)
    }

    @Test(
        "Behind two symmetric NATs whose routers answer only UPnP-IGD, with no relay: the same over UPnP-IGD",
        .timeLimit(.minutes(2)))
    func symmetricThroughUPnP() async throws {
        try await Self.meetThroughMappings(method: "upnp", gatewayPort: 1900, natPMP: false)
    }

    @Test(
        "A router that answers only NAT-PMP (PCP requests dropped before miniupnpd, UPnP-IGD off) maps the port over NAT-PMP; the port-mapping event says so",
        .timeLimit(.minutes(2)))
    func natPMPWhenPCPGoesUnanswered() async throws {
        try await Self.withLab(symmetric: [true, false], mapping: [true, false], upnp: false, seconds: 60) {
            lab, cluster, daemons in
            // PCP and NAT-PMP share port 5351; PCP requests start with version 2, NAT-PMP's with 0.
            let router = lab.routers[0]
            try router.nft(["add", "table", "inet", "nopcp"])
            try router.nft(["add", "chain", "inet", "nopcp", "in", "{ type filter hook input priority -10; }"])
            try router.nft(["add", "rule", "inet", "nopcp", "in", "udp", "dport", "5351", "@th,64,8", "2", "drop"])
            let (host, _) = try await cluster.host(
                "ada", listen: "\(lab.homeAddress(0)):\(Self.port)", namespace: lab.homes[0].name)
            // PCP goes three times (0, 0.25, 0.75 s) before NAT-PMP is asked.
            let mapping = try await host.waitForEvent("port-mapping", within: 5)
            #expect(mapping["protocol"] == "nat-pmp", "\(daemons[0]!.log)")
            #expect(mapping["external"] == "\(Self.wan).11:\(Self.port)")
            #expect(mapping["lifetime_s"] == "7200")
        }
    }

    @Test(
        "huddle doctor reports the router's port mapping (PCP, the public address) and deletes it again",
        .timeLimit(.minutes(2)))
    func doctorReportsPortMapping() async throws {
        try await Self.withLab(symmetric: [true, false], mapping: [true, false], seconds: 60) {
            lab, cluster, daemons in
            // Nothing listens at the relay address: the doctor's port-mapping check needs no server.
            let process = try cluster.start(
                "doctor", ["doctor", "--json", "--relay", "\(Self.wan).1:3478"], namespace: lab.homes[0].name)
            _ = try await process.waitForExit(within: 10)
            let line = try #require(process.stdoutLines.first { $0.contains("\"doctor\"") }, "\(process.stdoutLines)")
            #expect(try EventSchema.load().violations(of: line).isEmpty, "\(line)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let mappings = try #require(report["port_mapping"] as? [[String: Any]])
            #expect(mappings.count == 1, "\(report)")
            #expect(mappings.first?["protocol"] as? String == "pcp", "\(daemons[0]!.log)")
            #expect((mappings.first?["external"] as? String)?.hasPrefix("\(Self.wan).11:") == true)
            #expect((report["elapsed_ms"] as? Double ?? .infinity) < 3000)
            // The doctor's node deleted its mapping as it stopped.
            #expect(try await daemons[0]!.forwardedPorts(becoming: []).isEmpty, "\(daemons[0]!.log)")
        }
    }

    @Test(
        "A router without port mapping: the node reports the failure as an event after PCP and NAT-PMP went unanswered, and stays reachable through its LAN address",
        .timeLimit(.minutes(2)))
    func routerWithoutPortMapping() async throws {
        try await Self.withLab(symmetric: [false, false], mapping: [false, false], seconds: 60) { lab, cluster, _ in
            let started = ContinuousClock.now
            let (host, ticket) = try await cluster.host(
                "ada", listen: "\(lab.homeAddress(0)):\(Self.port)", namespace: lab.homes[0].name)
            let failure = try await host.waitForEvent("port-mapping", within: 10)
            #expect(failure["error"] == "\(PortMappingFailure.unanswered)")
            #expect(failure["external"] == "<null>")
            // PCP and NAT-PMP: six requests, the last waited for 1 s; the failure comes about 3.5 s after the start
            // (UPnP-IGD's search gave up after 1 s).
            #expect(ContinuousClock.now - started > .seconds(3))
            let member = try #require(try Invitation(parsing: ticket).members.first)
            #expect(member.address.description == "\(lab.homeAddress(0)):\(Self.port)")
        }
    }
}

import Foundation
import HuddleCLITestSupport
import Testing

/// Members relaying for members with real `huddle` processes (issue 39 item 4, PROTOCOL.md section 10.3): a member on
/// the public network hosts, two members behind symmetric NATs (port-randomising routers with stateful firewalls,
/// ``NATTraversalTests/Lab``) join it, and no `huddle relay` or TURN server runs anywhere. The two cannot meet
/// directly (each router gives every destination a new port and drops what it did not ask for), so they meet through
/// the host. Runs only as root with `ip` and `nft`.
@Suite(
    "Members relay for members across network namespaces",
    .serialized,
    .enabled(if: NetworkNamespace.unavailableReason == nil, Comment(rawValue: NetworkNamespace.unavailableReason ?? ""))
)
struct MemberRelayNamespaceTests {
    static let port = 7000
    /// Where the host serves its metrics (`--metrics`), inside its namespace.
    static let metricsPort = 9464

    /// The `peer` line `process` gives for `name` in its next `/peers` answer.
    static func peer(_ name: String, at process: HuddleProcess) async throws -> Event? {
        let before = process.events.count
        try process.send("/peers")
        try await process.waitForEvent("answer to /peers", within: 5) { _ in
            process.events.dropFirst(before).contains { $0.name == "peers" }
        }
        return process.events.dropFirst(before).first { $0.name == "peer" && $0["name"] == name }
    }

    /// Builds the lab, starts the host "cyd" on the public network where the NAT tests' relay sits (a member, not a
    /// relay; with `hostExtra` too) and "ada" and "bob" behind the two symmetric NATs, each with `extra`, waits until
    /// both joined and runs `body` within `seconds`; tears everything down after.
    static func withThreeMembers(
        extra: [String] = [], hostExtra: [String] = [], seconds: Double,
        _ body:
            @escaping @Sendable (
                _ host: HuddleProcess, _ ada: HuddleProcess, _ bob: HuddleProcess, _ hostNamespace: String
            ) async throws -> Void
    ) async throws {
        let lab = try NATTraversalTests.Lab.build(symmetric: [true, true], tag: NATTraversalTests.tag())
        let cluster = try HuddleCluster()
        defer {
            cluster.tearDown()
            lab.delete()
        }
        try await withDeadline(seconds: seconds) {
            let (host, ticket) = try await cluster.host(
                "cyd", listen: "10.99.0.1:\(Self.port)", namespace: lab.relay.name, extra: extra + hostExtra)
            let ada = try cluster.join(
                ticket, as: "ada", listen: "\(lab.homeAddress(0)):\(Self.port)", namespace: lab.homes[0].name,
                extra: extra)
            let bob = try cluster.join(
                ticket, as: "bob", listen: "\(lab.homeAddress(1)):\(Self.port)", namespace: lab.homes[1].name,
                extra: extra)
            try await ada.waitForEvent("joined", within: 30)
            try await bob.waitForEvent("joined", within: 30)
            try await body(host, ada, bob, lab.relay.name)
        }
    }

    @Test(
        "Two members behind symmetric NATs talk through the third member, with no relay and no TURN server",
        .timeLimit(.minutes(2)))
    func throughTheHost() async throws {
        try await Self.withThreeMembers(hostExtra: ["--metrics", "10.99.0.1:\(Self.metricsPort)"], seconds: 90) {
            host, ada, bob, hostNamespace in
            // Sent at once: the line waits for the connection through the host, it is not lost.
            try ada.send("ada to bob")
            try bob.send("bob to ada")
            try await bob.waitForEvent("ada's line", within: 20) { $0.name == "message" && $0["text"] == "ada to bob" }
            try await ada.waitForEvent("bob's line", within: 20) { $0.name == "message" && $0["text"] == "bob to ada" }
            let hostLine = try #require(try await Self.peer("cyd", at: ada), "ada lists the host")
            #expect(hostLine["path"] == "direct")
            let hostID = try #require(hostLine["participant"])
            for (process, other) in [(ada, "bob"), (bob, "ada")] {
                let line = try #require(try await Self.peer(other, at: process), "\(process.label) lists \(other)")
                #expect(line["path"] == "relayed", "\(process.label): \(line)")
                #expect(line["path_address"] == "10.99.0.1:\(Self.port)", "through the host's own socket")
                #expect(line["relay_member"] == hostID, "\(process.label) names the host as the relaying member")
            }
            // The host's own paths to both stay direct (their NATs let its replies in).
            for name in ["ada", "bob"] {
                #expect(try await Self.peer(name, at: host)?["path"] == "direct")
            }
            // What the host relayed shows in its metrics (scraped from inside its namespace).
            let (status, scrape) = try HuddleCluster.run(
                NetworkNamespace.ip,
                ["netns", "exec", hostNamespace, "curl", "-sf", "http://10.99.0.1:\(Self.metricsPort)/metrics"])
            #expect(status == 0, "\(scrape)")
            let forwarded = scrape.split(separator: "\n")
                .first { $0.hasPrefix("huddle_member_relay_packets_forwarded_total ") }
                .flatMap { Double($0.split(separator: " ").last ?? "") }
            #expect(forwarded ?? 0 >= 2, "the two lines went through it: \(scrape)")
        }
    }

    /// The control: the same three with `--no-member-relay` everywhere. The two behind symmetric NATs never meet,
    /// which shows the test above passes through the host's relay and nothing else; and `/peers` leaves out the
    /// participant whose connection never completed (it used to list it as `direct` at the address being dialled,
    /// with nothing sent: NAT-LAB.md finding 3).
    @Test("Without member relays the same two never meet, and /peers does not call their pending connection direct")
    func withoutMemberRelays() async throws {
        try await Self.withThreeMembers(extra: ["--no-member-relay"], seconds: 60) { _, ada, bob, _ in
            try ada.send("ada to bob")
            // Hole punching between two symmetric NATs gives up within about 4 s.
            try await Task.sleep(for: .seconds(6))
            #expect(!bob.events.contains { $0.name == "message" && $0["text"] == "ada to bob" })
            #expect(try await Self.peer("cyd", at: ada)?["path"] == "direct")
            #expect(try await Self.peer("bob", at: ada) == nil, "bob has no established connection at ada")
        }
    }
}

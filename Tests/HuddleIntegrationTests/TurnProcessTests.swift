import Foundation
import Huddle
import HuddleCLITestSupport
import Testing

/// `huddle host --turn` against a real coturn: the host allocates, says so in a `turn` event, its ticket names the
/// relayed address, and a joiner that has only the ticket reaches it through the TURN server, chats both ways, and
/// ends on a direct path (the two are on one machine, so the direct path exists).
@Suite("huddle with a TURN server", .serialized)
struct TurnProcessTests {
    @Test("A host on coturn: its ticket names the relayed address, a joiner comes in through it and ends direct")
    func hostThroughTurn() async throws {
        try #require(Coturn.isInstalled, "coturn is not installed: run make deps")
        let coturn = try Coturn()
        defer { coturn.stop() }
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let turn = "\(Coturn.username):\(Coturn.password)@127.0.0.1:\(coturn.port)"
        let (host, ticket) = try await cluster.host("host", extra: ["--turn", turn])
        let allocation = try await host.waitForEvent("turn", within: 5)
        let relayed = try #require(allocation["relayed"], "no allocation: \(allocation); coturn logged:\n\(coturn.log)")
        #expect(allocation["server"] == "127.0.0.1:\(coturn.port)")
        #expect(try Invitation(parsing: ticket).members.first.map { "\($0.address)" } == relayed)

        let guest = try cluster.join(ticket, as: "guest")
        try await guest.waitForEvent("joined", within: 20)
        try host.send("through the relay")
        try guest.send("back through it")
        try await guest.waitForEvent("message", ["text": "through the relay"], within: 10)
        try await host.waitForEvent("message", ["text": "back through it"], within: 10)
        // The guest came in through the relayed address; the host's challenge of the guest's own address (or the
        // host's own dial of the guest's record) leaves both on the direct path, which /peers reports.
        var path: Event?
        for _ in 0..<20 where path?["path_address"] == nil || path?["path_address"] == relayed {
            try guest.send("/peers")
            try await Task.sleep(for: .milliseconds(250))
            path = guest.events.last { $0.name == "peer" }
        }
        #expect(path?["path"] == "direct")
        #expect(path?["path_address"] != nil && path?["path_address"] != relayed, "\(String(describing: path))")
        host.closeInput()
        guest.closeInput()
        #expect(try await guest.waitForExit() == 0)
        #expect(try await host.waitForExit() == 0)
        let schema = try EventSchema.load()
        for line in host.stdoutLines + guest.stdoutLines {
            #expect(schema.violations(of: line).isEmpty, "\(line): \(schema.violations(of: line))")
        }
    }

    @Test("A wrong TURN password is a turn event with the error, and the host still hosts")
    func wrongPassword() async throws {
        try #require(Coturn.isInstalled, "coturn is not installed: run make deps")
        let coturn = try Coturn()
        defer { coturn.stop() }
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let (host, ticket) = try await cluster.host(
            "host", extra: ["--turn", "\(Coturn.username):wrong@127.0.0.1:\(coturn.port)"])
        let allocation = try await host.waitForEvent("turn", within: 5)
        #expect(try EventSchema.load().violations(of: host.stdoutLines.first { $0.contains("\"turn\"") } ?? "").isEmpty)
        #expect(allocation["relayed"] == "<null>")
        #expect(allocation["error"]?.contains("401") == true, "\(allocation)")
        let guest = try cluster.join(ticket, as: "guest")
        try await guest.waitForEvent("joined", within: 20)
        host.closeInput()
        guest.closeInput()
        #expect(try await guest.waitForExit() == 0)
    }

    @Test(
        "A host on coturn over TCP only: the turn event says tcp, the ticket names the relayed address, a joiner gets in"
    )
    func hostOverTCP() async throws {
        try #require(Coturn.isInstalled, "coturn is not installed: run make deps")
        let coturn = try Coturn(tcp: true)
        defer { coturn.stop() }
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let turn = "\(Coturn.username):\(Coturn.password)@127.0.0.1:\(coturn.port)?transport=tcp"
        let (host, ticket) = try await cluster.host("host", extra: ["--turn", turn])
        let allocation = try await host.waitForEvent("turn", within: 5)
        let relayed = try #require(allocation["relayed"], "no allocation: \(allocation); coturn logged:\n\(coturn.log)")
        #expect(allocation["transport"] == "tcp" && allocation["standby"] == "false")
        #expect(try Invitation(parsing: ticket).members.first.map { "\($0.address)" } == relayed)

        // The ticket names the host only at its relayed address: the guest's join goes through coturn, which
        // hands it to the host over the TCP connection.
        let guest = try cluster.join(ticket, as: "guest")
        try await guest.waitForEvent("joined", within: 20)
        try host.send("over tcp")
        try guest.send("back")
        try await guest.waitForEvent("message", ["text": "over tcp"], within: 10)
        try await host.waitForEvent("message", ["text": "back"], within: 10)
        host.closeInput()
        guest.closeInput()
        #expect(try await guest.waitForExit() == 0)
        #expect(try await host.waitForExit() == 0)
        let schema = try EventSchema.load()
        for line in host.stdoutLines { #expect(schema.violations(of: line).isEmpty, "\(line)") }
    }

    @Test(
        "A UDP TURN server that never answers: the TCP one given with it allocates after 2 s, and the ticket names it")
    func fallbackToTCP() async throws {
        try #require(Coturn.isInstalled, "coturn is not installed: run make deps")
        let coturn = try Coturn(tcp: true)
        defer { coturn.stop() }
        // A UDP port nobody listens on: what a network that drops UDP looks like from the node.
        let silent = try LoopbackUDPSocket().port
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let credentials = "\(Coturn.username):\(Coturn.password)"
        let started = ContinuousClock.now
        let (host, ticket) = try await cluster.host(
            "host",
            extra: [
                "--turn", "\(credentials)@127.0.0.1:\(silent)", "--turn",
                "\(credentials)@127.0.0.1:\(coturn.port)?transport=tcp",
            ])
        let overTCP = try await host.waitForEvent("turn", ["transport": "tcp"], within: 5)
        let overUDP = try await host.waitForEvent("turn", ["transport": "udp"], within: 5)
        let relayed = try #require(overTCP["relayed"], "no allocation: \(overTCP); coturn logged:\n\(coturn.log)")
        #expect(overUDP["relayed"] == "<null>" && overUDP["error"] == "no answer yet")
        #expect(ContinuousClock.now - started < .seconds(6))
        #expect(try Invitation(parsing: ticket).members.first.map { "\($0.address)" } == relayed)

        let guest = try cluster.join(ticket, as: "guest")
        try await guest.waitForEvent("joined", within: 20)
        try guest.send("through the fallback")
        try await host.waitForEvent("message", ["text": "through the fallback"], within: 10)
        host.closeInput()
        guest.closeInput()
        #expect(try await guest.waitForExit() == 0)
        #expect(try await host.waitForExit() == 0)
    }
}
